"""The warehouse with many writers: per-partition result rows as Parquet on the object store, one publisher.

A worker never opens the DuckDB file. Where a local run calls ``Warehouse.replace_rows(table, rows, where)``,
a distributed worker calls :meth:`PartitionResults.replace_rows` with the same arguments; it writes ONE
Parquet object at a key derived from ``(table, where)`` only:

    results/<schema.table>/<sha256 of the canonical where, 32 hex>.parquet

so a retried or redelivered step overwrites its own object (one PUT: atomic, never half visible) and can
never add a second copy of its rows. The object carries ``table`` and ``where`` in its Parquet metadata.

:func:`publish_results` is the single publisher step. It lists the objects, and for each one not loaded
yet (its ETag differs from the one recorded) runs, in ONE DuckDB transaction: ``DELETE FROM table WHERE
<where>``, ``INSERT`` the object's rows, and record ``(key, etag)`` in ``core.published_results`` (objects
are downloaded in parallel and loaded in batches of 64, one transaction per batch). A publisher killed
midway leaves every object either fully loaded and recorded, or not loaded; the next run continues. An object it cannot read is skipped and reported (:class:`ResultsPublishError` after the
others are loaded), so one bad object never blocks the rest. Objects are applied oldest first (by last-modified time, then key), so when two writers'
``where`` overlap (rare: a review rewriting some ``qa_id`` of a filing), the later write wins, as it does
locally. Then the marts and the analysts' snapshot build as in local mode.

duckdb 2.0.1 has no httpfs extension here: objects are downloaded with the store's client and read with
pyarrow.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from finrag_pipeline.core.storage.errors import ObjectNotFound
from finrag_pipeline.core.storage.object_store import ObjectStore
from finrag_pipeline.core.warehouse import TABLE_DDL, Warehouse, ensure_tables, replace_rows_in

RESULTS = "results"
PUBLISHED_TABLE = "core.published_results"
# Created by the publisher only (a local-mode warehouse never gains it).
PUBLISHED_DDL = {PUBLISHED_TABLE: """
    object_key VARCHAR PRIMARY KEY, etag VARCHAR NOT NULL, table_name VARCHAR NOT NULL, where_json VARCHAR,
    n_rows INTEGER, loaded_at TIMESTAMP DEFAULT current_timestamp"""}
_META_TABLE = b"finrag.table"
_META_WHERE = b"finrag.where"
FETCH_THREADS = 16


def _jsonable(value: Any) -> Any:
    if isinstance(value, list | tuple | set):
        return sorted(_jsonable(v) for v in value)
    if isinstance(value, date | datetime):
        return value.isoformat()
    return value


def canonical_where(where: Mapping[str, Any]) -> str:
    """``where`` as canonical JSON (keys sorted, list values sorted): the identity of a partition's rows."""
    return json.dumps({k: _jsonable(v) for k, v in where.items()}, sort_keys=True, separators=(",", ":"))


def result_key(table: str, where: Mapping[str, Any]) -> str:
    if table not in TABLE_DDL:
        raise ValueError(f"unknown warehouse table {table!r}")
    digest = hashlib.sha256(f"{table}\n{canonical_where(where)}".encode()).hexdigest()[:32]
    return f"{RESULTS}/{table}/{digest}.parquet"


@dataclass(frozen=True)
class ResultRef:
    key: str
    table: str
    where: dict[str, Any]
    n_rows: int


@dataclass
class ResultsPublishReport:
    loaded: list[ResultRef] = field(default_factory=list)
    skipped: int = 0             # objects already loaded with the same ETag
    failed: dict[str, str] = field(default_factory=dict)  # key -> why it could not be read (left unloaded)

    @property
    def n_rows(self) -> int:
        return sum(r.n_rows for r in self.loaded)


class ResultsPublishError(RuntimeError):
    """Some result objects could not be read; every other object was loaded (``report`` says which)."""

    def __init__(self, report: ResultsPublishReport):
        self.report = report
        listed = "; ".join(f"{k}: {v}" for k, v in sorted(report.failed.items())[:5])
        super().__init__(f"{len(report.failed)} result object(s) not loaded (the rest were: {len(report.loaded)}): "
                         f"{listed}")


class PartitionResults:
    """The distributed writer: same ``replace_rows`` signature as :class:`Warehouse`, Parquet on the store."""

    def __init__(self, store: ObjectStore):
        self.store = store

    def replace_rows(self, table: str, rows: Sequence[Mapping[str, Any]] | pd.DataFrame,
                     where: Mapping[str, Any]) -> int:
        """Write the rows that replace ``table``'s rows matching ``where`` (as one object); returns the count."""
        key, data, n_rows = encode_result(table, rows, where)
        self.store.put_bytes(key, data)
        return n_rows

    def read_rows(self, table: str, where: Mapping[str, Any]) -> pd.DataFrame | None:
        """The rows a worker wrote for ``(table, where)`` and the publisher may not have loaded yet."""
        info = self.store.head(result_key(table, where))
        if info is None:
            return None
        return _read_object(self.store.get_bytes(info.key))[2].to_pandas()


