"""Shared pure code, imported by both the write path (``builder``) and the read path (``server``).

Configuration, errors, slugs and URLs, secrets kept out of what is printed (``redact``), clock helpers,
the index store (all of its SQL and its identity check), the embedding providers, the page templates,
and the machinery both the build and the renderer run on: writing a file whole or not at all (``atomic``), the fork pool
(``forkpool``), ``log/sync.log`` (``synclog``), how Python children are started (``interpreter``) and
the installed version (``package``).
Nothing here imports the notes layer (:mod:`builder.notes`), build orchestration, the renderer or the
server.
"""
