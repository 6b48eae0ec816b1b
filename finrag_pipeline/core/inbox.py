"""The inbox: files dropped in a folder become registered filings, or land in quarantine with a reason.

Dagster-free, so the sensor, the CLI and the tests share it. A processed file leaves the inbox: its
bytes are kept under FINRAG_HOME/filings (registered), FINRAG_HOME/processed (duplicates) or the
quarantine folder next to a ``<name>.reason.txt``. Nothing is ever deleted.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from finrag_pipeline.core.catalog import Registration, register_file
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse

IGNORED_SUFFIXES = (".part", ".tmp", ".yaml", ".yml", ".reason.txt")


@dataclass
class InboxCursor:
    """sha256 -> outcome of every file handled; survives restarts as the sensor's cursor."""

    handled: dict[str, str] = field(default_factory=dict)
    max_entries: int = 20_000

    @classmethod
    def from_json(cls, text: str | None) -> InboxCursor:
        return cls(handled=dict(json.loads(text).get("handled", {}))) if text else cls()

    def to_json(self) -> str:
        items = list(self.handled.items())[-self.max_entries:]
        return json.dumps({"handled": dict(items)})


def pending_files(inbox: Path) -> list[Path]:
    """Complete files waiting in the inbox, oldest first (hidden and partial downloads skipped)."""
    if not inbox.is_dir():
        return []
    files = [p for p in inbox.iterdir()
             if p.is_file() and not p.name.startswith(".") and not p.name.endswith(IGNORED_SUFFIXES)]
    return sorted(files, key=lambda p: (p.stat().st_mtime, p.name))


def process_inbox_file(path: Path, paths: FinragPaths, warehouse: Warehouse,
                       quarantine: Path | None = None) -> Registration:
    """Register one inbox file and move it out of the inbox according to the outcome."""
    reg = register_file(path, paths, warehouse)
    if reg.ok:
        _move(path, paths.home / "processed")
    elif reg.status == "duplicate":
        _move(path, paths.home / "processed" / "duplicates")
    else:
        target = _move(path, quarantine or paths.quarantine)
        target.with_name(target.name + ".reason.txt").write_text(
            f"status: {reg.status}\nreason: {reg.message}\nsha256: {reg.sha256}\n"
            f"quarantined_at: {datetime.now(UTC).isoformat()}\n", encoding="utf-8")
    return reg


def _move(path: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / path.name
    if target.exists():  # never overwrite an earlier file of the same name
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        target = folder / f"{path.stem}.{stamp}{path.suffix}"
    shutil.move(str(path), target)
    for sidecar in (path.with_name(path.name + ".yaml"), path.with_name(path.name + ".meta.yaml")):
        if sidecar.exists():
            shutil.move(str(sidecar), folder / sidecar.name)
    return target
