"""Where finrag writes things: everything lives under FINRAG_HOME (default ``<repo>/.finrag``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# The instance the CLI and `make ui` share. Run monitoring lets the daemon fail runs whose worker died
# (kill -9); the CLI also fails runs of its own dead processes when it starts (defs/local_runs.py).
# core/deployment.dagster_instance_yaml() adds the run queue's limits (assets_config/deployment.yaml).
DAGSTER_INSTANCE_YAML = """telemetry:
  enabled: false
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  max_resume_run_attempts: 0
"""
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
        if not instance_yaml.exists():
            # a starting point; core/deployment.write_instance_yaml (run by get_instance, `make ui`) brings a
            # file finrag wrote up to date with deployment.yaml: the mode and the run queue's limits
            instance_yaml.write_text(DAGSTER_INSTANCE_YAML)
        return self
