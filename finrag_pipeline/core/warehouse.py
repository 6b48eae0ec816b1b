"""The DuckDB warehouse: one file, schemas ``core``, ``qa``, ``eval``; idempotent per-partition writes.

DuckDB allows one writer process per file. Dagster runs are separate processes, so every write
opens the file briefly, retries with backoff while another process holds it, and replaces a
partition's rows in a single transaction (DELETE + INSERT), so a reader never sees half a partition
and a re-run never duplicates rows. Analysts read ``warehouse_read.duckdb``, a snapshot swapped in
atomically by :func:`publish_snapshot`, so an open analyst session never blocks the pipeline.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

# Table DDL, by qualified name. Column docs live in docs/WAREHOUSE.md.
TABLE_DDL: dict[str, str] = {
    "core.filings": """
        filing_id VARCHAR PRIMARY KEY, content_sha256 VARCHAR NOT NULL, source_path VARCHAR,
        original_name VARCHAR, source_format VARCHAR, company VARCHAR, ticker VARCHAR, cik VARCHAR,
        form_type VARCHAR, fiscal_year INTEGER, period_end_date DATE, fiscal_year_end VARCHAR,
        n_pages INTEGER, metadata_source VARCHAR, registered_at TIMESTAMP DEFAULT current_timestamp,
        removed BOOLEAN DEFAULT FALSE""",
    "core.pages": """
        filing_id VARCHAR, page_number INTEGER, text VARCHAR, section VARCHAR, section_title VARCHAR,
        printed_page_label VARCHAR, has_tables BOOLEAN, char_count INTEGER""",
    "core.table_rows": """
        filing_id VARCHAR, table_id VARCHAR, row_index INTEGER, page_number INTEGER, section VARCHAR,
        table_title VARCHAR, unit VARCHAR, unit_text VARCHAR, row_label VARCHAR, headers VARCHAR,
        cells VARCHAR""",
    "core.xbrl_facts": """
        filing_id VARCHAR, fact_id VARCHAR, concept VARCHAR, value DOUBLE, value_text VARCHAR,
        unit VARCHAR, decimals INTEGER, period_type VARCHAR, period_start DATE, period_end DATE,
        dimensions VARCHAR, context_id VARCHAR, scale INTEGER, page_number INTEGER""",
    "core.chunks": """
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
        difficulty VARCHAR, status VARCHAR, source VARCHAR, metadata VARCHAR""",
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
    # A NULL metric on an 'ok' row was not computable; `notes` says why (docs/METRICS.md).
    "eval.retrieval_results": """
        run_id VARCHAR, filing_id VARCHAR, scope VARCHAR, config_name VARCHAR, retriever VARCHAR,
        k INTEGER, chunking VARCHAR, config_hash VARCHAR, qa_id VARCHAR, question_type VARCHAR,
        n_retrieved INTEGER, first_relevant_rank_chunk INTEGER, first_relevant_rank_page INTEGER,
        hit_chunk DOUBLE, mrr_chunk DOUBLE, precision_chunk DOUBLE, recall_chunk DOUBLE,
        ap_chunk DOUBLE, ndcg_chunk DOUBLE, hit_page DOUBLE, mrr_page DOUBLE, precision_page DOUBLE,
        recall_page DOUBLE, ap_page DOUBLE, ndcg_page DOUBLE, all_evidence_hit DOUBLE,
        latency_ms DOUBLE, status VARCHAR, error VARCHAR, notes VARCHAR, corpus_state VARCHAR,
        n_filings_in_corpus INTEGER, evaluated_at TIMESTAMP""",
    # One row per question x answer configuration.
    "eval.answer_results": """
        run_id VARCHAR, filing_id VARCHAR, config_name VARCHAR, config_hash VARCHAR, model VARCHAR,
        prompt_type VARCHAR, temperature DOUBLE, top_p DOUBLE, retriever VARCHAR, k INTEGER,
        qa_id VARCHAR, question_type VARCHAR, answer VARCHAR, citations VARCHAR,
        response_state VARCHAR, figure_match DOUBLE, grounded DOUBLE, period_ok DOUBLE,
        citation_precision DOUBLE, citation_recall DOUBLE, faithfulness DOUBLE,
        answer_relevancy DOUBLE, state_correct DOUBLE, judge_reasons VARCHAR, notes VARCHAR, prompt_tokens INTEGER,
        completion_tokens INTEGER, latency_ms DOUBLE, cost_usd DOUBLE, error VARCHAR,
        evaluated_at TIMESTAMP""",
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
    # figure_match) on the same questions: mean_diff = config - best, paired CI, permutation p-value.
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
}

LOCK_MARKERS = ("Could not set lock", "Conflicting lock", "database is locked", "IO Error")


class WarehouseBusy(RuntimeError):
    """Another process held the warehouse for longer than the retry budget."""


def _is_lock_error(exc: Exception) -> bool:
    return any(m in str(exc) for m in LOCK_MARKERS)


class Warehouse:
    """Thin handle on ``warehouse.duckdb``: open late, hold briefly, retry on another writer's lock."""

    def __init__(self, path: str | os.PathLike, *, retry_seconds: float = 120.0):
        self.path = Path(path)
        self.retry_seconds = retry_seconds

    @contextlib.contextmanager
    def connect(self, *, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.retry_seconds
        delay = 0.05
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only and self.path.exists())
                break
            except duckdb.Error as exc:  # another process holds the write lock
                if not _is_lock_error(exc) or time.monotonic() > deadline:
                    raise WarehouseBusy(f"could not open {self.path}: {exc}") from exc
                time.sleep(delay + random.random() * delay)
                delay = min(delay * 2, 2.0)
        try:
            if not read_only:
                ensure_tables(con)
            yield con
        finally:
            con.close()

    def replace_rows(self, table: str, rows: Sequence[Mapping[str, Any]] | pd.DataFrame,
                     where: Mapping[str, Any]) -> int:
        """Replace every row of ``table`` matching ``where`` by ``rows``, in one transaction."""
        df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
        with self.connect() as con:
            cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
            con.execute("BEGIN TRANSACTION")
            try:
                _delete_where(con, table, where)
                if len(df):
                    missing = [c for c in df.columns if c not in cols]
                    if missing:
                        raise ValueError(f"{table} has no columns {missing}")
                    con.register("_incoming", df)
                    col_list = ", ".join(df.columns)
                    con.execute(f"INSERT INTO {table} ({col_list}) SELECT {col_list} FROM _incoming")
                    con.unregister("_incoming")
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
    # One catalog query instead of two DDL statements per table: every writable connection calls this.
    existing = {f"{schema}.{table}" for schema, table in con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables").fetchall()}
    for name, columns in (ddl or TABLE_DDL).items():
        if name in existing:
            continue
        schema = name.split(".")[0]
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({columns})")


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


def rows_of(records: Iterable[Any]) -> list[dict[str, Any]]:
    return [r.to_row() for r in records]
