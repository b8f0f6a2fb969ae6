"""Shared pure code, imported by both the write path (``builder``) and the read path (``server``).

Configuration, errors, slugs and URLs, clock helpers, the index store (all of its
SQL and its identity check), the embedding providers and the page templates. Nothing here imports build orchestration,
the renderer or the server.
"""
