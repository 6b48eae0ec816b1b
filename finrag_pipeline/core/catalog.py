"""The filing catalog: register a file (hash, identity, metadata), keep its bytes, log what happened.

Registration is what a sensor, the CLI and the demo do before any Dagster partition exists. Identity
is the content hash: the same bytes twice are one filing. The readable partition key
(``AAPL-2022-10K``) comes from the document's own metadata (or a sidecar YAML next to it).

Every file gets one status, whatever goes wrong: an exception while reading it becomes a status with
its reason (``error`` for the unexpected ones), logged in ``core.ingest_log``. A rejected file is
remembered in ``core.ingest_failures`` under its retry key (bytes + sidecar + parser version), so the
same file is not parsed again until one of those changes.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache
from pathlib import Path

import duckdb

from finrag_pipeline.core.ingest.errors import IngestError, remedy
from finrag_pipeline.core.ingest.parse import read_filing_meta
from finrag_pipeline.core.ingest.registry import find_sidecar, load_sidecar, sha256_file
from finrag_pipeline.core.models import FilingMeta
from finrag_pipeline.core.object_store_config import ObjectStoreCredentialsMissing
from finrag_pipeline.core.paths import FinragPaths, PathEscape, contained
from finrag_pipeline.core.records import from_row
from finrag_pipeline.core.storage.errors import ObjectStoreError
from finrag_pipeline.core.storage.mode import DeploymentConfigError
from finrag_pipeline.core.warehouse import Warehouse, WarehouseBusy, register_tables

register_tables({
    # The latest rejection of a file (registration) or filing (parse and later stages), keyed by its retry
    # key: the same key is not retried; new bytes, a new sidecar or a new parser version are.
    "core.ingest_failures": """
        retry_key VARCHAR, file_sha256 VARCHAR, original_name VARCHAR, filing_id VARCHAR, status VARCHAR,
        message VARCHAR, remedy VARCHAR, stage VARCHAR, failed_at TIMESTAMP DEFAULT current_timestamp""",
})

OK_STATUSES = ("registered", "updated")
# Failures of the machine (a warehouse held too long by another process, memory), not of a file.
# The object store (distributed mode) unreachable or refusing credentials is the machine's fault too.
ENVIRONMENT_ERRORS: tuple[type[BaseException], ...] = (WarehouseBusy, duckdb.Error, MemoryError, ObjectStoreError,
                                                       ObjectStoreCredentialsMissing, DeploymentConfigError)


@dataclass
class Registration:
    """What became of one file: ``status`` is registered | updated | duplicate | an IngestError status."""

    original_name: str
    sha256: str
    status: str
    message: str
    filing_id: str | None = None
    meta: FilingMeta | None = None

    retry_key: str = ""
    retried: bool = True  # False: an unchanged file rejected before, not parsed again

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES

    @property
    def remedy(self) -> str:
        return "" if self.ok else remedy(self.status)


@cache
def parser_version() -> str:
    """Hash of the ingest code (core/ingest/*.py): a new parser retries files it rejected before."""
    root = Path(__file__).parent / "ingest"
    h = hashlib.sha256()
    for src in sorted(root.glob("*.py")):
        h.update(src.name.encode() + b"\0" + src.read_bytes())
    return h.hexdigest()[:16]


def retry_key(content_sha256: str, sidecar: Path | None) -> str:
    """What a retry depends on: the bytes, the sidecar's bytes and the parser version."""
    side = sha256_file(sidecar) if sidecar is not None and sidecar.is_file() and not sidecar.is_symlink() else ""
    return hashlib.sha256(f"{content_sha256}|{side}|{parser_version()}".encode()).hexdigest()[:32]


def register_file(path: str | Path, paths: FinragPaths, warehouse: Warehouse) -> Registration:
    """Register one file; never raises for bad input: every failure is a status with its reason, in the
    returned Registration, ``core.ingest_log`` and (rejections) ``core.ingest_failures``."""
    path = Path(path)
    sha, key = "", ""
    try:
        sha = sha256_file(path) if path.is_file() else ""
        key = retry_key(sha, find_sidecar(path))
        reg = _register(path, sha, key, paths, warehouse)
    except IngestError as exc:
        reg = Registration(path.name, sha, exc.status, exc.message)
    except ENVIRONMENT_ERRORS:
        raise  # the machine's fault, not the file's: never quarantine a file for it
    except PathEscape as exc:
        reg = Registration(path.name, sha, "unsafe_path", str(exc))
    except Exception as exc:  # noqa: BLE001 - one bad file must never stop the others
        reg = Registration(path.name, sha, "error", f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
    reg.retry_key = key
    log_ingest(warehouse, reg, str(path), stage="register")
    # stale depends on the catalog (the active version may be removed later), so it is never remembered
    if not reg.ok and reg.status not in ("duplicate", "stale") and reg.retried:
        record_failure(warehouse, reg, stage="register")
    return reg


def _register(path: Path, sha: str, key: str, paths: FinragPaths, warehouse: Warehouse) -> Registration:
    # Order matters for one honest, order-independent status: a remembered rejection first, then the
    # sidecar (a broken one is reported even when the bytes are a duplicate), then identity, then parsing.
    earlier = known_failure(warehouse, key) if key else None
    if earlier is not None:
        return Registration(path.name, sha, earlier["status"],
                            f"unchanged since rejected at {earlier['failed_at']:%Y-%m-%d %H:%M} (not retried "
                            f"until the file, its sidecar or the parser change): {earlier['message']}",
                            filing_id=earlier["filing_id"], retried=False)
    sidecar = find_sidecar(path)
    if sidecar is not None:
        load_sidecar(sidecar)
    known = _active_filings_by_sha(warehouse)
    if sha and sha in known:
        return Registration(path.name, sha, "duplicate",
                            f"same bytes as already registered filing {known[sha]}", filing_id=known[sha])
    meta = read_filing_meta(path)
    previous = warehouse.query_df(
        "SELECT content_sha256, period_end_date, source_path, coalesce(removed, FALSE) AS removed "
        "FROM core.filings WHERE filing_id = ?", [meta.filing_id])
    if len(previous) and not previous.iloc[0]["removed"]:
        stale = _stale_reason(warehouse, meta, previous.iloc[0].to_dict())
        if stale:
            return Registration(path.name, sha, "stale", stale, filing_id=meta.filing_id)
    stored = _keep_bytes(path, meta, paths)
    _replicate_bytes(stored, paths)  # before core.filings names it: no worker sees a filing without bytes
    meta.source_path = str(stored)
    status = "updated" if len(previous) else "registered"
    message = (f"new version of {meta.filing_id} replaces sha256 {previous.iloc[0, 0][:16]}..."
               if status == "updated" else f"{meta.company} {meta.form_type} FY{meta.fiscal_year}")
    if meta.review_reasons:   # registered all the same; the review queue is core.filings.review_reasons
        message += f"; in the review queue: {'; '.join(meta.review_reasons)}"
    write_filing(warehouse, meta)
    clear_failures(warehouse, meta.filing_id)
    warehouse.delete_rows("core.ingest_failures", {"retry_key": key})
    if meta.review_reasons:   # the review queue, in the log too: registered all the same
        log_ingest(warehouse, Registration(path.name, sha, "review", "; ".join(meta.review_reasons),
                                           filing_id=meta.filing_id), str(path), stage="register")
    return Registration(path.name, sha, status, message, filing_id=meta.filing_id, meta=meta)


def _stale_reason(warehouse: Warehouse, meta: FilingMeta, active: dict) -> str | None:
    """Why ``meta`` is older than the active version of its filing id, by the filings' own dates (period
    end; a PDF's own modification date), or because these very bytes were replaced by the active ones."""
    fid = meta.filing_id
    new_end, old_end = _as_date(meta.period_end_date), _as_date(active.get("period_end_date"))
    if new_end and old_end and new_end < old_end:
        return (f"its period ends {new_end}, before the active version of {fid} ({old_end}); the active "
                f"version (sha256 {active['content_sha256'][:16]}...) is kept")
    new_date, old_date = document_date(meta.source_path), document_date(active.get("source_path"))
    if new_date and old_date and new_date < old_date:
        return (f"the document is dated {new_date:%Y-%m-%d}, before the active version of {fid} "
                f"({old_date:%Y-%m-%d}); the active version is kept")
    replaced = warehouse.query_df(
        "SELECT max(logged_at) AS at FROM core.ingest_log WHERE filing_id = ? AND file_sha256 = ? "
        "AND status IN ('registered', 'updated')", [fid, meta.content_sha256]).iloc[0, 0]
    if replaced is not None and str(replaced) != "NaT":
        return (f"these bytes were the version of {fid} registered at {replaced:%Y-%m-%d %H:%M} and have since "
                f"been replaced (active sha256 {active['content_sha256'][:16]}...); the active version is kept")
    return None


def _as_date(value) -> date | None:
    if value is None or str(value) in ("NaT", "None", "nan"):
        return None
    return value.date() if hasattr(value, "date") and callable(value.date) else value


def document_date(path: str | Path | None) -> datetime | None:
    """A PDF's own ModDate (else CreationDate); None for HTML or when absent."""
    if not path or not str(path).lower().endswith(".pdf") or not Path(path).is_file():
        return None
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(str(path))
        try:
            info = pdf.get_metadata_dict()
        finally:
            pdf.close()
    except Exception:  # noqa: BLE001 - a PDF without readable metadata simply has no date
        return None
    for key in ("ModDate", "CreationDate"):
        digits = re.sub(r"\D", "", (info.get(key) or "").removeprefix("D:"))
        for width, fmt in ((14, "%Y%m%d%H%M%S"), (8, "%Y%m%d")):
            if len(digits) >= width:
                try:
                    return datetime.strptime(digits[:width], fmt)
                except ValueError:
                    continue
    return None


def reject_filing(warehouse: Warehouse, paths: FinragPaths, meta: FilingMeta, status: str, message: str, *,
                  stage: str) -> Registration:
    """A registered filing failed a later stage (parse, chunking): log it, remember it under its retry key,
    leave a reason file in the quarantine (its bytes stay in the filings store) and take it out of the
    active catalog, so no run treats it as ingested and none retries it until bytes, sidecar or parser
    change (re-registering the file then retries it).

    A new version that fails to parse never wrote a row, so the version it was meant to replace is put
    back (its bytes are in the store): bad input loses nothing."""
    stored = Path(meta.source_path)
    sidecar = stored.with_name(stored.name + ".yaml")
    reg = Registration(meta.original_name or stored.name, meta.content_sha256, status, message,
                       filing_id=meta.filing_id, retry_key=retry_key(meta.content_sha256,
                                                                     sidecar if sidecar.exists() else None))
    previous = _previous_version(warehouse, paths, meta) if stage == "parse" else None
    if previous is not None:
        reg.message += (f"; the previous version (sha256 {previous.content_sha256[:16]}...) stays active")
    log_ingest(warehouse, reg, meta.source_path, stage=stage)
    record_failure(warehouse, reg, stage=stage)
    paths.quarantine.mkdir(parents=True, exist_ok=True)
    contained(paths.quarantine / f"{meta.filing_id}.reason.txt", paths.quarantine).write_text(
        f"status: {status}\nreason: {reg.message}\nremedy: {remedy(status)}\nfiling_id: {meta.filing_id}\n"
        f"stage: {stage}\nbytes: {meta.source_path}\nsha256: {meta.content_sha256}\n"
        f"quarantined_at: {datetime.now(UTC).isoformat()}\n", encoding="utf-8")
    if previous is not None:
        write_filing(warehouse, previous)
    else:
        mark_removed(warehouse, meta.filing_id)
    return reg


def _previous_version(warehouse: Warehouse, paths: FinragPaths, meta: FilingMeta) -> FilingMeta | None:
    """The latest earlier version of ``meta``'s filing whose bytes are still in the store, read again."""
    shas = warehouse.query_df(
        "SELECT file_sha256 FROM core.ingest_log WHERE filing_id = ? AND status IN ('registered', 'updated') "
        "AND file_sha256 <> ? GROUP BY file_sha256 ORDER BY max(logged_at) DESC",
        [meta.filing_id, meta.content_sha256])["file_sha256"].tolist()
    for sha in shas:
        for stored in sorted(paths.filings_store.glob(f"{meta.filing_id}-{sha[:12]}.*")):
            if stored.suffix not in (".pdf", ".html"):
                continue
            try:
                old = read_filing_meta(stored)
            except Exception:  # noqa: BLE001 - an unreadable old version is simply not restorable
                continue
            if old.filing_id == meta.filing_id and old.content_sha256 == sha:
                old.source_path, old.original_name = str(stored), stored.name
                return old
    return None


def record_failure(warehouse: Warehouse, reg: Registration, *, stage: str) -> None:
    """Remember a rejection under its retry key (replacing an earlier one of the same key)."""
    warehouse.replace_rows("core.ingest_failures", [{
        "retry_key": reg.retry_key, "file_sha256": reg.sha256, "original_name": reg.original_name,
        "filing_id": reg.filing_id, "status": reg.status, "message": reg.message, "remedy": remedy(reg.status),
        "stage": stage}], where={"retry_key": reg.retry_key})


def known_failure(warehouse: Warehouse, key: str) -> dict | None:
    df = warehouse.query_df("SELECT * FROM core.ingest_failures WHERE retry_key = ? ORDER BY failed_at DESC "
                            "LIMIT 1", [key])
    return df.iloc[0].to_dict() if len(df) else None


def clear_failures(warehouse: Warehouse, filing_id: str) -> None:
    warehouse.delete_rows("core.ingest_failures", {"filing_id": filing_id})


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


def _replicate_bytes(stored: Path, paths: FinragPaths) -> None:
    """Distributed mode: upload the kept bytes (and sidecar) to the object store, where workers fetch them."""
    from finrag_pipeline.core.storage.seam import storage_for

    storage_for(paths).upload_filing(stored)  # local mode: the bytes kept in FINRAG_HOME/filings are enough


def _keep_bytes(path: Path, meta: FilingMeta, paths: FinragPaths) -> Path:
    """Copy the file (and its sidecar) into FINRAG_HOME/filings so the partition never loses its bytes.
    The target is checked to lie in the store (the filing id is validated too: belt and braces)."""
    paths.filings_store.mkdir(parents=True, exist_ok=True)
    suffix = ".pdf" if meta.source_format == "pdf" else ".html"
    target = contained(paths.filings_store / f"{meta.filing_id}-{meta.content_sha256[:12]}{suffix}",
                       paths.filings_store)
    if not target.exists():
        tmp = target.with_suffix(target.suffix + ".part")
        shutil.copyfile(path, tmp)
        tmp.replace(target)
    sidecar = find_sidecar(path)
    if sidecar is not None:
        shutil.copyfile(sidecar, contained(target.with_name(target.name + ".yaml"), paths.filings_store))
    return target

