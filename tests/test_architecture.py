"""The layers the folders show, checked on the source's own imports (read with :mod:`ast`).

- ``builder/core/`` is shared pure code: it imports nothing else of the project;
- ``builder/notes/`` (the notes on disk: scope, walk, listings, parse, publication, grep) imports only
  ``builder/core/``: never the build, the renderer, the server or the CLI;
- ``builder/render/`` (the renderer) imports only ``builder/core/`` and ``builder/notes/``: never the
  build's modules;
- ``server/`` (the read path) imports only ``server/``, ``builder/notes/`` and ``builder/core/``: never
  build orchestration, the renderer or git;
- the rest of ``builder/`` (the build, the write path) never imports ``server/``;
- ``builder/cli/`` is the composition root and may import every side; no module outside it imports it;
- the MCP SDK is imported only by ``server/mcp.py``, Starlette only by ``server/`` (:data:`LIBRARY_HOMES`);
- no import cycle between modules (imports inside functions count; ``if TYPE_CHECKING:`` ones do not
  run, so they count for the layers only).

The checker is tried on small trees with a known fault first, so a checker that finds nothing
cannot pass for a clean project.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("builder", "server")
ALLOWED = {  # layer → the layers it may import
    "core": {"core"},
    "notes": {"core", "notes"},
    "render": {"core", "notes", "render"},
    "write": {"core", "notes", "render", "write"},
    "read": {"core", "notes", "read"},
    "cli": {"core", "notes", "render", "write", "read", "cli"},
}
SUBPACKAGE_LAYERS = {"builder.core": "core", "builder.notes": "notes", "builder.render": "render",
                     "builder.cli": "cli"}


def layer(module: str) -> str:
    for package, name in SUBPACKAGE_LAYERS.items():
        if module == package or module.startswith(package + "."):
            return name
    return "read" if module.split(".")[0] == "server" else "write"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    runtime: bool  # False: under ``if TYPE_CHECKING:``


def modules(root: Path) -> dict[str, Path]:
    """Every project module under ``root`` by dotted name (a package by its ``__init__``)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def edges(root: Path) -> list[Edge]:
    """Every import of one project module by another, with the line it is on."""
    known = modules(root)
    out = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        typing_only = _type_checking_lines(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                # ``from pkg import sub`` imports the submodule; ``from pkg import name`` the package
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            for target in dict.fromkeys(targets):
                while target and target not in known and "." in target:
                    target = target.rpartition(".")[0]  # ``import a.b.c`` where c is a name in a.b
                if target in known and target != name:
                    out.append(Edge(name, target, node.lineno, node.lineno not in typing_only))
    return out


def layer_violations(root: Path) -> list[str]:
    return [f"{e.source} ({layer(e.source)}) imports {e.target} ({layer(e.target)}) at line {e.line}"
            for e in edges(root) if layer(e.target) not in ALLOWED[layer(e.source)]]


def cycles(root: Path) -> list[list[str]]:
    """Strongly connected groups of modules (Tarjan) over the imports that run."""
    graph: dict[str, set[str]] = {name: set() for name in modules(root)}
    for e in edges(root):
        if e.runtime:
            graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in {"builder/__init__.py": "", "builder/core/__init__.py": "", "server/__init__.py": "",
                      **files}.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("files", "expected"), [
    ({"server/app.py": "def f():\n    from builder.sync import build\n", "builder/sync.py": ""},
     ["server.app (read) imports builder.sync (write) at line 2"]),
    ({"server/pages.py": "from builder.render import pages\n", "builder/render/__init__.py": "",
      "builder/render/pages.py": ""},
     ["server.pages (read) imports builder.render.pages (render) at line 1"]),
    ({"builder/core/index.py": "import builder.sync\n", "builder/sync.py": ""},
     ["builder.core.index (core) imports builder.sync (write) at line 1"]),
    ({"builder/sync.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from server import app\n",
      "server/app.py": ""},
     ["builder.sync (write) imports server.app (read) at line 3"]),
    ({"builder/cli/__init__.py": "from server.app import create_app\nfrom builder.sync import build\n",
      "server/app.py": "", "builder/sync.py": ""}, []),
    ({"builder/render/__init__.py": "", "builder/render/site.py": "def f():\n    from builder import synclog\n",
      "builder/synclog.py": ""},
     ["builder.render.site (render) imports builder.synclog (write) at line 2"]),
    ({"builder/notes/__init__.py": "", "builder/notes/parse.py": "from builder.render.links import x\n",
      "builder/render/__init__.py": "", "builder/render/links.py": ""},
     ["builder.notes.parse (notes) imports builder.render.links (render) at line 1"]),
    ({"builder/notes/__init__.py": "", "builder/notes/grep.py": "import server.search\n", "server/search.py": ""},
     ["builder.notes.grep (notes) imports server.search (read) at line 1"]),
    ({"builder/notes/__init__.py": "", "builder/notes/sources.py": "from builder import scan\n",
      "builder/scan.py": ""},
     ["builder.notes.sources (notes) imports builder.scan (write) at line 1"]),
    ({"builder/cli/__init__.py": "", "server/mcp.py": "from builder.cli import tools\n",
      "builder/cli/tools.py": ""},
     ["server.mcp (read) imports builder.cli.tools (cli) at line 1"]),
    ({"builder/notes/__init__.py": "", "builder/render/__init__.py": "", "builder/notes/grep.py": "",
      "builder/render/site.py": "from builder.notes.sources import Scope\nfrom builder.core import atomic\n",
      "builder/core/atomic.py": "", "builder/notes/sources.py": "",
      "server/read.py": "from builder.notes import grep\n",
      "builder/sync.py": "from builder.render import site\n"}, []),
])
def test_the_layer_check_finds_a_wrong_import(tmp_path, files, expected):
    assert layer_violations(_tree(tmp_path, files)) == expected


