"""The import graph of the package: no cycle, and no arrow upward (core knows nothing of Dagster, the CLI
or the web app; the Dagster layer does not import the code location that assembles it)."""

import ast
from pathlib import Path

import pytest

from finrag_pipeline.core.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "finrag_pipeline"


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO_ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, name: str) -> set[str]:
    """Every finrag_pipeline module this file imports, at module level or inside functions."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("finrag_pipeline")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base.startswith("finrag_pipeline"):
                found.add(base)
                found |= {f"{base}.{a.name}" for a in node.names}
    return found


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in _imports(path, name) if m in modules and m != name} for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def _is_package_init_edge(src: str, dst: str) -> bool:
    # A package's __init__ re-exporting its own submodules is not a dependency cycle.
    return dst.startswith(src + ".") or src.startswith(dst + ".")


def test_no_import_cycle():
    graph = import_graph()
    pruned = {s: {d for d in ds if not _is_package_init_edge(s, d)} for s, ds in graph.items()}
    assert _cycles(pruned) == []


@pytest.mark.parametrize(("layer", "forbidden"), [
    ("finrag_pipeline.core", ("finrag_pipeline.defs", "finrag_pipeline.definitions", "finrag_pipeline.cli",
                              "finrag_pipeline.web")),
    ("finrag_pipeline.defs", ("finrag_pipeline.definitions", "finrag_pipeline.cli", "finrag_pipeline.web")),
])
def test_no_upward_import(layer, forbidden):
    upward = [(s, d) for s, ds in import_graph().items() if s.startswith(layer)
              for d in ds if d.startswith(forbidden)]
    assert upward == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_core_imports_no_dagster():
    offenders = [str(p.relative_to(REPO_ROOT)) for p in (PACKAGE / "core").rglob("*.py")
                 if any(isinstance(n, (ast.Import, ast.ImportFrom)) and
                        any((getattr(n, "module", None) or "").startswith("dagster") or
                            a.name.startswith("dagster") for a in n.names)
                        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))))]
    assert offenders == []
