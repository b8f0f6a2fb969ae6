"""The static portal: note pages, per-source tables of contents, tag pages, home, search, 404, sitemap.

:mod:`.site` runs a render (``render_site``); :mod:`.stamp` tells the every-minute build whether
the site is stale without importing Jinja2 or markdown-it; :mod:`.pages` holds the data behind each
page, :mod:`.markdown` turns a note into HTML with :mod:`.links` and :mod:`.highlight`,
:mod:`.jobs` spreads the per-note work over worker processes, :mod:`.state` decides what changed
since the last render and :mod:`.output` writes the site folder. Where a page lives is
:mod:`builder.core.urls`, shared with the server.
"""