def encode_result(table: str, rows: Sequence[Mapping[str, Any]] | pd.DataFrame,
                  where: Mapping[str, Any]) -> tuple[str, bytes, int]:
    """(key, Parquet bytes, row count) of the object that replaces ``table``'s rows matching ``where``."""
    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    key = result_key(table, where)
    _check_rows_match_where(table, df, where)
    arrow = pa.Table.from_pandas(df, preserve_index=False)
    arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}), _META_TABLE: table.encode(),
                                           _META_WHERE: canonical_where(where).encode()})
    buf = io.BytesIO()
    pq.write_table(arrow, buf, compression="zstd")
    return key, buf.getvalue(), len(df)


def _check_rows_match_where(table: str, df: pd.DataFrame, where: Mapping[str, Any]) -> None:
    """Every row must satisfy ``where``: otherwise a later replace would leave it behind (duplicates)."""
    for col, val in where.items():
        if col not in df.columns or not len(df):
            continue
        allowed = set(val) if isinstance(val, list | tuple | set) else {val}
        outside = set(df[col].dropna().unique()) - allowed
        if outside:
            raise ValueError(f"{table}: rows with {col} {sorted(map(str, outside))[:3]} lie outside where {col}")


def _read_object(data: bytes) -> tuple[str, dict[str, Any], pa.Table]:
    arrow = pq.read_table(io.BytesIO(data))
    meta = arrow.schema.metadata or {}
    if _META_TABLE not in meta or _META_WHERE not in meta:
        raise ValueError("result object without finrag.table / finrag.where metadata")
    # the pandas metadata goes too: DuckDB inserts straight from Arrow (pandas' conversion cost 40 ms an object)
    return meta[_META_TABLE].decode(), json.loads(meta[_META_WHERE]), arrow.replace_schema_metadata(None)


def publish_results(store: ObjectStore, warehouse: Warehouse) -> ResultsPublishReport:
    """Load every new or changed result object into the DuckDB warehouse (the single publisher step)."""
    report = ResultsPublishReport()
    objects = sorted(store.list(f"{RESULTS}/"), key=lambda o: (o.last_modified, o.key))
    with warehouse.connect() as con, ThreadPoolExecutor(max_workers=FETCH_THREADS) as pool:
        ensure_tables(con, PUBLISHED_DDL)
        loaded = dict(con.execute(f"SELECT object_key, etag FROM {PUBLISHED_TABLE}").fetchall())
        todo = [o for o in objects if loaded.get(o.key) != o.etag]
        report.skipped = len(objects) - len(todo)
        for start in range(0, len(todo), FETCH_THREADS * 4):  # download a batch in parallel, load it in order
            batch = todo[start:start + FETCH_THREADS * 4]
            decoded = [d for obj, data in zip(batch, pool.map(_get_or_error(store), batch), strict=True)
                       if (d := _decode(obj, data, report)) is not None]
            _load_batch(con, decoded, report)
    if report.failed:
        raise ResultsPublishError(report)
    return report


def _get_or_error(store: ObjectStore):
    def get(obj: Any) -> bytes | Exception:
        try:
            return store.get_bytes(obj.key)
        except Exception as exc:  # noqa: BLE001 - reported per object by _load_object
            return exc
    return get


def _decode(obj: Any, data: bytes | Exception, report: ResultsPublishReport):
    """(object, table, where, rows) of a downloaded object; None (recorded in ``report``) if unreadable."""
    if isinstance(data, Exception):
        if isinstance(data, ObjectNotFound):  # deleted since it was listed: nothing to load
            return None
        raise data  # the store failing mid-publish: stop here; what is loaded stays loaded
    try:
        table, where, df = _read_object(data)
        if result_key(table, where) != obj.key:
            raise ValueError(f"its metadata names {table} {where}, which belong at another key")
    except (ValueError, OSError, pa.ArrowException) as exc:  # one bad object must not block the rest
        report.failed[obj.key] = " ".join(str(exc).split())[:300]
        return None
    return obj, table, where, df


def _load_batch(con: Any, decoded: list, report: ResultsPublishReport) -> None:
    """Load objects (in order) and their ledger rows in ONE transaction: all of them or none."""
    if not decoded:
        return
    con.execute("BEGIN TRANSACTION")
    try:
        for obj, table, where, df in decoded:
            replace_rows_in(con, table, df, where)  # the same DELETE + INSERT a local write runs
            con.execute(f"DELETE FROM {PUBLISHED_TABLE} WHERE object_key = ?", [obj.key])
            con.execute(f"INSERT INTO {PUBLISHED_TABLE} (object_key, etag, table_name, where_json, n_rows) "
                        "VALUES (?, ?, ?, ?, ?)", [obj.key, obj.etag, table, canonical_where(where), len(df)])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    report.loaded.extend(ResultRef(obj.key, table, where, len(df)) for obj, table, where, df in decoded)
