"""The filing catalog: register a file (hash, identity, metadata), keep its bytes, log what happened.

Registration is what a sensor, the CLI and the demo do before any Dagster partition exists. Identity
is the content hash: the same bytes twice are one filing. The readable partition key
(``AAPL-2022-10K``) comes from the document's own metadata (or a sidecar YAML next to it).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.ingest.parse import read_filing_meta
from finrag_pipeline.core.ingest.registry import find_sidecar, sha256_file
from finrag_pipeline.core.models import FilingMeta
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.records import from_row
from finrag_pipeline.core.warehouse import Warehouse


@dataclass
class Registration:
    """What became of one file: ``status`` is registered | updated | duplicate | an IngestError status."""

    original_name: str
    sha256: str
    status: str
    message: str
    filing_id: str | None = None
    meta: FilingMeta | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("registered", "updated")


def register_file(path: str | Path, paths: FinragPaths, warehouse: Warehouse) -> Registration:
    """Register one file; never raises for bad input (the reason is in the returned status and the log)."""
    path = Path(path)
    sha = sha256_file(path) if path.is_file() else ""
    known = _active_filings_by_sha(warehouse)
    if sha and sha in known:
        reg = Registration(path.name, sha, "duplicate",
                           f"same bytes as already registered filing {known[sha]}", filing_id=known[sha])
        log_ingest(warehouse, reg, str(path), stage="register")
        return reg
    try:
        meta = read_filing_meta(path)
    except IngestError as exc:
        reg = Registration(path.name, sha, exc.status, exc.message)
        log_ingest(warehouse, reg, str(path), stage="register")
        return reg

    stored = _keep_bytes(path, meta, paths)
    meta.source_path = str(stored)
    previous = warehouse.query_df(
        "SELECT content_sha256 FROM core.filings WHERE filing_id = ?", [meta.filing_id])
    status = "updated" if len(previous) else "registered"
    message = (f"new version of {meta.filing_id} replaces sha256 {previous.iloc[0, 0][:16]}..."
               if status == "updated" else f"{meta.company} {meta.form_type} FY{meta.fiscal_year}")
    write_filing(warehouse, meta)
    reg = Registration(path.name, sha, status, message, filing_id=meta.filing_id, meta=meta)
    log_ingest(warehouse, reg, str(path), stage="register")
    return reg


def write_filing(warehouse: Warehouse, meta: FilingMeta) -> None:
    row = meta.to_row()
    row["removed"] = False
    warehouse.replace_rows("core.filings", [row], where={"filing_id": meta.filing_id})


def load_filing(warehouse: Warehouse, filing_id: str) -> FilingMeta:
    df = warehouse.query_df("SELECT * FROM core.filings WHERE filing_id = ?", [filing_id])
    if not len(df):
        raise KeyError(f"filing {filing_id} is not registered (finrag ingest PATH registers it)")
    meta = from_row(FilingMeta, df.iloc[0].to_dict())
    meta.n_pages = int(meta.n_pages or 0)
    return meta


def active_filings(warehouse: Warehouse) -> list[str]:
    df = warehouse.query_df("SELECT filing_id FROM core.filings WHERE NOT coalesce(removed, FALSE) ORDER BY filing_id")
    return df["filing_id"].tolist()


def mark_removed(warehouse: Warehouse, filing_id: str) -> None:
    warehouse.execute("UPDATE core.filings SET removed = TRUE WHERE filing_id = ?", [filing_id])


def log_ingest(warehouse: Warehouse, reg: Registration, source_path: str, *, stage: str) -> None:
    with warehouse.connect() as con:
        con.execute(
            "INSERT INTO core.ingest_log (file_sha256, original_name, source_path, filing_id, status, message, stage)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            [reg.sha256, reg.original_name, source_path, reg.filing_id, reg.status, reg.message, stage],
        )


def _active_filings_by_sha(warehouse: Warehouse) -> dict[str, str]:
    df = warehouse.query_df(
        "SELECT content_sha256, filing_id FROM core.filings WHERE NOT coalesce(removed, FALSE)")
    return dict(zip(df["content_sha256"], df["filing_id"], strict=True))


def _keep_bytes(path: Path, meta: FilingMeta, paths: FinragPaths) -> Path:
    """Copy the file (and its sidecar) into FINRAG_HOME/filings so the partition never loses its bytes."""
    paths.filings_store.mkdir(parents=True, exist_ok=True)
    suffix = ".pdf" if meta.source_format == "pdf" else ".html"
    target = paths.filings_store / f"{meta.filing_id}-{meta.content_sha256[:12]}{suffix}"
    if not target.exists():
        tmp = target.with_suffix(target.suffix + ".part")
        shutil.copyfile(path, tmp)
        tmp.replace(target)
    sidecar = find_sidecar(path)
    if sidecar is not None:
        shutil.copyfile(sidecar, target.with_name(target.name + ".yaml"))
    return target

