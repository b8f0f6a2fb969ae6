"""notes-portal read path: hybrid search, asking the notes, the read commands, the MCP server and the Starlette
web app that serves the built site. It reads the index, and the notes on disk through :mod:`builder.notes`; it
never imports the build, the renderer or the CLI (tests/test_architecture.py).

Its modules, by what they hold:

- search: :mod:`.search` (hybrid search: BM25 and KNN over chunks, fused, grouped by note) with :mod:`.query`
  (a query's words), :mod:`.translate` (English words searched in Czech), :mod:`.spelling` (typos),
  :mod:`.fusion` (the two rankings merged, a weak answer decided) and :mod:`.snippets`; a long-lived
  server's search is :mod:`.engine` (``Searcher``) over :mod:`.reader` (pooled read-only connections),
  :mod:`.embedder` (the query's vector on its own thread) and :mod:`.vectors` (the vectors in memory);
- asking the notes: :mod:`.answer` (the pipeline), :mod:`.chat` (the answer providers) and the check every
  answer passes: :mod:`.verify`, :mod:`.claims`, :mod:`.lexicon`, :mod:`.passage_text`, :mod:`.wordforms`,
  :mod:`.evidence`;
- the read commands' data, which the CLI prints and the MCP tools return: :mod:`.read_commands` and
  :mod:`.status`; the MCP server: :mod:`.mcp_tools` (the tools as data), :mod:`.mcp` (the SDK: stdio and
  Streamable HTTP; the only module that imports it) and :mod:`.mcp_http` (``/mcp`` in the web app, which
  loads :mod:`.mcp` on the first MCP request);
- the web app: :mod:`.app` (``create_app``), :mod:`.site_files` (the built site), :mod:`.live_pages`
  (``/search`` and ``/auth``), :mod:`.auth` (the API key), :mod:`.health`, and the webhooks and sync API,
  :mod:`.hooks` and :mod:`.sync_api`, which queue jobs through the :mod:`.desk` the CLI injects.
"""
