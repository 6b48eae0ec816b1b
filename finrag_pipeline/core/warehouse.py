"""The DuckDB warehouse: one file, schemas ``core``, ``qa``, ``eval``; idempotent per-partition writes.

DuckDB allows one writer process per file. Dagster runs are separate processes, so every write
opens the file briefly, retries with backoff while another process holds it, and replaces a
partition's rows in a single transaction (DELETE + INSERT), so a reader never sees half a partition
and a re-run never duplicates rows. Analysts read ``warehouse_read.duckdb``, a snapshot swapped in
atomically by :func:`publish_snapshot`, so an open analyst session never blocks the pipeline.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from finrag_pipeline.core.scoring.metric_registry import (
    ANSWER_METRIC_SPECS,
    CHANCE_COLUMNS,
    CHANCE_INPUT_COLUMNS,
    RETRIEVAL_METRIC_SPECS,
    ddl_columns,
)
from finrag_pipeline.core.scoring.results_views import ensure_views

# Table DDL, by qualified name. Column docs live in docs/WAREHOUSE.md.
TABLE_DDL: dict[str, str] = {
    "core.filings": """
        filing_id VARCHAR PRIMARY KEY, content_sha256 VARCHAR NOT NULL, source_path VARCHAR,
        original_name VARCHAR, source_format VARCHAR, company VARCHAR, ticker VARCHAR, cik VARCHAR,
        form_type VARCHAR, fiscal_year INTEGER, period_end_date DATE, fiscal_year_end VARCHAR,
        n_pages INTEGER, metadata_source VARCHAR, metadata_confidence DOUBLE, field_sources VARCHAR,
        field_confidence VARCHAR, review_reasons VARCHAR,
        registered_at TIMESTAMP DEFAULT current_timestamp,
        removed BOOLEAN DEFAULT FALSE""",
    "core.pages": """
        filing_id VARCHAR, page_number INTEGER, text VARCHAR, section VARCHAR, section_title VARCHAR,
        printed_page_label VARCHAR, has_tables BOOLEAN, char_count INTEGER""",
    "core.table_rows": """
        filing_id VARCHAR, table_id VARCHAR, row_index INTEGER, page_number INTEGER, section VARCHAR,
        table_title VARCHAR, unit VARCHAR, unit_text VARCHAR, row_label VARCHAR, headers VARCHAR,
        cells VARCHAR, row_path VARCHAR, statement_type VARCHAR""",
    "core.xbrl_facts": """
        filing_id VARCHAR, fact_id VARCHAR, concept VARCHAR, value DOUBLE, value_text VARCHAR,
        unit VARCHAR, decimals INTEGER, period_type VARCHAR, period_start DATE, period_end DATE,
        dimensions VARCHAR, context_id VARCHAR, scale INTEGER, page_number INTEGER""",
    "core.chunks": """
        chunk_id VARCHAR, filing_id VARCHAR, ticker VARCHAR, company VARCHAR, fiscal_year INTEGER,
        form_type VARCHAR, section VARCHAR, page_start INTEGER, page_end INTEGER, chunk_type VARCHAR,
        text VARCHAR, char_start INTEGER, char_end INTEGER, parent_id VARCHAR, position INTEGER,
        is_leaf BOOLEAN, table_id VARCHAR, metadata VARCHAR""",
    # The chunks of each non-default chunking variant (ingest.yaml chunking.variants), one set per
    # (filing, variant): what the variant_chunks asset writes and the variant's retrievers read.
    "core.variant_chunks": """
        chunking VARCHAR, chunking_fingerprint VARCHAR,
        chunk_id VARCHAR, filing_id VARCHAR, ticker VARCHAR, company VARCHAR, fiscal_year INTEGER,
        form_type VARCHAR, section VARCHAR, page_start INTEGER, page_end INTEGER, chunk_type VARCHAR,
        text VARCHAR, char_start INTEGER, char_end INTEGER, parent_id VARCHAR, position INTEGER,
        is_leaf BOOLEAN, table_id VARCHAR, metadata VARCHAR""",
    "core.ingest_log": """
        file_sha256 VARCHAR, original_name VARCHAR, source_path VARCHAR, filing_id VARCHAR,
        status VARCHAR, message VARCHAR, stage VARCHAR, logged_at TIMESTAMP DEFAULT current_timestamp""",
    "core.corpus_versions": """
        corpus_state VARCHAR, filing_ids VARCHAR, n_filings INTEGER, n_chunks INTEGER, embedder VARCHAR,
        created_at TIMESTAMP DEFAULT current_timestamp""",
    "qa.items": """
        qa_id VARCHAR, filing_id VARCHAR, question VARCHAR, reference_answer VARCHAR,
        question_type VARCHAR, answer_figures VARCHAR, periods VARCHAR, evidence VARCHAR,
        computation VARCHAR, generator VARCHAR, generator_version VARCHAR, prompt_hash VARCHAR,
        difficulty VARCHAR, status VARCHAR, source VARCHAR, metadata VARCHAR, answer_values VARCHAR,
        answer_choice VARCHAR""",
    "qa.generation_log": """
        filing_id VARCHAR, generator VARCHAR, stage VARCHAR, reason VARCHAR, count INTEGER,
        logged_at TIMESTAMP DEFAULT current_timestamp""",
    "qa.reviews": """
        qa_id VARCHAR, decision VARCHAR, reviewer VARCHAR, note VARCHAR, before VARCHAR, after VARCHAR,
        reviewed_at TIMESTAMP DEFAULT current_timestamp""",
    # One row per evaluation run of one configuration on one partition and scope.
    "eval.runs": """
        run_id VARCHAR, kind VARCHAR, config_name VARCHAR, config_hash VARCHAR, config VARCHAR,
        filing_id VARCHAR, scope VARCHAR, code_version VARCHAR, corpus_state VARCHAR,
        n_filings_in_corpus INTEGER, n_questions INTEGER, status VARCHAR, message VARCHAR,
        dagster_run_id VARCHAR, started_at TIMESTAMP, finished_at TIMESTAMP""",
    # One row per question x retrieval configuration x scope. status: ok | no_relevant (metrics
    # NULL: undefined, excluded from means, counted) | error (metrics stored as 0: a failure counts).
    # A NULL metric on an 'ok' row was not computable; `notes` says why (docs/METRICS.md). The metric
    # columns come from core/scoring/metric_registry.py (a new one is added to old warehouses on open).
    "eval.retrieval_results": f"""
        run_id VARCHAR, filing_id VARCHAR, scope VARCHAR, config_name VARCHAR, retriever VARCHAR,
        k INTEGER, chunking VARCHAR, config_hash VARCHAR, qa_id VARCHAR, question_type VARCHAR,
        n_retrieved INTEGER, first_relevant_rank_chunk INTEGER, first_relevant_rank_page INTEGER,
        {ddl_columns(RETRIEVAL_METRIC_SPECS)},
        latency_ms DOUBLE, status VARCHAR, error VARCHAR, notes VARCHAR, corpus_state VARCHAR,
        n_filings_in_corpus INTEGER, evaluated_at TIMESTAMP,
        resolution VARCHAR, resolution_correct DOUBLE, resolved_filings VARCHAR,
        {", ".join(f"{c} {t}" for c, t in CHANCE_INPUT_COLUMNS)}, {", ".join(f"{c} DOUBLE" for c in CHANCE_COLUMNS)},
        system_kind VARCHAR, system_state VARCHAR, n_contexts INTEGER, n_contexts_unmapped INTEGER,
        mapping_confidence DOUBLE""",
    # system_*: an outside system under test (core/evaluation/system_eval.py): its kind (http | python | file;
    # NULL = a built-in retriever), the state of its call, how many contexts it returned, how many of them
    # could not be placed in the corpus, and the mean confidence of the placements.
    # chance_*, <metric>_chance: what a random draw of k leaves of the scope's candidate pool scores on this
    # question (core/retrieval/sanity.py); NULL = not recorded (older rows) or not computable.
    # resolution: how a configuration's company/period resolution compares with the question's filing
    # (exact | covers | wrong | unresolved; NULL = the configuration resolves nothing), see
    # core/retrieval/company_first.resolution_outcome.
    # One row per question x answer configuration.
    "eval.answer_results": f"""
        run_id VARCHAR, filing_id VARCHAR, config_name VARCHAR, config_hash VARCHAR, model VARCHAR,
        prompt_type VARCHAR, temperature DOUBLE, top_p DOUBLE, retriever VARCHAR, k INTEGER,
        qa_id VARCHAR, question_type VARCHAR, answer VARCHAR, citations VARCHAR,
        answerable BOOLEAN, is_sanity BOOLEAN, response_state VARCHAR,
        {ddl_columns(ANSWER_METRIC_SPECS)},
        judge_reasons VARCHAR, notes VARCHAR, prompt_tokens INTEGER,
        completion_tokens INTEGER, latency_ms DOUBLE, cost_usd DOUBLE, error VARCHAR,
        evaluated_at TIMESTAMP, system_kind VARCHAR""",
    # Derived snapshots (core/evaluation/leaderboard.py), fully replaced on every build. LONG: one row
    # per configuration x metric; kind 'retrieval' (scope, retriever, k, chunking set) or 'answer'
    # (model, prompt_type, temperature, top_p, retriever, k set; scope NULL). Bootstrap CIs.
    "eval.leaderboard": """
        kind VARCHAR, scope VARCHAR, config_name VARCHAR, retriever VARCHAR, k INTEGER, chunking VARCHAR,
        model VARCHAR, prompt_type VARCHAR, temperature DOUBLE, top_p DOUBLE, metric VARCHAR, mean DOUBLE,
        ci_low DOUBLE, ci_high DOUBLE, n INTEGER, n_total INTEGER, coverage DOUBLE, n_questions INTEGER,
        n_no_relevant INTEGER, n_failed INTEGER, n_filings INTEGER, confidence DOUBLE, n_boot INTEGER,
        seed INTEGER, built_at TIMESTAMP""",
    # Each configuration vs the best of its group (retrieval: scope x k by ndcg_page; answers: by
    # correctness) on the same questions: mean_diff = config - best, paired CI, permutation p-value.
    "eval.comparisons": """
        kind VARCHAR, scope VARCHAR, config_name VARCHAR, retriever VARCHAR, k INTEGER, chunking VARCHAR,
        model VARCHAR, prompt_type VARCHAR, temperature DOUBLE, top_p DOUBLE, best_config_name VARCHAR,
        best_by VARCHAR, is_best BOOLEAN, metric VARCHAR, mean DOUBLE, best_mean DOUBLE, mean_diff DOUBLE,
        ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, n_pairs INTEGER, distinguishable BOOLEAN,
        confidence DOUBLE, n_boot INTEGER, n_perm INTEGER, seed INTEGER, built_at TIMESTAMP""",
    # External agreement (core/evaluation/agreement.py), fully replaced on every build: per external QA
    # set x scope, Kendall tau-b / Spearman rho between the synthetic and the external leaderboard with
    # bootstrap intervals over questions, and the configuration pairs whose order flips.
    "eval.external_agreement": """
        external_set VARCHAR, source VARCHAR, scope VARCHAR, k INTEGER, metric VARCHAR, n_filings INTEGER,
        filing_ids VARCHAR, n_configs INTEGER, n_external_questions INTEGER, n_synthetic_questions INTEGER,
        kendall_tau_b DOUBLE, kendall_ci_low DOUBLE, kendall_ci_high DOUBLE, spearman_rho DOUBLE,
        spearman_ci_low DOUBLE, spearman_ci_high DOUBLE, n_boot INTEGER, n_boot_valid INTEGER,
        confidence DOUBLE, seed INTEGER, n_pairs INTEGER, n_flipped_pairs INTEGER, flipped_pairs VARCHAR,
        best_synthetic VARCHAR, best_external VARCHAR, note VARCHAR, built_at TIMESTAMP""",
    # Both leaderboards of the agreement side by side: one row per external set x scope x configuration.
    "eval.external_agreement_configs": """
        external_set VARCHAR, source VARCHAR, scope VARCHAR, k INTEGER, metric VARCHAR, config_name VARCHAR,
        retriever VARCHAR, chunking VARCHAR, synthetic_mean DOUBLE, synthetic_rank DOUBLE, n_synthetic INTEGER,
        external_mean DOUBLE, external_rank DOUBLE, n_external INTEGER, rank_change DOUBLE,
        built_at TIMESTAMP""",
    # Agreement with people (core/evaluation/human_agreement.py): one row per answer of a labelled answer
    # set, replaced per set_name by `finrag score agreement`: the person's label, the scorer's decision
    # (accept / reject / undecided, with its reason) and, when judged, the judge's, with its name.
    "eval.answer_agreement": """
        set_name VARCHAR, answer_id VARCHAR, qa_id VARCHAR, split VARCHAR, system VARCHAR, kind VARCHAR,
        question VARCHAR, reference VARCHAR, answer VARCHAR, label VARCHAR, label_note VARCHAR,
        human_decision VARCHAR, scorer_correctness DOUBLE, scorer_non_committal BOOLEAN, scorer_decision VARCHAR,
        scorer_reason VARCHAR, agrees BOOLEAN, judge_name VARCHAR, judge_label VARCHAR, judge_correctness DOUBLE,
        judge_decision VARCHAR, judge_reason VARCHAR, judge_cost_usd DOUBLE, judge_cached BOOLEAN,
        source_file VARCHAR, scored_at TIMESTAMP""",
}

# The latest corpus state: the newest row of core.corpus_versions by created_at (a row without one counts as
# older than any with one; equal times: the larger corpus_state, so the answer never depends on row order).
# Every reader (the session, its data fingerprint, the report, the web explorer) runs this query.
LATEST_CORPUS_VERSION_SQL = ("SELECT * FROM core.corpus_versions "
                             "ORDER BY created_at DESC NULLS LAST, corpus_state DESC LIMIT 1")

_log = logging.getLogger("finrag.warehouse")
LOCK_MARKERS = ("Could not set lock", "Conflicting lock", "database is locked", "IO Error")


class WarehouseBusy(RuntimeError):
    """Another process held the warehouse for longer than the retry budget (message: one line saying who)."""


def _is_lock_error(exc: Exception) -> bool:
    return any(m in str(exc) for m in LOCK_MARKERS)


def lock_holder(exc: Exception) -> str:
    """"PID 123 (python -m finrag_pipeline.cli sql ...)" from DuckDB's lock error, as far as it says."""
    m = re.search(r"PID (\d+)", str(exc))
    if not m:
        return "another process"
    pid = m.group(1)
    try:
        # one line, whatever the command line holds (NULs between arguments, newlines inside them)
        cmd = " ".join(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").split())
    except OSError:
        cmd = ""
    return f"PID {pid}" + (f" ({cmd[:120]})" if cmd else "")


def _lock_wait_seconds(default: float) -> float:
    try:
        return float(os.environ.get("FINRAG_LOCK_WAIT_SECONDS", default))
    except ValueError:
        return default


class Warehouse:
    """Thin handle on ``warehouse.duckdb``: open late, hold briefly, retry on another writer's lock."""

    def __init__(self, path: str | os.PathLike, *, retry_seconds: float | None = None):
        self.path = Path(path)
        # FINRAG_LOCK_WAIT_SECONDS overrides the default wait for another process's lock
        self.retry_seconds = _lock_wait_seconds(120.0) if retry_seconds is None else retry_seconds

    @contextlib.contextmanager
    def connect(self, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        deadline = started + self.retry_seconds
        delay = 0.05
        announced = False
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only and self.path.exists())
                break
            except duckdb.Error as exc:  # another process holds the lock
                waited = time.monotonic() - started
                if not _is_lock_error(exc):
                    raise WarehouseBusy(f"could not open {self.path}: {' '.join(str(exc).split())[:300]}") from exc
                if time.monotonic() > deadline:
                    raise WarehouseBusy(f"{self.path.name} is locked by {lock_holder(exc)}; gave up after "
                                        f"waiting {waited:.1f} s (FINRAG_LOCK_WAIT_SECONDS)") from None
                if not announced and waited > 2.0:  # one line, not one per retry
                    _log.warning("%s is locked by %s; waiting up to %.0f s", self.path.name, lock_holder(exc),
                                 self.retry_seconds)
                    announced = True
                # never sleep past the deadline: the wait reported is the wait configured
                time.sleep(max(0.0, min(delay + random.random() * delay, deadline - time.monotonic())))
                delay = min(delay * 2, 2.0)
        if announced:
            _log.warning("%s: lock obtained after waiting %.1f s", self.path.name, time.monotonic() - started)
        try:
            if not read_only:
                ensure_tables(con)
                ensure_views(con)
            yield con
        finally:
            con.close()

    def replace_rows(self, table: str, rows: Sequence[Mapping[str, Any]] | pd.DataFrame,
                     where: Mapping[str, Any]) -> int:
        """Replace every row of ``table`` matching ``where`` by ``rows``, in one transaction."""
        df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
        with self.connect() as con:
            con.execute("BEGIN TRANSACTION")
            try:
                replace_rows_in(con, table, df, where)
                con.execute("COMMIT")
            except Exception:
                con.execute("ROLLBACK")
                raise
        return len(df)

    def delete_rows(self, table: str, where: Mapping[str, Any]) -> None:
        with self.connect() as con:
            _delete_where(con, table, where)

    def query_df(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        with self.connect() as con:
            return con.execute(sql, params or []).df()

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        with self.connect() as con:
            con.execute(sql, params or [])


def replace_rows_in(con: duckdb.DuckDBPyConnection, table: str, df: pd.DataFrame | pa.Table,
                    where: Mapping[str, Any]) -> None:
    """DELETE ``table``'s rows matching ``where`` and INSERT ``df`` (pandas or Arrow), inside the caller's
    transaction."""
    _delete_where(con, table, where)
    if len(df):
        names = df.column_names if isinstance(df, pa.Table) else list(df.columns)
        cols = {r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()}
        missing = [c for c in names if c not in cols]
        if missing:
            raise ValueError(f"{table} has no columns {missing}")
        con.register("_incoming", df)
        col_list = ", ".join(names)
        con.execute(f"INSERT INTO {table} ({col_list}) SELECT {col_list} FROM _incoming")
        con.unregister("_incoming")


def _delete_where(con: duckdb.DuckDBPyConnection, table: str, where: Mapping[str, Any]) -> None:
    clauses, params = [], []
    for col, val in where.items():
        if isinstance(val, list | tuple | set):
            vals = list(val)
            if not vals:
                clauses.append("FALSE")
                continue
            clauses.append(f"{col} IN ({', '.join('?' * len(vals))})")
            params.extend(vals)
        else:
            clauses.append(f"{col} = ?")
            params.append(val)
    con.execute(f"DELETE FROM {table} WHERE {' AND '.join(clauses) or 'TRUE'}", params)


def ensure_tables(con: duckdb.DuckDBPyConnection, ddl: Mapping[str, str] | None = None) -> None:
    """Create missing tables, and add the columns a newer DDL has to a table an older version made
    (a migration: existing rows get NULL, which readers treat as "not recorded", e.g.
    qa.items.answer_values is derived on load by core/scoring/answer_contract.py)."""
    # One catalog query instead of two DDL statements per table: every writable connection calls this.
    existing: dict[str, set[str]] = {}
    for schema, table, column in con.execute(
            "SELECT table_schema, table_name, column_name FROM information_schema.columns").fetchall():
        existing.setdefault(f"{schema}.{table}", set()).add(column.lower())
    for name, columns in (ddl or TABLE_DDL).items():
        if name in existing:
            _add_missing_columns(con, name, columns, existing[name])
            continue
        schema = name.split(".")[0]
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({columns})")


def _add_missing_columns(con: duckdb.DuckDBPyConnection, name: str, columns: str, have: set[str]) -> None:
    """A warehouse written by an older version gains the columns added since (NULL for old rows)."""
    for col_def in re.split(r",\s*(?![^()]*\))", " ".join(columns.split())):
        col = col_def.split(" ", 1)[0]
        if col and col.lower() not in have:
            con.execute(f"ALTER TABLE {name} ADD COLUMN {col_def.split(' DEFAULT')[0]}")


def register_tables(ddl: Mapping[str, str]) -> None:
    """Stages that own more tables (eval.*) add their DDL here at import time."""
    TABLE_DDL.update(ddl)


def publish_snapshot(warehouse: Warehouse, snapshot: str | os.PathLike) -> Path:
    """Copy the warehouse to ``snapshot`` atomically (write a temp file, then ``os.replace``).

    Readers that opened the old snapshot keep their file handle; new readers see the new state whole.
    """
    snapshot = Path(snapshot)
    tmp = snapshot.with_suffix(f".tmp-{os.getpid()}")
    with warehouse.connect() as con:
        con.execute("CHECKPOINT")  # fold the WAL into the file so the copy is complete on its own
        shutil.copyfile(warehouse.path, tmp)
    os.replace(tmp, snapshot)
    return snapshot


@contextlib.contextmanager
def live_copy(warehouse_path: str | os.PathLike, scratch_dir: str | os.PathLike,
              attempts: int = 5) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to a private copy of the live warehouse (file + WAL), taken without opening it: an
    analyst reading "live" data never holds a lock the pipeline waits for. The copy is retried while a
    writer changes the file under it, and deleted afterwards."""
    src = Path(warehouse_path)
    wal = src.with_name(src.name + ".wal")
    scratch = Path(scratch_dir)
    scratch.mkdir(parents=True, exist_ok=True)
    target = scratch / f"live-{os.getpid()}-{time.monotonic_ns()}.duckdb"
    con = None
    try:
        for attempt in range(attempts):
            before = [(p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None for p in (src, wal)]
            shutil.copyfile(src, target)
            if wal.exists():
                shutil.copyfile(wal, target.with_name(target.name + ".wal"))
            after = [(p.stat().st_mtime_ns, p.stat().st_size) if p.exists() else None for p in (src, wal)]
            if before == after:
                try:
                    con = duckdb.connect(str(target))  # replays the copied WAL into the private copy
                    break
                except duckdb.Error:
                    if attempt == attempts - 1:
                        raise
            time.sleep(0.2 * (attempt + 1))
        if con is None:
            raise WarehouseBusy(f"{src.name} kept changing while it was copied ({attempts} attempts)")
        yield con
    finally:
        if con is not None:
            con.close()
        for leftover in (target, target.with_name(target.name + ".wal")):
            leftover.unlink(missing_ok=True)


def rows_of(records: Iterable[Any]) -> list[dict[str, Any]]:
    return [r.to_row() for r in records]
