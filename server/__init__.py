"""notes-portal read path: hybrid search, the answer check and the Starlette web app that serves the built
site. It reads the index and never imports the build, the renderer or the sources (tests/test_architecture.py)."""
