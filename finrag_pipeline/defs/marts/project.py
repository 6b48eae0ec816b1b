"""The dbt project of the marts and the manifest Dagster builds the dbt assets from.

Importing this module (or the code location) runs nothing and changes no environment: the manifest is
prepared beforehand by whoever is about to load the code location,

- `finrag` (every command, when a model or a YAML of dbt_metrics/ is newer than the manifest),
- `make ui` (``python -m finrag_pipeline.defs.marts.project``), and `dagster dev` itself through
  ``dbt_project.prepare_if_dev()`` (dagster-dbt re-parses only when DAGSTER_IS_DEV_CLI is set; it runs the
  ``dbt`` on PATH, which `make ui` puts the venv's bin on),
- the tests (conftest.py), and a packaged deployment with ``prepare_manifest()`` at build time.

dbt is run by its path beside this interpreter (the project's venv, which need not be on PATH), so neither
this module nor a run rewrites PATH.
"""

import shutil
import sys
from pathlib import Path

from dagster_dbt import DbtCliResource, DbtProject

from finrag_pipeline.core.paths import REPO_ROOT

DBT_PROJECT_DIR = REPO_ROOT / "dbt_metrics"


def dbt_executable() -> str:
    """dbt installed beside this interpreter, else whatever ``dbt`` PATH finds."""
    beside = Path(sys.executable).parent / "dbt"
    return str(beside) if beside.exists() else (shutil.which("dbt") or "dbt")


dbt_project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)


def manifest_is_stale() -> bool:
    """A fresh clone has no target/ (git-ignored), and an edited model outdates the manifest."""
    if not dbt_project.manifest_path.exists():
        return True
    built = dbt_project.manifest_path.stat().st_mtime
    sources = [p for pattern in ("*.sql", "*.yml") for p in DBT_PROJECT_DIR.rglob(pattern)
               if "target" not in p.parts and "logs" not in p.parts]
    return any(p.stat().st_mtime > built for p in sources)


def prepare_manifest(force: bool = False) -> bool:
    """``dbt parse`` (about 6 s) when the manifest is missing or older than a model; True when it ran."""
    if not (force or manifest_is_stale()):
        return False
    # what dagster-dbt's preparer runs (``dbt parse`` into the project's target folder), dbt named by its path
    DbtCliResource(project_dir=dbt_project, profiles_dir=str(DBT_PROJECT_DIR), dbt_executable=dbt_executable()).cli(
        ["parse", "--quiet"], target_path=dbt_project.target_path).wait()
    return True


if __name__ == "__main__":
    print("dbt manifest " + ("prepared" if prepare_manifest() else "up to date") + f": {dbt_project.manifest_path}")