def test_the_cycle_check_finds_a_cycle_through_a_lazy_import(tmp_path):
    root = _tree(tmp_path, {
        "builder/sync.py": "from builder import embed_run\n",
        "builder/embed_run.py": "def f():\n    from builder.sync import now\n",
        "builder/lock.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from builder.sync import x\n",
    })
    assert cycles(root) == [["builder.embed_run", "builder.sync"]]


def test_the_project_keeps_its_layers():
    assert len(modules(ROOT)) > 40 and len(edges(ROOT)) > 100  # the checker sees the real tree
    assert layer_violations(ROOT) == []


def test_the_project_has_a_notes_layer_below_the_renderer_and_the_read_path():
    """The notes layer exists and the renderer, the build and the read path use it, so their rows in
    :data:`ALLOWED` check something."""
    found = edges(ROOT)
    assert any(layer(e.source) == "render" and layer(e.target) == "notes" for e in found)
    assert any(layer(e.source) == "write" and layer(e.target) == "notes" for e in found)
    assert any(layer(e.source) == "read" and layer(e.target) == "notes" for e in found)
    assert any(layer(e.source) == "notes" for e in found)


def cli_importers(root: Path) -> list[str]:
    """Every import of ``builder.cli`` (or a module in it) by a module outside ``builder/cli/``."""
    return [f"{e.source} imports {e.target} at line {e.line}" for e in edges(root)
            if layer(e.target) == "cli" and layer(e.source) != "cli"]


def test_the_cli_check_finds_an_import_of_the_cli(tmp_path):
    root = _tree(tmp_path, {"builder/cli/__init__.py": "", "builder/cli/tools.py": "",
                            "builder/sync.py": "def f():\n    import builder.cli.tools\n"})
    assert cli_importers(root) == ["builder.sync imports builder.cli.tools at line 2"]


def test_no_module_outside_the_cli_imports_it():
    assert cli_importers(ROOT) == []


LIBRARY_HOMES = {  # a library → the only modules (or packages) of the project that may import it
    "mcp": ("server.mcp",),  # the MCP SDK: the web app imports server.mcp on the first MCP request only
    "mcp_types": ("server.mcp",),  # the SDK's types (a distribution of their own)
    "starlette": ("server",),  # the web app is the read path's
    "uvicorn": ("server", "builder.cli"),  # the server the read path's app runs in, started by ``serve``
}


def library_imports(root: Path) -> list[tuple[str, str, int]]:
    """Every import of a library of :data:`LIBRARY_HOMES` (module, library, line); imports inside functions
    and under ``if TYPE_CHECKING:`` count too."""
    found = []
    for name, path in modules(root).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                imported = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                imported = [node.module or ""]
            else:
                continue
            found += [(name, library, node.lineno) for library in dict.fromkeys(t.split(".")[0] for t in imported)
                      if library in LIBRARY_HOMES]
    return found


