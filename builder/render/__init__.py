"""The static portal: note pages, per-source tables of contents, tag pages, home, search, 404, sitemap.

Its modules, by what they hold:

- running a render: :mod:`.site` (``render_site``, the full render), :mod:`.delta` (a few edited notes'
  pages from what the last render remembered), :mod:`.stamp` (is the site stale? answered without
  importing Jinja2 or markdown-it), :mod:`.manifest` (the manifest's entries and what changed since the
  last render), :mod:`.notepages` (note bodies and note pages, in forked workers when there are many)
  and :mod:`.output` (the site folder: atomic writes, the journal, copies, removals);
- a note turned into HTML: :mod:`.markdown` with :mod:`.links`, :mod:`.callouts`, :mod:`.diagrams`,
  :mod:`.highlight` and :mod:`.mathml`; :mod:`.bodycache` keeps bodies for the next big render;
- the pages that show many notes: :mod:`.pages` (the data behind each page), :mod:`.toc`, :mod:`.tree`,
  :mod:`.graph` and :mod:`.drawing` (the link pictures).

Where a page lives is :mod:`builder.core.urls`, shared with the server.
"""
