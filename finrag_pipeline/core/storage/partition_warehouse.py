"""One filing's view of the warehouse in distributed mode: its ingest rows go to the object store, and its
own later steps read them back before any publisher has loaded them.

:class:`PartitionWarehouse` is a :class:`Warehouse` for the steps of ONE filing partition. Writes of the
per-filing ingest tables (:data:`PARTITION_TABLES`, ``where={"filing_id": <this filing>}``) become result
objects (``PartitionResults``: one Parquet object per table and filing, overwritten by a retry). Every
other write (core.filings, core.ingest_log, qa.*) goes to the DuckDB file as in local mode. A query that
names a partition table runs on an in-memory DuckDB where the warehouse file is attached read-only and
that table is a view: the published rows of every other filing, plus this filing's pending object. So
``load_pages(wh, fid)`` after ``replace_rows("core.pages", ...)`` returns the new pages, in either mode.
Corpus-wide readers (retrieval's chunk store, marts) read what the results publisher loaded
(``corpus_state`` publishes before evaluation).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import duckdb
import pandas as pd

from finrag_pipeline.core.storage.results import PartitionResults
from finrag_pipeline.core.warehouse import TABLE_DDL, Warehouse, WarehouseBusy, _is_lock_error, lock_holder

PARTITION_TABLES = ("core.pages", "core.table_rows", "core.xbrl_facts", "core.chunks")


class PartitionWarehouse(Warehouse):
    def __init__(self, path: Any, results: PartitionResults, filing_id: str, **kwargs: Any):
        super().__init__(path, **kwargs)
        self.results = results
        self.filing_id = filing_id

    def _goes_to_store(self, table: str, where: Mapping[str, Any]) -> bool:
        return table in PARTITION_TABLES and dict(where) == {"filing_id": self.filing_id}

    def replace_rows(self, table: str, rows: Sequence[Mapping[str, Any]] | pd.DataFrame,
                     where: Mapping[str, Any]) -> int:
        if self._goes_to_store(table, where):
            return self.results.replace_rows(table, rows, where)
        return super().replace_rows(table, rows, where)

    def delete_rows(self, table: str, where: Mapping[str, Any]) -> None:
        if self._goes_to_store(table, where):
            self.results.replace_rows(table, [], where)  # an empty object: the publisher deletes the rows
            return
        super().delete_rows(table, where)

    def query_df(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        pending = {t: df for t in PARTITION_TABLES if t in sql
                   and (df := self.results.read_rows(t, {"filing_id": self.filing_id})) is not None}
        if not pending:
            return super().query_df(sql, params)
        with self._overlay(pending) as con:
            return con.execute(sql, list(params or [])).df()

    @contextlib.contextmanager
    def _overlay(self, pending: Mapping[str, pd.DataFrame]) -> Iterator[duckdb.DuckDBPyConnection]:
        if not self.path.exists():
            with super().connect():  # creates the file and its tables
                pass
        con = duckdb.connect()
        try:
            self._attach_read_only(con)
            fid = self.filing_id.replace("'", "''")
            for i, name in enumerate(TABLE_DDL):
                schema = name.split(".")[0]
                con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                if name in pending and not len(pending[name].columns):  # the step wrote no rows
                    con.execute(f"CREATE VIEW {name} AS SELECT * FROM wh.{name} WHERE filing_id <> '{fid}'")
                elif name in pending:
                    # pending rows take the table's column types, as an INSERT of them would
                    types = dict(con.execute(f"SELECT column_name, data_type FROM duckdb_columns() WHERE "
                                             f"database_name = 'wh' AND schema_name = '{schema}' AND "
                                             f"table_name = '{name.split('.')[1]}'").fetchall())
                    con.register(f"_pending_{i}", pending[name])
                    casts = ", ".join(f'CAST("{c}" AS {types[c]}) AS "{c}"' for c in pending[name].columns if c in types)
                    con.execute(f"CREATE VIEW {name} AS SELECT * FROM wh.{name} WHERE filing_id <> '{fid}' "
                                f"UNION ALL BY NAME SELECT {casts} FROM _pending_{i}")
                else:
                    con.execute(f"CREATE VIEW {name} AS SELECT * FROM wh.{name}")
            yield con
        finally:
            con.close()

    def _attach_read_only(self, con: duckdb.DuckDBPyConnection) -> None:
        """ATTACH the warehouse file read-only, waiting (like Warehouse.connect) while a writer holds it."""
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.05
        path = str(self.path).replace("'", "''")
        while True:
            try:
                con.execute(f"ATTACH '{path}' AS wh (READ_ONLY)")
                return
            except duckdb.Error as exc:
                if not _is_lock_error(exc) or time.monotonic() > deadline:
                    if _is_lock_error(exc):
                        raise WarehouseBusy(f"{self.path.name} is locked by {lock_holder(exc)}") from None
                    raise
                time.sleep(max(0.0, min(delay + random.random() * delay, deadline - time.monotonic())))
                delay = min(delay * 2, 2.0)