def library_importers(root: Path) -> list[str]:
    """Every import of a library of :data:`LIBRARY_HOMES` by a module outside its homes."""
    return [f"{name} imports {library} at line {line}" for name, library, line in library_imports(root)
            if not any(name == home or name.startswith(home + ".") for home in LIBRARY_HOMES[library])]


def test_the_library_check_finds_a_library_out_of_its_home(tmp_path):
    root = _tree(tmp_path, {
        "builder/cli/__init__.py": "import uvicorn\n",
        "builder/cli/tools.py": "def f():\n    from mcp.server.lowlevel import Server\n",
        "server/mcp.py": "import mcp_types as types\nfrom mcp.server.stdio import stdio_server\n",
        "server/mcp_tools.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import mcp_types\n",
        "server/app.py": "from starlette.routing import Route\n",
        "builder/render/__init__.py": "", "builder/render/page.py": "from starlette import responses\n",
        "builder/sync.py": "import uvicorn, json\n",
    })
    assert sorted(library_importers(root)) == [
        "builder.cli.tools imports mcp at line 2", "builder.render.page imports starlette at line 1",
        "builder.sync imports uvicorn at line 1", "server.mcp_tools imports mcp_types at line 3"]


def test_the_mcp_sdk_and_the_web_stack_stay_in_their_modules():
    """The MCP SDK only in :mod:`server.mcp`, Starlette only in ``server/``: the CLI and the build never
    load them, and the web app loads the SDK only when a client first calls ``/mcp``."""
    found = library_imports(ROOT)
    assert {library for name, library, _ in found if name == "server.mcp"} == {"mcp", "mcp_types", "starlette"}
    assert sum(library == "starlette" for _, library, _ in found) > 5  # the checker sees the real imports
    assert library_importers(ROOT) == []


def test_the_project_has_no_import_cycle():
    assert cycles(ROOT) == []


def test_no_test_module_imports_another():
    """Shared test helpers live in conftest.py and the support modules (tests/*_support.py, realmodel.py):
    importing a test module would run its fixtures' module-level code twice and tie two files together."""
    found = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}:{node.lineno} {name}" for name in names if name.startswith("tests.test_")]
    assert found == []


def test_one_name_per_idea():
    """No top-level name is defined in two modules of builder/ and server/ (an import alias of the same
    thing, such as ``dedent`` or ``__all__``, is not a second idea)."""
    defined: dict[str, list[str]] = {}
    for path in sorted([*(ROOT / "builder").rglob("*.py"), *(ROOT / "server").rglob("*.py")]):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [n.id for t in targets for n in (t.elts if isinstance(t, ast.Tuple) else [t])
                         if isinstance(n, ast.Name)]  # ``EXIT_OK, EXIT_PARTIAL = 0, 3`` defines two
            else:
                continue
            for name in names:
                defined.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in defined.items() if len(paths) > 1 and name not in ("__all__",)} == {}


def test_every_package_docstring_names_its_modules():
    """A package's docstring is where a newcomer starts: it lists every module the package holds (a module
    added without a word there fails here, as ``builder/render`` once named 9 of its 19)."""
    missing = {}
    packages = ("builder/render", "builder/notes", "builder/cli", "server")
    for package in packages:
        text = (ROOT / package / "__init__.py").read_text(encoding="utf-8")
        names = [p.stem for p in sorted((ROOT / package).glob("*.py")) if p.stem != "__init__"]
        missing[package] = [n for n in names if f":mod:`.{n}`" not in text]
    assert missing == dict.fromkeys(packages, [])


MAX_FUNCTION_LINES = 80  # a function a reader holds in mind; its docstring counts


def long_functions(root: Path) -> list[str]:
    """Every function of builder/ and server/ longer than :data:`MAX_FUNCTION_LINES` (nested ones too)."""
    found = []
    for path in sorted([*(root / "builder").rglob("*.py"), *(root / "server").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_the_length_check_finds_a_long_function(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    root = _tree(tmp_path, {"builder/long.py": f"def f():\n{body}", "server/short.py": "def g():\n    return 1\n"})
    assert long_functions(root) == [f"builder/long.py:1 f ({MAX_FUNCTION_LINES + 1} lines)"]


def test_no_function_passes_80_lines():
    assert long_functions(ROOT) == []
