"""notes-portal read path: hybrid search, the answer check and the Starlette web app that serves the built
site. It reads the index, and the notes on disk through :mod:`builder.notes`; it never imports the build, the
renderer or the CLI (tests/test_architecture.py). :mod:`.read_commands` is the read commands' data, which the
CLI prints and the MCP tools return."""
