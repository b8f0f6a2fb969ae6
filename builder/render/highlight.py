"""Code fences → Pygments HTML, and formulas → MathML (:mod:`builder.render.mathml`), remembered by (language, code).

Lexing is most of what a code-heavy note costs, and notes repeat code (kemt-wiki keeps copies of
whole courses under ``predmety/``). Each highlighted block is remembered for the render (:class:`CodeBlocks`); a big
render (a ``--full`` one, new templates, a swapped index) also starts from the blocks stored in
``<site>/.render-cache/highlight-<version>`` and stores the blocks its notes use when it is
done, so it highlights only code it has not seen before; a small render (an edited note) reads that
file only when it meets a block it does not remember. Formulas are kept the same way (their "language" starts
with a NUL, which no fence's can hold), so the one-note build of a note whose formulas did not change never
imports latex2mathml. ``<version>`` changes with Pygments, latex2mathml, this file and mathml.py: the output
depends on nothing else besides (language, code). One file, read and written whole (a file per block would
cost about as much as highlighting it), in marshal's format (a dict of str), which reads faster than JSON;
the figures are in docs/BENCHMARKS.md ("What the render keeps between runs").
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import marshal
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from builder.core.atomic import write_atomic
from builder.render.output import CACHE_DIR

_MAGIC = b"notes-portal highlighted code\n"  # then marshal data


def blocks_file(site: Path) -> Path:
    """The file of highlighted blocks for this Pygments and this module, inside ``site``."""
    import pygments

    here = Path(__file__)
    digest = hashlib.sha256(b"\0".join([pygments.__version__.encode(), here.read_bytes(),
                                         here.with_name("mathml.py").read_bytes(),
                                         installed_version("latex2mathml").encode()]))
    return site / CACHE_DIR / f"highlight-{digest.hexdigest()[:12]}"


def installed_version(package: str) -> str:
    """The installed distribution of ``package`` (its dist-info folder's name) without importing it, nor
    importlib.metadata (~90 ms the first time: the renders that ask must stay cheap)."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return "missing"
    folder = Path(spec.origin).parent
    found = sorted(folder.parent.glob(f"{package}-*.dist-info"))
    return found[-1].name if found else str(folder)


def stored(path: Path) -> dict[str, str]:
    """The blocks stored in ``path`` (none when it is missing, unreadable or not ours)."""
    try:
        raw = path.read_bytes()
        found = marshal.loads(raw[len(_MAGIC):]) if raw.startswith(_MAGIC) else None
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(found, dict) else {}


class CodeBlocks:
    """The highlighted code blocks and formulas of one render, by key (a digest of language and code):
    those remembered, those asked for since :meth:`take_used`, those made since :meth:`take_new`, and a
    stored file to read on the first block not remembered (:meth:`use`). A render makes one and hands it
    to every note body it renders (:class:`builder.render.notepages.Context`); a forked worker works on
    its own copy and sends the blocks it made back with each body (:meth:`remember`)."""

    def __init__(self) -> None:
        self.memo: dict[str, str] = {}
        self.used: list[str] = []
        self.new: dict[str, str] = {}
        self.store: Path | None = None

    def load(self, path: Path) -> None:
        """Remember the blocks stored in ``path`` (none when it is missing or unreadable)."""
        self.memo.update(stored(path))

    def use(self, path: Path) -> None:
        """Like :meth:`load`, but only when a block is not remembered: a small render (one edited note)
        mostly meets code it highlighted before, and then it never imports Pygments' lexers."""
        self.store = path

    def remember(self, blocks: dict[str, str]) -> None:
        """Remember blocks highlighted elsewhere (by a worker process)."""
        self.memo.update(blocks)

    def save(self, path: Path, keys: Iterable[str]) -> None:
        """Store the remembered blocks among ``keys`` in ``path``; drop other versions' files."""
        blocks = {key: self.memo[key] for key in sorted(set(keys)) if key in self.memo}
        try:
            write_atomic(path, _MAGIC + marshal.dumps(blocks))
            for other in path.parent.glob("highlight-*"):
                if other != path:
                    other.unlink()
        except OSError:
            pass  # only a cache: the pages are right either way

    def take_used(self) -> tuple[str, ...]:
        """The keys of the blocks asked for since the last call (each once, in order); starts afresh."""
        keys = tuple(dict.fromkeys(self.used))
        self.used.clear()
        return keys

    def take_new(self) -> dict[str, str]:
        """The blocks highlighted (not remembered) since the last call; starts afresh."""
        blocks = dict(self.new)
        self.new.clear()
        return blocks

    def highlight_code(self, code: str, lang: str, attrs: str) -> str:
        """A Pygments-highlighted ``<pre>``; ``""`` (plain, escaped by markdown-it) for unknown languages."""

        def make() -> str | None:
            name = _lexer_name(lang)
            return None if name is None else _highlight(code, _lexer(name), lang)

        return self.remembered(lang, code, make) or ""

    def remembered(self, lang: str, code: str, make: Callable[[], str | None]) -> str | None:
        """The block ``make()`` makes of ``code`` in ``lang``, remembered (and stored: see the module) by the
        two; a None is neither (nothing to remember)."""
        key = hashlib.blake2b(f"{lang}\0{code}".encode(), digest_size=16).hexdigest()
        block = self.memo.get(key)
        if block is None and self.store is not None:
            path, self.store = self.store, None
            self.load(path)
            block = self.memo.get(key)
        if block is None:
            made = make()
            if made is None:
                return None
            block = self.memo[key] = self.new[key] = made
        self.used.append(key)
        return block


@cache
def _aliases() -> dict[str, str]:
    """Every built-in Pygments lexer's aliases → its name (no plugin scan: that costs ~50 ms per unknown
    name, and fences say things like ``mermaid`` or ``output``)."""
    from pygments.lexers._mapping import LEXERS

    return {alias: name for _, name, aliases, _, _ in LEXERS.values() for alias in aliases}


def _lexer_name(lang: str) -> str | None:
    """The built-in Pygments lexer for a fence's language, or None."""
    return _aliases().get(lang.lower())


@cache
def _lexer(name: str) -> Any:
    # made only when a block is not remembered: compiling a lexer's rules costs up to ~20 ms
    from pygments.lexers import find_lexer_class

    return find_lexer_class(name)()


@cache
def _formatter() -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(nowrap=True)


def _highlight(code: str, lexer: Any, lang: str) -> str:
    from pygments import highlight

    body = highlight(code, lexer, _formatter())
    return f'<pre class="highlight"><code class="language-{html.escape(lang)}">{body}</code></pre>'
