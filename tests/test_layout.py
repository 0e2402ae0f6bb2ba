"""The code's layout stays readable: no import circles, no two modules of one name in corrector/, small files."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("corrector", "service", "training", "benchmarks")
MAX_LINES = 500


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``path`` imports anywhere in its body (functions included): a lazy import
    still closes a circle a reader has to follow. Relative imports are resolved, and a module named in a string to
    ``importlib.import_module`` counts as imported."""
    module = _module(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            names = [target] + [f"{target}.{a.name}" for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"):
            names = [node.args[0].value]
        found |= {n for n in names if n in known}
    return found


def import_graph(packages=PACKAGES) -> dict[str, set[str]]:
    files = [p for pkg in packages for p in (ROOT / pkg).rglob("*.py")]
    known = {_module(p) for p in files}
    graph = {_module(p): _imports(p, known) for p in files}
    for name, deps in graph.items():  # importing a.b.c imports a.b's __init__: not an edge a reader follows
        graph[name] = {d for d in deps if not name.startswith(d + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_reads_relative_imports_and_imports_by_name(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("import importlib\ndef f():\n    importlib.import_module('pkg.a')\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    graph = import_graph(("pkg",))
    assert "pkg.sub.b" in graph["pkg.a"] and graph["pkg.sub.b"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b"]]


def test_no_import_circles_in_the_whole_house():
    assert cycles(import_graph()) == []


LAYERS = ("corrector", "service", "training", "benchmarks")  # each may import only those before it


def test_every_import_points_down():
    """corrector imports none of the others (the service registers ``serve`` as an entry point instead), the service
    only corrector, training corrector and service, benchmarks any."""
    graph = import_graph()
    upward = {(m, d) for m, deps in graph.items() for d in deps
              if LAYERS.index(d.split(".")[0]) > LAYERS.index(m.split(".")[0])}
    assert upward == set()


def test_no_two_modules_in_corrector_share_a_name():
    names = Counter(p.stem for p in (ROOT / "corrector").rglob("*.py") if p.stem not in {"__init__", "__main__"})
    packages = Counter(p.name for p in (ROOT / "corrector").rglob("*") if p.is_dir() and p.name != "__pycache__")
    assert [n for n, c in (names + packages).items() if c > 1] == []


def test_no_source_file_is_over_500_lines():
    long = {str(p.relative_to(ROOT)): n for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
