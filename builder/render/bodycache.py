"""Note bodies kept between renders, by what their HTML is made of.

Parsing markdown is most of what a full render costs, and most full renders meet the same texts as
the one before (a ``--full`` build, edited templates, another site title: every page is written
again). A body is kept in ``<site>/.render-cache/bodies-<version>.sqlite`` under a key of what its
HTML is made of besides its links: the note's text (its sha256), its page's URL and its headings as
the index found them (their anchors). ``<version>`` names the renderer's code, the markdown
libraries and whether raw HTML is trusted. A kept body is used when each of its links still renders
as its HTML shows it (checked as for copies of a note, :func:`builder.render.markdown.same_body`),
else the note is rendered again. Only bodies of the text the index saw are kept. The file is a
cache: one that cannot be read is none, and a render that cannot write it loses only time.
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from builder.core.index.bodystore import read_body, write_bodies
from builder.render.output import CACHE_DIR

if TYPE_CHECKING:
    from builder.render.links import Link
    from builder.render.markdown import Body
    from builder.render.pages import NoteInfo

BODY_FORMAT = "3"  # a kept body: marshal of (key, html, links, results, lines, code blocks, lang, summary)


def cache_file(site: Path, code: Iterable[Path], trusted: bool, language: str = "en") -> Path:
    """The file of kept bodies for this renderer (its modules ``code``; templates do not shape a body) and the
    site's language (a broken link's tooltip is in it)."""
    import markdown_it
    import mdit_py_plugins
    import nh3
    import pygments

    from builder.render.mathml import converter_version

    versions = [BODY_FORMAT, str(trusted), language, markdown_it.__version__, mdit_py_plugins.__version__,
                pygments.__version__,
                getattr(nh3, "__version__"), converter_version()]  # noqa: B009 (nh3's stubs do not declare it)
    digest = hashlib.sha256("\0".join(versions).encode())
    for path in code:
        if path.suffix == ".py":
            data = path.read_bytes()
            digest.update(f"{path.name}\0{len(data)}\0".encode() + data)
    return site / CACHE_DIR / f"bodies-{digest.hexdigest()[:12]}.sqlite"


def key(note: NoteInfo) -> str:
    """What a note's body is made of besides its links: its text, its page and its headings."""
    return hashlib.sha256(f"{note.sha256}\0{note.url}\0{note.headings_json}".encode()).hexdigest()


def lookup(path: Path, note: NoteInfo, resolve: Callable[[str, str], Link]) -> tuple[Body, tuple[str, ...]] | None:
    """The body kept for ``note`` when its links (``resolve(kind, raw)``) render as it shows them, with
    the keys of its highlighted code blocks; else None."""
    from builder.render.links import Link
    from builder.render.markdown import Body, same_body

    wanted = key(note)
    data = read_body(path, wanted)
    if data is None:
        return None
    try:
        kept_for, html, links, results, lines, code, lang, summary = marshal.loads(data)
        body = Body(html, tuple((kind, raw) for kind, raw in links), tuple(Link(*r) for r in results),
                    tuple(tuple(at) for at in lines), str(lang), str(summary))
        if kept_for != wanted or not isinstance(html, str) or len(body.results) != len(body.links):
            return None  # a damaged file
        code = tuple(str(block) for block in code)
    except (ValueError, EOFError, TypeError):  # not ours
        return None
    now = same_body(body, note.url, note.url, tuple(resolve(kind, raw) for kind, raw in body.links))
    return (now, code) if now is not None else None


def save(path: Path, made: dict[str, tuple[Body, tuple[str, ...]]], keep: set[str] | None) -> None:
    """Keep the bodies ``made`` (key → body and the keys of its code blocks); with ``keep``, forget
    every other key (a render that saw every note); drop other versions' files."""
    def rows() -> Iterator[tuple[str, bytes]]:
        for k, (body, code) in made.items():
            yield k, marshal.dumps((k, body.html, [list(link) for link in body.links],
                                    [r.as_list() for r in body.results], [list(at) for at in body.lines], list(code),
                                    body.lang, body.summary))

    if write_bodies(path, rows, keep):
        for other in path.parent.glob("bodies-*.sqlite"):
            if other != path:
                other.unlink(missing_ok=True)
