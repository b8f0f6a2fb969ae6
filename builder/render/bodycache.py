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

import contextlib
import hashlib
import marshal
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from builder.core.index.bodystore import close_reader, read_body, write_bodies
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
    return hashlib.sha256(f"{note.sha256}\0{note.url}\0".encode() + note.headings_json).hexdigest()


def lookup(path: Path, note: NoteInfo, resolve: Callable[[str, str], Link]) -> tuple[Body, tuple[str, ...]] | None:
    """The body kept for ``note`` when its links (``resolve(kind, raw)``) render as it shows them, with
    the keys of its highlighted code blocks; else None."""
    from builder.render.markdown import same_body

    wanted = key(note)
    data = read_body(path, wanted)
    found = _from_record(data) if data is not None else None
    if found is None or found[0] != wanted:
        return None
    _, body, code = found
    now = same_body(body, note.url, note.url, tuple(resolve(kind, raw) for kind, raw in body.links))
    return (now, code) if now is not None else None


def save(path: Path, made: Callable[[], Iterable[tuple[str, Body, tuple[str, ...]]]], keep: set[str] | None) -> None:
    """Keep the bodies ``made()`` yields (key, body, the keys of its code blocks: called once or twice, so that
    they need not all be in memory); with ``keep``, forget every other key (a render that saw every note); drop
    other versions' files."""
    if write_bodies(path, lambda: ((k, _body_record(k, body, code)) for k, body, code in made()), keep):
        for other in path.parent.glob("bodies-*.sqlite"):
            if other != path:
                other.unlink(missing_ok=True)


def _body_record(name: str, body: Body, code: tuple[str, ...]) -> bytes:
    """One body as the files of this module keep it (:data:`BODY_FORMAT`), under ``name``."""
    return marshal.dumps((name, body.html, [list(link) for link in body.links], [r.as_list() for r in body.results],
                          [list(at) for at in body.lines], list(code), body.lang, body.summary))


def _from_record(data: bytes) -> tuple[str, Body, tuple[str, ...]] | None:
    """A :func:`_body_record` read back: (its name, the body, its code blocks' keys); None for a damaged one."""
    from builder.render.links import Link
    from builder.render.markdown import Body

    try:
        name, html, links, results, lines, code, lang, summary = marshal.loads(data)
        body = Body(html, tuple((kind, raw) for kind, raw in links), tuple(Link(*r) for r in results),
                    tuple(tuple(at) for at in lines), str(lang), str(summary))
        if not isinstance(html, str) or len(body.results) != len(body.links):
            return None  # a damaged file
        return str(name), body, tuple(str(block) for block in code)
    except (ValueError, EOFError, TypeError):  # not ours
        return None


# A render of at least this many bodies keeps them on disk (:class:`Spill`) rather than in memory: 100,000 notes
# held 2 GB of their HTML.
SPILL_MIN = 20_000
SPILL_BATCH = 1_000  # bodies written to the spill at once
SPILLED = "\x00spilled\x00"  # a body's HTML while it is in the spill (no sanitised HTML holds a NUL)


class Spill:
    """One big render's note bodies, on disk while the render runs (``.render-cache/spill.sqlite``, made empty at
    the start and removed at the end): the render process hands over bodies in batches and, once a batch is
    written, keeps of each only what its page needs besides its HTML (:func:`spilled`); the page workers read the
    HTML back by the note's key, the render's end the whole body (for the bodies kept between renders). A batch
    the file could not take stays in memory, and nothing more is spilled: the spill saves memory, never a page."""

    def __init__(self, site: Path) -> None:
        self.path = site / CACHE_DIR / "spill.sqlite"
        self.failed = False
        self.remove()  # a killed render's

    def write(self, batch: list[tuple[str, Body, tuple[str, ...]]]) -> bool:
        """Write ``batch`` ((note key, body, its code blocks' keys), …); True when it is on disk, False when it
        stays in memory."""
        if self.failed or not batch:
            return False
        rows = [(key, _body_record(key, body, code)) for key, body, code in batch]
        self.failed = not write_bodies(self.path, lambda: rows, None)
        return not self.failed

    def body(self, key: str) -> tuple[Body, tuple[str, ...]] | None:
        """The body written under the note ``key`` and its code blocks' keys, or None."""
        data = read_body(self.path, key)
        found = _from_record(data) if data is not None else None
        return found[1:] if found is not None and found[0] == key else None

    def remove(self) -> None:
        close_reader()
        with contextlib.suppress(OSError):  # (not a file: then nothing is spilled, see write)
            self.path.unlink(missing_ok=True)


def spilled(body: Body) -> Body:
    """What a render keeps in memory of a body in the spill: its language and summary (its page shows them);
    most notes have neither, and share one."""
    from builder.render.markdown import Body

    return _bare_spilled() if not body.lang and not body.summary else Body(SPILLED, (), (), (), body.lang, body.summary)


@cache
def _bare_spilled() -> Body:
    """The one body in the spill without a language or summary (a frozen Body: shared by every such note)."""
    from builder.render.markdown import Body

    return Body(SPILLED, (), ())


def spilled_html(path: Path, key: str) -> str | None:
    """The HTML a :class:`Spill` at ``path`` holds for the note ``key`` (read in a page worker), or None."""
    data = read_body(path, key)
    found = _from_record(data) if data is not None else None
    return found[1].html if found is not None and found[0] == key else None
