"""Code fences → Pygments HTML, and formulas → MathML (:mod:`builder.render.mathml`), remembered by (language, code).

Lexing is most of what a code-heavy note costs, and notes repeat code (kemt-wiki keeps copies of
whole courses under ``predmety/``). Each highlighted block is remembered for the process; a big
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
from pathlib import Path
from typing import Any

from builder.atomic import write_atomic
from builder.render.output import CACHE_DIR
_MAGIC = b"notes-portal highlighted code\n"  # then marshal data

_LEXERS: dict[str, Any] = {}
_ALIASES: dict[str, str] = {}
_FORMATTER: Any = None
_MEMO: dict[str, str] = {}  # key → highlighted block, for this process
_USED: list[str] = []  # keys asked for since the last take_used()
_NEW: dict[str, str] = {}  # blocks highlighted since the last take_new()
_STORE: list[Path] = []  # a stored file to read on the first block not remembered (see use())


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


def load_blocks(path: Path) -> None:
    """Remember the blocks stored in ``path`` (none when it is missing or unreadable)."""
    _MEMO.update(stored(path))


def use(path: Path) -> None:
    """Like :func:`load_blocks`, but only when a block is not remembered: a small render (one edited note)
    mostly meets code it highlighted before, and then it never imports Pygments' lexers."""
    _STORE[:] = [path]


def remember_blocks(blocks: dict[str, str]) -> None:
    """Remember blocks highlighted elsewhere (by a worker process)."""
    _MEMO.update(blocks)


def save_blocks(path: Path, keys: Iterable[str]) -> None:
    """Store the remembered blocks among ``keys`` in ``path``; drop other versions' files."""
    blocks = {key: _MEMO[key] for key in sorted(set(keys)) if key in _MEMO}
    try:
        write_atomic(path, _MAGIC + marshal.dumps(blocks))
        for other in path.parent.glob("highlight-*"):
            if other != path:
                other.unlink()
    except OSError:
        pass  # only a cache: the pages are right either way


def take_used() -> tuple[str, ...]:
    """The keys of the blocks asked for since the last call (each once, in order); starts afresh."""
    keys = tuple(dict.fromkeys(_USED))
    _USED.clear()
    return keys


def take_new() -> dict[str, str]:
    """The blocks highlighted (not remembered) since the last call; starts afresh."""
    blocks = dict(_NEW)
    _NEW.clear()
    return blocks


def _lexer_name(lang: str) -> str | None:
    """The built-in Pygments lexer for a fence's language, or None (no plugin scan: that costs
    ~50 ms per unknown name, and fences say things like ``mermaid`` or ``output``)."""
    if not _ALIASES:
        from pygments.lexers._mapping import LEXERS

        _ALIASES.update({alias: name for _, name, aliases, _, _ in LEXERS.values() for alias in aliases})
    return _ALIASES.get(lang.lower())


def _lexer(name: str) -> Any:
    # made only when a block is not remembered: compiling a lexer's rules costs up to ~20 ms
    if name not in _LEXERS:
        from pygments.lexers import find_lexer_class

        _LEXERS[name] = find_lexer_class(name)()
    return _LEXERS[name]


def highlight_code(code: str, lang: str, attrs: str) -> str:
    """A Pygments-highlighted ``<pre>``; ``""`` (plain, escaped by markdown-it) for unknown languages."""

    def make() -> str | None:
        name = _lexer_name(lang)
        return None if name is None else _highlight(code, _lexer(name), lang)

    return remembered(lang, code, make) or ""


def remembered(lang: str, code: str, make: Callable[[], str | None]) -> str | None:
    """The block ``make()`` makes of ``code`` in ``lang``, remembered (and stored: see the module) by the two;
    a None is neither (nothing to remember)."""
    key = hashlib.blake2b(f"{lang}\0{code}".encode(), digest_size=16).hexdigest()
    block = _MEMO.get(key)
    if block is None and _STORE:
        load_blocks(_STORE.pop())
        block = _MEMO.get(key)
    if block is None:
        made = make()
        if made is None:
            return None
        block = _MEMO[key] = _NEW[key] = made
    _USED.append(key)
    return block


def _highlight(code: str, lexer: Any, lang: str) -> str:
    global _FORMATTER
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    _FORMATTER = _FORMATTER or HtmlFormatter(nowrap=True)
    body = highlight(code, lexer, _FORMATTER)
    return f'<pre class="highlight"><code class="language-{html.escape(lang)}">{body}</code></pre>'
