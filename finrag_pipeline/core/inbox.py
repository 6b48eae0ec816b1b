"""The inbox: files dropped in a folder become registered filings, or land in quarantine with a reason.

Dagster-free, so the sensor, the CLI and the tests share it. A processed file leaves the inbox: its
bytes are kept under FINRAG_HOME/filings (registered), FINRAG_HOME/processed (duplicates) or the
quarantine folder next to a ``<name>.reason.txt`` (status, reason, remedy). Nothing is ever deleted.

Hostile entries: a symlink is never followed (it is moved, as a link, to quarantine with status
``unsafe_path``); a name that is hidden or odd (``..htm``, control characters, very long) is quarantined
the same way, never silently skipped. Only partial downloads and sidecars wait in the inbox.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from finrag_pipeline.core.catalog import Registration, log_ingest, record_failure, register_file
from finrag_pipeline.core.ingest.errors import remedy
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse

IGNORED_SUFFIXES = (".part", ".tmp", ".crdownload", ".yaml", ".yml", ".reason.txt")
_RSYNC_TEMP_RE = re.compile(r"^\..+\.[A-Za-z0-9]{6}$")   # rsync writes ".name.XXXXXX" then renames
_PLAIN_NAME_RE = re.compile(r"^[^./\\\x00-\x1f\x7f][^/\\\x00-\x1f\x7f]{0,199}$")


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
    """Entries waiting in the inbox, oldest first: files, symlinks (never followed) and oddly named files
    (quarantined by process_inbox_file); partial downloads and sidecars are left to wait."""
    if not inbox.is_dir():
        return []
    entries = [p for p in inbox.iterdir()
               if (p.is_symlink() or p.is_file()) and not p.name.endswith(IGNORED_SUFFIXES)
               and not _RSYNC_TEMP_RE.match(p.name)]
    return sorted(entries, key=lambda p: (p.lstat().st_mtime, p.name))


def unsafe_entry_reason(path: Path) -> str | None:
    """Why an inbox entry must not be read, or None: a symlink, or a name that is not plain."""
    if path.is_symlink():
        return f"{path.name!r} is a symlink (to {os.readlink(path)!r:.200}); links are never followed"
    if not _PLAIN_NAME_RE.match(path.name):
        return (f"file name {path.name!r:.120} is not a plain name (hidden, control characters or over 200 "
                "characters)")
    return None


def process_inbox_file(path: Path, paths: FinragPaths, warehouse: Warehouse,
                       quarantine: Path | None = None) -> Registration:
    """Register one inbox entry and move it out of the inbox according to the outcome. Never raises for
    a bad file: every outcome is a status, logged in core.ingest_log."""
    unsafe = unsafe_entry_reason(path)
    if unsafe:
        reg = Registration(path.name, "", "unsafe_path", unsafe, retried=False)
        log_ingest(warehouse, reg, str(path), stage="inbox")
    else:
        reg = register_file(path, paths, warehouse)
    if reg.ok:
        _move(path, paths.home / "processed")
    elif reg.status == "duplicate":
        _move(path, paths.home / "processed" / "duplicates")
    else:
        target = _move(path, quarantine or paths.quarantine)
        target.with_name(target.name + ".reason.txt").write_text(
            f"status: {reg.status}\nreason: {reg.message}\nremedy: {remedy(reg.status)}\n"
            f"sha256: {reg.sha256}\noriginal_name: {path.name!r}\n"
            f"quarantined_at: {datetime.now(UTC).isoformat()}\n", encoding="utf-8")
        if unsafe and reg.retry_key:
            record_failure(warehouse, reg, stage="inbox")
    return reg


def _safe_name(name: str) -> str:
    """A plain file name for the quarantine copy of ``name`` (hidden and odd names stay recognisable)."""
    cleaned = re.sub(r"[\x00-\x1f\x7f/\\]", "_", name).lstrip(".") or "unnamed"
    return ("dot-" + cleaned if name.startswith(".") else cleaned)[:200]


def _move(path: Path, folder: Path) -> Path:
    """Move ``path`` (a symlink moves as a link) into ``folder`` under a plain name; never overwrites."""
    folder.mkdir(parents=True, exist_ok=True)
    name = _safe_name(path.name)
    target = folder / name  # a plain name: one level under folder
    if target.exists() or target.is_symlink():  # never overwrite an earlier file of the same name
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        stem, dot, suffix = name.rpartition(".")
        target = folder / (f"{stem}.{stamp}.{suffix}" if dot and stem else f"{name}.{stamp}")
    os.replace(path, target) if _same_device(path, folder) else shutil.move(str(path), target)
    for sidecar in (path.with_name(path.name + ".yaml"), path.with_name(path.name + ".meta.yaml")):
        if sidecar.exists() or sidecar.is_symlink():
            shutil.move(str(sidecar), folder / _safe_name(sidecar.name))
    return target


def _same_device(path: Path, folder: Path) -> bool:
    try:
        return path.lstat().st_dev == folder.stat().st_dev
    except OSError:
        return False
