"""The package's shape (docs/architecture.md §7): no import circle, lazy imports inside functions included."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "memkit"


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for p in root.rglob("*.py"):
        name = ".".join(p.relative_to(root.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The line numbers of imports under ``if TYPE_CHECKING:`` (annotations only: never run)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            lines |= {n.lineno for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return lines


def imports(root: Path = ROOT, type_only: bool = False) -> dict[str, set[str]]:
    """Which memkit modules each memkit module imports, at its top or inside a function (with ``type_only``,
    under ``if TYPE_CHECKING:`` too)."""
    mods = _modules(root)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        package = m if path.name == "__init__.py" else m.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        skip = set() if type_only else _type_checking_only(tree)
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:  # a module of the package, or a name the package (module) defines
                    t = f"{target}.{alias.name}" if f"{target}.{alias.name}" in mods else target
                    if t in mods and t != m:
                        edges[m].add(t)
            elif isinstance(node, ast.Import):
                edges[m] |= {a.name for a in node.names if a.name in mods}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_module_of_memkit_imports_itself_through_others():
    edges = imports()
    assert len(edges) > 50 and "memkit.read.pipeline" in edges["memkit.memory"]  # the scan sees the package
    assert circles(edges) == []


def test_the_circle_check_finds_a_circle(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .a import x\n")  # a lazy import still closes the circle
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n")
    assert circles(imports(pkg)) == [["pkg.a", "pkg.b"]]


def room_order() -> list[str]:
    """The rooms, lowest first, as docs/architecture.md §7 writes them (its ``rooms:`` line)."""
    line = next(x for x in (ROOT.parent / "docs" / "architecture.md").read_text().splitlines() if x.startswith("rooms:"))
    return [r.strip().strip("`") for r in line.removeprefix("rooms:").split("→")]


def against(edges: dict[str, set[str]], order: list[str]) -> list[str]:
    """The imports from a room to a later one (a module's room: its subpackage, else its own name)."""
    def room(m: str) -> str:
        return m.split(".")[1] if "." in m else m

    return sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs if order.index(room(a)) < order.index(room(b)))


def test_imports_point_one_way_down_the_rooms_order_that_the_architecture_writes():
    order = room_order()
    edges = imports(type_only=True)
    rooms = {m.split(".")[1] if "." in m else m for m in edges}
    assert rooms == set(order), rooms ^ set(order)  # every room placed, none invented
    assert against(edges, order) == []


def test_the_direction_check_finds_an_upward_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..high import x\n")
    (pkg / "high.py").write_text("from .low import a\n")
    assert against(imports(pkg, type_only=True), ["low", "high", "pkg"]) == ["pkg.low.a -> pkg.high"]


@pytest.mark.parametrize("limit", [400])
def test_no_module_over_its_size(limit):
    assert {p.name: n for p in ROOT.rglob("*.py") if (n := len(p.read_text().splitlines())) > limit} == {}


@pytest.mark.parametrize("limit", [300])
def test_no_class_over_its_size(limit):
    sizes = {f"{p.name}:{n.name}": n.end_lineno - n.lineno + 1 for p in ROOT.rglob("*.py")
             for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, ast.ClassDef)}
    assert len(sizes) > 40 and {c: n for c, n in sizes.items() if n > limit} == {}


def test_a_module_that_moved_into_a_room_answers_at_its_old_path_for_now():
    import importlib
    import sys

    import memkit
    from memkit.read import recall

    for name in ("recall", "viz"):  # as in a fresh process, whatever ran before
        sys.modules.pop(f"memkit.{name}", None)
        vars(memkit).pop(name, None)
    with pytest.warns(DeprecationWarning, match="memkit.recall moved to memkit.read.recall"):
        old = importlib.import_module("memkit.recall")
    assert old is recall and old.RecallOptions is recall.RecallOptions  # one module: a patch of either is both's
    with pytest.warns(DeprecationWarning, match="memkit.viz moved to memkit.lab.viz"):
        from memkit import viz  # noqa: F401
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("memkit.no_such_module")


@pytest.mark.parametrize("old, new", [("memkit.read.passages", "memkit.store.passages"),
                                      ("memkit.models.embed_cache", "memkit.store.embed_cache"),
                                      ("memkit.models.llm_check", "memkit.write.llm_check"),
                                      ("memkit.lab.sweep", "memkit.eval.sweep"),
                                      ("memkit.store.episodes", "memkit.store.archive"),
                                      ("memkit.lexicon", "memkit.store.lexicon"), ("memkit.log", "memkit.store.log")])
def test_a_module_that_changed_rooms_answers_at_each_old_path_and_reloads(old, new):
    import subprocess
    import sys

    # in a process of its own: a reload makes new classes, which other tests' imports would not be
    script = (f"import importlib, sys, warnings\n"
              f"with warnings.catch_warnings(record=True) as w:\n"
              f"    warnings.simplefilter('always')\n"
              f"    module = importlib.import_module({old!r})\n"
              f"assert any('{old} moved to {new}' in str(x.message) for x in w), w\n"
              f"assert module is importlib.import_module({new!r}) and module.__spec__.name == {new!r}\n"
              # Jupyter's %autoreload reloads what sys.modules holds: the module stays itself, relative imports work
              f"assert importlib.reload(module) is sys.modules[{new!r}]\n"
              f"assert (module.__spec__.name, module.__package__) == ({new!r}, {new.rpartition('.')[0]!r})\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_chroma_server_answers_at_its_old_path():
    from memkit.store import server

    with pytest.warns(DeprecationWarning, match="moved to memkit.store.server"):
        from memkit.models.server import ChromaServer
    assert ChromaServer is server.ChromaServer


@pytest.mark.parametrize("limit", [60])
def test_no_function_over_its_size(limit):
    """A function a reader can hold at once: over 60 lines, it is split into its steps (classes and modules have
    their own limits above)."""
    sizes = {f"{p.relative_to(ROOT)}:{n.name}": n.end_lineno - n.lineno + 1 for p in ROOT.rglob("*.py")
             for n in ast.walk(ast.parse(p.read_text())) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert len(sizes) > 500 and {f: n for f, n in sizes.items() if n > limit} == {}


def test_the_environment_is_read_only_in_config_and_the_default_embedder_written_once():
    import re

    readers = {str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
               if re.search(r"os\.environ|os\.getenv|environ\.get", p.read_text())}
    assert readers == {"config.py"}
    writes = sum(p.read_text().count('"minilm"') for p in ROOT.rglob("*.py"))
    assert writes == 2  # registry.DEFAULT_EMBEDDER and its registration in models/embed.py
