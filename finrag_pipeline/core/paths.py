"""Where finrag writes things: everything lives under FINRAG_HOME (default ``<repo>/.finrag``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# The instance the CLI and `make ui` share. Run monitoring lets the daemon fail runs whose worker died
# (kill -9); the CLI also fails runs of its own dead processes when it starts (defs/local_runs.py).
# dagster_instance_yaml() adds the run queue's concurrency limits (assets_config/deployment.yaml).
DAGSTER_INSTANCE_YAML = """telemetry:
  enabled: false
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  max_resume_run_attempts: 0
"""
_INSTANCE_YAML_MARKER = "# written by finrag from assets_config/deployment.yaml; edit that file, not this one\n"


def load_run_concurrency(config_dir: str | os.PathLike | None = None) -> list[dict]:
    """``run_concurrency`` of assets_config/deployment.yaml: [{key, value, limit}], validated.

    The one reader of that key until core/deployment.py (contract 1) takes it over."""
    import yaml
    from pydantic import BaseModel, ConfigDict, Field

    class TagLimit(BaseModel):
        model_config = ConfigDict(extra="forbid")
        key: str = Field(min_length=1)
        value: str = Field(min_length=1)
        limit: int = Field(ge=1)

    from finrag_pipeline.core.config import config_path  # imports this module: resolved at call time

    path = Path(config_dir) / "deployment.yaml" if config_dir else config_path("deployment.yaml")
    raw = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    limits = [TagLimit.model_validate(item).model_dump() for item in raw.get("run_concurrency") or []]
    seen = [(item["key"], item["value"]) for item in limits]
    if len(seen) != len(set(seen)):
        raise ValueError(f"{path}: run_concurrency lists a tag twice: {seen}")
    return limits


def dagster_instance_yaml(config_dir: str | os.PathLike | None = None) -> str:
    """dagster.yaml of a local instance: DAGSTER_INSTANCE_YAML plus the queued run coordinator with the tag
    concurrency limits of deployment.yaml (runs over a limit wait in the queue)."""
    import yaml

    limits = load_run_concurrency(config_dir)
    coordinator = {"run_coordinator": {
        "module": "dagster.core.run_coordinator", "class": "QueuedRunCoordinator",
        "config": {"tag_concurrency_limits": limits}}} if limits else {}
    return _INSTANCE_YAML_MARKER + DAGSTER_INSTANCE_YAML + (yaml.safe_dump(coordinator, sort_keys=False) if coordinator else "")


REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_FILINGS_DIR = REPO_ROOT / "data" / "sample_filings"
# Hand-written analysts' questions on the sample filings (FinanceBench format): the demo imports them.
SAMPLE_EXTERNAL_QA = REPO_ROOT / "finrag_pipeline_tests" / "data" / "external" / "analyst_questions.jsonl"
ASSETS_CONFIG_DIR = REPO_ROOT / "assets_config"


class PathEscape(ValueError):
    """A path the pipeline was about to write lies outside the folder it must stay in."""


def contained(path: str | os.PathLike, root: str | os.PathLike) -> Path:
    """``path`` resolved (symlinks and '..' followed), if it lies under ``root``; raises PathEscape otherwise.

    Every path built from outside input (a filing id, a file name) goes through this before a write.
    """
    root_resolved = Path(root).resolve()
    resolved = Path(path).resolve()
    if resolved != root_resolved and not resolved.is_relative_to(root_resolved):
        raise PathEscape(f"refusing to write {path}: it resolves to {resolved}, outside {root_resolved}")
    return resolved


@dataclass(frozen=True)
class FinragPaths:
    home: Path

    def inside(self, path: str | os.PathLike) -> Path:
        """``path`` resolved, if it lies under FINRAG_HOME (raises PathEscape otherwise)."""
        return contained(path, self.home)

    @classmethod
    def from_env(cls, home: str | os.PathLike | None = None) -> FinragPaths:
        root = Path(home or os.environ.get("FINRAG_HOME") or REPO_ROOT / ".finrag").expanduser().resolve()
        return cls(root)

    @property
    def warehouse(self) -> Path:
        return self.home / "warehouse.duckdb"

    @property
    def warehouse_snapshot(self) -> Path:
        """Read-only copy for analysts, swapped atomically after each successful write."""
        return self.home / "warehouse_read.duckdb"

    @property
    def tantivy_dir(self) -> Path:
        return self.home / "indexes" / "tantivy"

    @property
    def lancedb_dir(self) -> Path:
        return self.home / "indexes" / "lancedb"

    @property
    def dagster_home(self) -> Path:
        return self.home / "dagster_home"

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def llm_cache_dir(self) -> Path:
        return self.cache_dir / "llm"

    @property
    def logs_dir(self) -> Path:
        """What pipeline runs print (dbt's log lines among them) when started from the CLI."""
        return self.home / "logs"

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    @property
    def inbox(self) -> Path:
        return self.home / "inbox"

    @property
    def quarantine(self) -> Path:
        return self.home / "quarantine"

    @property
    def filings_store(self) -> Path:
        """Registered filings are copied here under their content hash, so a partition never loses its bytes."""
        return self.home / "filings"

    @property
    def reports_dir(self) -> Path:
        return self.home / "reports"

    def ensure(self) -> FinragPaths:
        for p in (self.home, self.tantivy_dir, self.lancedb_dir, self.dagster_home, self.cache_dir,
                  self.inbox, self.quarantine, self.filings_store, self.reports_dir):
            p.mkdir(parents=True, exist_ok=True)
        instance_yaml = self.dagster_home / "dagster.yaml"
        # Default storage under DAGSTER_HOME; no telemetry from an offline box; the run queue's limits. A file
        # finrag wrote earlier is brought up to date (deployment.yaml changed); one written by hand is kept.
        current = instance_yaml.read_text() if instance_yaml.exists() else None
        if current is None or current == DAGSTER_INSTANCE_YAML or current.startswith(_INSTANCE_YAML_MARKER):
            wanted = dagster_instance_yaml()
            if current != wanted:
                instance_yaml.write_text(wanted)
        return self
