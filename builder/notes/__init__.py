"""The notes on disk, one layer below the build, the renderer and the read path.

What a note is and which notes a source holds, for every reader: :mod:`.sources` (the scope rules,
``Scope`` and ``matches``, and the folder walk), :mod:`.listings` (the folder listings a no-op build
keeps), :mod:`.parse` (markdown to a ``Note``: title, tags, headings, links), :mod:`.publication`
(front matter and the one decision whether a note is published) and :mod:`.grep` (live grep over a
source's files, within its scope) and :mod:`.notefile` (one note read from disk, only inside its source's
scope and only when it is published).

It imports only :mod:`builder.core` and itself: never build orchestration, the renderer, the server
or the CLI, so each of them can ask it the same questions and get the same answers.
"""
