"""notes-portal's write path: sources, parse, chunk, embed, sync and the renderer (:mod:`builder.render`); the
shared pure code both paths import is :mod:`builder.core`, the command line :mod:`builder.cli`."""
