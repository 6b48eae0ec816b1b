"""Importing the code location has no side effects: no dbt parse, no PATH change, no file written.

The import runs in a fresh interpreter over a read-only copy of the repository (the package, its YAML,
the dbt project with the manifest conftest.py prepared, workspace.yaml) with a FINRAG_HOME and DAGSTER_HOME
that do not exist yet. Afterwards the copy is byte-for-byte and mtime-for-mtime what it was, neither home
exists, and the child saw the PATH it was given.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from finrag_pipeline.core.paths import REPO_ROOT

COPIED = ("finrag_pipeline", "assets_config", "dbt_metrics", "workspace.yaml", "pyproject.toml")

CHILD = """
import json, os, sys
path_before = os.environ["PATH"]
import finrag_pipeline.definitions as location
import finrag_pipeline
print(json.dumps({"file": finrag_pipeline.__file__, "path_before": path_before, "path_after": os.environ["PATH"],
                  "assets": len(list(location.defs.resolve_all_asset_keys()))}))
"""


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under root: (size, mtime in ns)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = (st.st_size if p.is_file() else 0, st.st_mtime_ns)
    return out


def _read_only(root: Path, writable: bool = False) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames, ""]:
            p = Path(dirpath) / name
            mode = p.stat().st_mode
            p.chmod(mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.mark.slow
def test_importing_the_code_location_writes_nothing_and_keeps_path(tmp_path):
    manifest = REPO_ROOT / "dbt_metrics" / "target" / "manifest.json"
    assert manifest.exists(), "conftest.py prepares the dbt manifest before any test"
    repo = tmp_path / "repo"
    for name in COPIED:
        src = REPO_ROOT / name
        if src.is_dir():
            shutil.copytree(src, repo / name, ignore=shutil.ignore_patterns("__pycache__", "logs", "*.log"))
        else:
            shutil.copy2(src, repo / name)
    # a dbt model newer than the manifest: the old import parsed dbt again here, the new one must not
    model = next((repo / "dbt_metrics" / "models").rglob("*.sql"))
    os.utime(model, ns=(manifest.stat().st_mtime_ns + 10**9,) * 2)
    home = tmp_path / "fresh_home"
    path = os.pathsep.join(["/usr/local/bin", "/usr/bin", "/bin"])  # without the venv's bin, where dbt lives
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FINRAG_", "DAGSTER_"))}
    env.update(PATH=path, PYTHONPATH=str(repo), FINRAG_HOME=str(home), DAGSTER_HOME=str(home / "dagster_home"),
               PYTHONDONTWRITEBYTECODE="1")
    _read_only(repo)
    before = _tree(repo)
    try:
        child = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=600)
    finally:
        _read_only(repo, writable=True)
    assert child.returncode == 0, child.stderr[-3000:]
    seen = json.loads(child.stdout.strip().splitlines()[-1])
    assert seen["file"] == str(repo / "finrag_pipeline" / "__init__.py")  # the copy was imported, not the repo
    assert seen["assets"] > 20  # the whole graph loaded (dbt models included), not an empty module
    assert seen["path_before"] == seen["path_after"] == path
    assert _tree(repo) == before  # no manifest, dbt log, partial parse or config written
    assert not home.exists()  # neither FINRAG_HOME nor DAGSTER_HOME created
    assert sorted(p.name for p in tmp_path.iterdir()) == ["repo"]  # nothing beside it (the child's cwd)
