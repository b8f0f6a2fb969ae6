"""How many broken links the site lists, per source, read from the last render's manifest (shown by
``notes-portal status``; the site's own ``broken-links.html`` lists each one with its line)."""

from __future__ import annotations

from pathlib import Path

from builder.render.output import load_manifest


def broken_link_counts(site: Path) -> dict[str, int] | None:
    """Source id → the number of broken links in its notes as of the last complete render (sources
    without any are left out); None when the site has not been rendered (by this version) yet."""
    manifest = load_manifest(site)
    if not manifest:
        return None
    counts: dict[str, int] = {}
    for key, entry in manifest.get("notes", {}).items():
        broken = entry.get("broken") if isinstance(entry, dict) else None
        if broken:
            source_id = key.partition(":")[0]
            counts[source_id] = counts.get(source_id, 0) + len(broken)
    return counts
