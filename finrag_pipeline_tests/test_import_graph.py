"""The import graph of the package: no cycle, no arrow upward between the layers below, and no arrow upward
out of core (core knows nothing of Dagster, the CLI or the web app; the Dagster layer does not import the
code location that assembles it).

Every import counts: module level and inside functions alike (``ast.walk``), because an import inside a
function is still a dependency, only a later one. The one exception is an import under
``if TYPE_CHECKING:``: it never runs, so it adds no import-time dependency; a type-only name is how a lower
layer annotates an object a higher one hands it.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from finrag_pipeline.core.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "finrag_pipeline"
CORE = "finrag_pipeline.core"

# THE allowed direction between core packages (a package or top-level module under core/): each may import
# only packages of a LOWER layer, and the modules of its own. A new package fails
# test_every_core_package_has_a_layer until it is placed here. The picture: docs/ARCHITECTURE.md "Rooms".
LAYERS: dict[str, int] = {
    # 0 foundations: import nothing of finrag
    "paths": 0, "models": 0, "numbers": 0, "progress": 0, "worker_watch": 0, "quality": 0,
    "object_store_config": 0,
    # 1 the config resolver, what a question asks (units, rounding), the answerer contract, SEC registrants
    "config": 1, "asked": 1, "answering": 1, "company_map": 1,
    # 2 reading a question (kind; company and periods), clients, chunking and indexing, the deployment
    "question_kind": 2, "query_understanding": 2, "llm": 2, "chunking": 2, "indexing": 2, "deployment": 2,
    "edgar": 2,
    # 3 parsing filings; how rankings and answers are scored (metric list, response states, results views)
    "ingest": 3, "scoring": 3, "services": 3,
    # 4 the warehouse (its eval tables and views come from scoring)
    "warehouse": 4,
    # 5 warehouse rows as records; the storage seam (local or object store)
    "records": 5, "storage": 5,
    # 6 registering filings and counting completion; the analyst room (lexicon, facts, calculator)
    "catalog": 6, "completion": 6, "analyst": 6,
    # 7 retrieval (reads the analyst's lexicon and plans), QA generation (the analyst's facts), the inbox
    "retrieval": 7, "qa": 7, "inbox": 7,
    # 8 evaluation (answerers, runner, leaderboards: scores retrieval and answers on QA sets), chunking variants
    "evaluation": 8, "variants": 8,
    # 9 what assembles everything: the session, the report
    "session": 9, "reporting": 9,
    # 10 filings evaluated in parallel: worker processes that each open a session
    "parallel_eval": 10,
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(REPO_ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:`` (see the module docstring for why they are left out)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skipped


def import_statements(path: Path, name: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line, imported module, imported names) of every finrag_pipeline import of a file, at module level
    or inside functions; relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("finrag_pipeline"):
                    yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            if base.startswith("finrag_pipeline"):
                yield node.lineno, base, [a.name for a in node.names]


def _imports(path: Path, name: str) -> set[str]:
    found: set[str] = set()
    for _, module, names in import_statements(path, name):
        found.add(module)
        found |= {f"{module}.{n}" for n in names}
    return found


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: {m for m in _imports(path, name) if m in modules and m != name} for name, path in modules.items()}


def core_package(module: str) -> str | None:
    """'finrag_pipeline.core.analyst.plan' -> 'analyst'; None outside core (and for core's own __init__)."""
    if not module.startswith(CORE + "."):
        return None
    return module[len(CORE) + 1:].split(".")[0]


def layer_violations(statements: dict[str, tuple[str, list[tuple[int, str, list[str]]]]],
                     layers: dict[str, int]) -> list[str]:
    """'file:line: a (layer i) imports b (layer j >= i): module' for every import between two core packages
    that does not point to a lower layer. ``statements``: module -> (file shown, its import statements)."""
    out = []
    for module, (shown, imports) in sorted(statements.items()):
        src = core_package(module)
        if src is None:
            continue
        for line, target, names in imports:
            # `from finrag_pipeline.core import numbers` imports the package `numbers`
            dsts = [core_package(f"{target}.{n}") for n in names] if target == CORE else [core_package(target)]
            for dst in dsts:
                if dst is None or dst == src or layers[dst] < layers[src]:
                    continue
                out.append(f"{shown}:{line}: {src} (layer {layers[src]}) imports {dst} (layer {layers[dst]}): "
                           f"{target}")
    return out


def _core_statements() -> dict[str, tuple[str, list[tuple[int, str, list[str]]]]]:
    return {name: (str(path.relative_to(REPO_ROOT)), list(import_statements(path, name)))
            for name, path in _modules().items() if name.startswith(CORE + ".")}


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


def test_every_core_package_has_a_layer():
    packages = {core_package(m) for m in _modules() if core_package(m)}
    assert packages - set(LAYERS) == set(), "place the new core package in LAYERS"
    assert set(LAYERS) - packages == set(), "LAYERS names a package that no longer exists"


def test_core_packages_import_only_lower_layers():
    """No loop between core packages, counting imports inside functions: every arrow points down."""
    assert layer_violations(_core_statements(), LAYERS) == []


def test_no_loop_between_core_packages():
    """The same property read as a graph: the package graph (every import, inside functions too) is acyclic."""
    graph: dict[str, set[str]] = {p: set() for p in LAYERS}
    for module, (_, imports) in _core_statements().items():
        src = core_package(module)
        for _, target, names in imports:
            for dst in ([core_package(f"{target}.{n}") for n in names] if target == CORE else [core_package(target)]):
                if dst and dst != src:
                    graph[src].add(dst)
    assert _cycles(graph) == []


def test_layer_check_names_the_offending_line(tmp_path):
    """The checker is not vacuous: an import inside a function that points up is reported as file:line."""
    source = "import os\n\n\ndef late():\n    from finrag_pipeline.core.evaluation.runner import EvalMatrix\n"
    path = tmp_path / "leaf.py"
    path.write_text(source)
    statements = {"finrag_pipeline.core.numbers": ("core/numbers.py", list(import_statements(
        path, "finrag_pipeline.core.numbers")))}
    assert layer_violations(statements, LAYERS) == [
        "core/numbers.py:5: numbers (layer 0) imports evaluation (layer 8): finrag_pipeline.core.evaluation.runner"]
    # same layer is not "lower" either: a loop inside one layer would pass otherwise
    sideways = {"finrag_pipeline.core.qa.x": ("core/qa/x.py", [(3, "finrag_pipeline.core.retrieval.base", ["Hit"])])}
    assert layer_violations(sideways, LAYERS) == [
        "core/qa/x.py:3: qa (layer 7) imports retrieval (layer 7): finrag_pipeline.core.retrieval.base"]
    # an import only for type checking is left out
    typed = tmp_path / "typed.py"
    typed.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from finrag_pipeline.core.evaluation.runner import EvalMatrix\n")
    assert list(import_statements(typed, "finrag_pipeline.core.numbers")) == []


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


def _picture_layers() -> dict[int, set[str]]:
    """Layer number -> the words on its lines, from the picture under "## Rooms" of docs/ARCHITECTURE.md."""
    import re

    text = (REPO_ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    picture = text.split("## Rooms", 1)[1].split("```", 2)[1]
    words: dict[int, set[str]] = {}
    layer = None
    for line in picture.splitlines():
        start = re.match(r"\s+(\d+)\s{2}", line)
        if start:
            layer = int(start.group(1))
        if layer is not None:
            words.setdefault(layer, set()).update(w.lower() for w in re.findall(r"\w+", line))
    return words


def test_architecture_picture_places_every_package_in_its_layer():
    """docs/ARCHITECTURE.md draws the rooms; the picture and LAYERS say the same."""
    words = _picture_layers()
    misplaced = sorted(p for p, layer in LAYERS.items() if p not in words.get(layer, set()))
    assert misplaced == []
