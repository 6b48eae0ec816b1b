"""Every read of the web explorer, in one module: the analysts' snapshot, opened read-only.

The snapshot (``warehouse_read.duckdb``) is replaced atomically by the pipeline (``os.replace`` in
:func:`~finrag_pipeline.core.warehouse.publish_snapshot`), so the app never opens the live
warehouse and never blocks a writer. :class:`Snapshot` notices a new file (inode, size, mtime) on
the next request and reopens; results derived from the snapshot are cached per generation.

Numbers come from the marts (or, before the first dbt build, from the same loaders the HTML report
uses: core/reporting/report.py), never from a second implementation; the current rows and their scoring
are the warehouse views ``eval.retrieval_current`` / ``eval.answer_current`` (core/scoring/results_views.py). Columns are read by name and
optional columns are looked up with ``.get``: other branches add and rename scoring columns.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from finrag_pipeline.core.models import Chunk, Page, QAItem, TableRow
from finrag_pipeline.core.records import from_row, qa_item_from_row, table_row_from_row
from finrag_pipeline.core.reporting import report
from finrag_pipeline.core.retrieval.resources import chunk_from_row
from finrag_pipeline.core.scoring import metric_registry as registry
from finrag_pipeline.core.warehouse import LATEST_CORPUS_VERSION_SQL

# Leaderboard metrics shown as columns (the registry's board lists; more are in the mart; the page shows what exists).
BOARD_METRICS = registry.BOARD_RETRIEVAL_METRICS
BREAKDOWN_FILTERS = ("question_type", "company", "fiscal_year")
ANSWER_BOARD_METRICS = registry.BOARD_ANSWER_METRICS


class SnapshotMissing(RuntimeError):
    """No analysts' snapshot has been published yet."""


# What a page shows as "not ready yet" (503 with the message): no snapshot, or results without their marts.
NOT_READY = (SnapshotMissing, report.MartsNotBuilt)


class Snapshot:
    """A read-only DuckDB connection to the snapshot file, reopened when a new one is published."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.RLock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._stamp: tuple | None = None
        self.generation = 0
        self.opened_at: datetime | None = None
        self._cache: dict[Any, Any] = {}

    def _file_stamp(self) -> tuple | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    def refresh(self) -> bool:
        """Reopen when the file changed; True if a new snapshot was picked up."""
        stamp = self._file_stamp()
        with self._lock:
            if stamp == self._stamp and self._con is not None:
                return False
            if stamp is None:
                self._close()
                self._stamp = None
                return False
            # Close first: DuckDB keeps one database instance per path in a process, so a connection
            # opened while the old one lives would read the replaced file's old contents.
            self._close()
            self._con, self._stamp = duckdb.connect(str(self.path), read_only=True), stamp
            self.generation += 1
            self.opened_at = datetime.fromtimestamp(stamp[2] / 1e9)
            self._cache.clear()
            return True

    def _close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def close(self) -> None:
        with self._lock:
            self._close()

    def df(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        with self._lock:
            if self._con is None:
                self.refresh()
            if self._con is None:
                raise SnapshotMissing(f"no analysts' snapshot at {self.path} yet (the pipeline publishes it "
                                      "after a successful run: `finrag demo` or `finrag ingest`)")
            return self._con.execute(sql, list(params or [])).df()

    def with_con(self, fn: Callable[[duckdb.DuckDBPyConnection], Any]) -> Any:
        """Run one of the report's loaders (they take a connection) under the lock."""
        with self._lock:
            if self._con is None:
                self.refresh()
            if self._con is None:
                raise SnapshotMissing(f"no analysts' snapshot at {self.path} yet")
            return fn(self._con)

    def cached(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()`` once per snapshot generation (the file is immutable until replaced)."""
        with self._lock:
            full = (self.generation, key)
            if full not in self._cache:
                self._cache[full] = make()
            return self._cache[full]

    def has_table(self, schema: str, name: str) -> bool:
        return self.cached(("has", schema, name), lambda: self.with_con(
            lambda con: report._has_table(con, schema, name)))

    def columns(self, schema: str, name: str) -> list[str]:
        return self.cached(("cols", schema, name), lambda: self.df(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ? "
            "ORDER BY ordinal_position", [schema, name])["column_name"].tolist())


class ReadOnlyWarehouse:
    """The part of :class:`~finrag_pipeline.core.warehouse.Warehouse` that retrieval reads
    (``query_df``), answered from the snapshot: the session's chunk store and catalog load from it."""

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot
        self.path = snapshot.path

    def query_df(self, sql: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        return self.snapshot.df(sql, params)


# ---------------------------------------------------------------------------------------------
# Corpus state


@dataclass(frozen=True)
class CorpusStateInfo:
    corpus_state: str
    n_filings: int
    n_chunks: int | None
    created_at: Any
    snapshot_published: datetime | None
    generation: int


def corpus_state(snap: Snapshot) -> CorpusStateInfo:
    def make() -> CorpusStateInfo:
        if not snap.has_table("core", "corpus_versions"):
            return CorpusStateInfo("unknown", 0, None, None, snap.opened_at, snap.generation)
        df = snap.df(LATEST_CORPUS_VERSION_SQL)
        if df.empty:
            return CorpusStateInfo("empty", 0, None, None, snap.opened_at, snap.generation)
        r = df.iloc[0]
        return CorpusStateInfo(str(r["corpus_state"]), int(r.get("n_filings") or 0),
                               None if pd.isna(r.get("n_chunks")) else int(r["n_chunks"]), r.get("created_at"),
                               snap.opened_at, snap.generation)
    return snap.cached("corpus_state", make)


# ---------------------------------------------------------------------------------------------
# Leaderboard


def latest_retrieval_rows(snap: Snapshot) -> pd.DataFrame:
    """Current retrieval rows scored as the marts score them (report's loader), with the question's
    type, company and fiscal year attached for the breakdown filters."""
    def make() -> pd.DataFrame:
        rows = snap.with_con(lambda con: report._latest_retrieval_rows(con))
        if rows.empty:
            return rows
        if snap.has_table("qa", "items"):
            qtypes = snap.df("SELECT qa_id, any_value(question_type) AS qa_type, any_value(question) AS question "
                             "FROM qa.items GROUP BY qa_id")
            rows = rows.merge(qtypes, on="qa_id", how="left")
            rows["question_type"] = rows["question_type"].fillna(rows["qa_type"])
        rows["question_type"] = rows["question_type"].fillna("unknown")
        filings = snap.df("SELECT filing_id, company, fiscal_year FROM core.filings")
        rows = rows.merge(filings, on="filing_id", how="left")
        # nullable integers: a filing missing from the catalog must not turn 2022 into "2022.0"
        rows["fiscal_year"] = pd.to_numeric(rows["fiscal_year"], errors="coerce").astype("Int64")
        return rows
    return snap.cached("latest_retrieval_rows", make)


def filter_options(snap: Snapshot) -> dict[str, list[Any]]:
    def make() -> dict[str, list[Any]]:
        rows = latest_retrieval_rows(snap)
        if rows.empty:
            return {k: [] for k in ("scope", "k", *BREAKDOWN_FILTERS)}
        return {c: sorted(rows[c].dropna().unique().tolist()) for c in ("scope", "k", *BREAKDOWN_FILTERS)}
    return snap.cached("filter_options", make)


# The "metrics by <dimension>" marts behind each breakdown filter of the leaderboard page.
BREAKDOWN_MARTS = {"question_type": "mart_metrics_by_question_type", "company": "mart_metrics_by_company",
                   "fiscal_year": "mart_metrics_by_fiscal_year"}


def leaderboard(snap: Snapshot, *, scope: str | None = None, k: int | None = None,
                question_type: str | None = None, company: str | None = None,
                fiscal_year: int | None = None) -> tuple[pd.DataFrame, str]:
    """(board, source). Unfiltered: the leaderboard mart (bootstrap intervals, paired comparison with the
    best). Filtered by question type, company or fiscal year: that dimension's breakdown mart (its key
    metrics with the marts' intervals). Means and intervals are always the marts' own, never recomputed
    here; the breakdown marts hold one dimension each, so one breakdown filter applies at a time.
    ``report.MartsNotBuilt`` when the snapshot has results but no marts."""
    breakdown = {"question_type": question_type, "company": company, "fiscal_year": fiscal_year}
    breakdown = {c: v for c, v in breakdown.items() if v not in (None, "")}
    if len(breakdown) > 1:
        return pd.DataFrame(), ("one breakdown at a time (the marts break the leaderboard down by one "
                                f"dimension): choose one of {', '.join(breakdown)}")
    if not breakdown:
        board = snap.cached("board", lambda: snap.with_con(report.load_leaderboard))
        source = "marts.mart_retriever_leaderboard"
    else:
        ((column, value),) = breakdown.items()
        mart = BREAKDOWN_MARTS[column]
        board = snap.with_con(lambda con: report.load_breakdown(con, mart, column, value))
        source = f"marts.{mart} filtered by {column}={value}"
    if board.empty:
        return board, source
    if scope:
        board = board[board["scope"] == scope]
    if k is not None:
        board = board[board["k"] == k]
    sort = [c for c in ("scope", "k") if c in board.columns]
    rank_by = "ndcg_page_mean" if "ndcg_page_mean" in board.columns else None
    board = board.sort_values([*sort, rank_by] if rank_by else sort,
                              ascending=[True] * len(sort) + ([False] if rank_by else []), na_position="last")
    return board.reset_index(drop=True), source


def answer_quality(snap: Snapshot) -> pd.DataFrame:
    """Answer quality per model / prompt / temperature: marts.mart_answer_quality."""
    return snap.cached("answer_quality", lambda: snap.with_con(lambda con: report.load_answer_quality(con)[0]))


# ---------------------------------------------------------------------------------------------
# Questions


def config_questions(snap: Snapshot, config_name: str, scope: str | None = None) -> pd.DataFrame:
    """The current per-question rows of one configuration (worst first)."""
    rows = latest_retrieval_rows(snap)
    if rows.empty:
        return rows
    rows = rows[rows["config_name"] == config_name]
    if scope:
        rows = rows[rows["scope"] == scope]
    order = [c for c in ("ndcg_page", "hit_page", "qa_id") if c in rows.columns]
    return rows.sort_values(order, na_position="first").reset_index(drop=True)


def qa_item(snap: Snapshot, qa_id: str) -> QAItem | None:
    # every question once per snapshot: a DuckDB round trip costs milliseconds, a dict lookup nothing
    def make() -> dict[str, QAItem]:
        if not snap.has_table("qa", "items"):
            return {}
        out: dict[str, QAItem] = {}
        for r in snap.df("SELECT * FROM qa.items ORDER BY qa_id").to_dict("records"):
            out.setdefault(r["qa_id"], qa_item_from_row(r))
        return out
    return snap.cached("qa_items", make).get(qa_id)


def question_results(snap: Snapshot, qa_id: str) -> pd.DataFrame:
    def make() -> dict[str, pd.DataFrame]:
        rows = latest_retrieval_rows(snap)
        return {} if rows.empty else {k: g.reset_index(drop=True) for k, g in rows.groupby("qa_id", sort=False)}
    rows = snap.cached("results_by_question", make).get(qa_id)
    return rows if rows is not None else latest_retrieval_rows(snap).iloc[:0]


def latest_answers(snap: Snapshot) -> pd.DataFrame:
    def make() -> pd.DataFrame:
        return snap.with_con(report._latest_answer_rows)
    return snap.cached("latest_answers", make)


def question_answers(snap: Snapshot, qa_id: str) -> list[dict[str, Any]]:
    def make() -> dict[str, list[dict[str, Any]]]:
        by_question: dict[str, list[dict[str, Any]]] = {}
        df = latest_answers(snap)
        for r in ([] if df.empty else df.sort_values("config_name").to_dict("records")):
            r["citations"] = parse_citations(r.get("citations"))
            by_question.setdefault(r["qa_id"], []).append(r)
        return by_question
    return snap.cached("answers_by_question", make).get(qa_id, [])


def parse_citations(raw: Any) -> list[tuple[str, int, str | None]]:
    """eval.answer_results.citations (JSON list of [filing, page, chunk_id]) -> tuples."""
    if raw is None or (isinstance(raw, float) and raw != raw):
        return []
    try:
        items = json.loads(raw) if isinstance(raw, str) else list(raw)
    except (TypeError, ValueError):
        return []
    out = []
    for c in items:
        if isinstance(c, list | tuple) and len(c) >= 2:
            out.append((str(c[0]), int(c[1]), str(c[2]) if len(c) > 2 and c[2] else None))
        elif isinstance(c, dict) and "page" in c:
            out.append((str(c.get("filing_id")), int(c["page"]), c.get("chunk_id")))
    return out


# ---------------------------------------------------------------------------------------------
# Filings, pages, chunks


def filing(snap: Snapshot, filing_id: str) -> dict[str, Any] | None:
    return snap.cached("filings", lambda: {r["filing_id"]: r for r in snap.df(
        "SELECT * FROM core.filings").to_dict("records")}).get(filing_id)


def pages(snap: Snapshot, filing_id: str) -> list[Page]:
    return snap.cached(("pages", filing_id), lambda: [from_row(Page, r) for r in snap.df(
        "SELECT * FROM core.pages WHERE filing_id = ? ORDER BY page_number", [filing_id]).to_dict("records")])


def chunks(snap: Snapshot, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
    ids = sorted({c for c in chunk_ids if c})
    if not ids:
        return {}
    df = snap.df(f"SELECT * FROM core.chunks WHERE chunk_id IN ({', '.join('?' * len(ids))})", ids)
    return {r["chunk_id"]: chunk_from_row(r) for r in df.to_dict("records")}


def table_row(snap: Snapshot, filing_id: str, table_id: str, row_index: int) -> TableRow | None:
    """One table row, from the filing's rows loaded once per snapshot."""
    rows = snap.cached(("table_rows", filing_id), lambda: {
        (r["table_id"], int(r["row_index"])): table_row_from_row(r) for r in snap.df(
            "SELECT * FROM core.table_rows WHERE filing_id = ?", [filing_id]).to_dict("records")})
    return rows.get((table_id, int(row_index)))


# ---------------------------------------------------------------------------------------------
# Failure browser


def question_difficulty(snap: Snapshot) -> pd.DataFrame:
    """marts.mart_question_difficulty (all of it); ``report.MartsNotBuilt`` when results exist without it."""
    return snap.cached("difficulty", lambda: snap.with_con(lambda con: report.read_mart(
        con, "mart_question_difficulty",
        "SELECT * FROM marts.mart_question_difficulty ORDER BY scope, worst_rank, qa_id")))


def all_missed(snap: Snapshot, scope: str | None = None) -> pd.DataFrame:
    """Questions no configuration finds a relevant page for (hit_page mean 0 over configurations)."""
    df = question_difficulty(snap)
    if df.empty or "hit_page_mean" not in df.columns:
        return df.iloc[:0] if not df.empty else df
    df = df[df["hit_page_mean"].fillna(-1) == 0]
    return df[df["scope"] == scope] if scope else df


def hardest(snap: Snapshot, scope: str | None = None, top: int = 25) -> pd.DataFrame:
    """The questions with the lowest mean score over configurations (the mart's worst_rank order)."""
    df = question_difficulty(snap)
    if df.empty:
        return df
    df = df[df["scope"] == scope] if scope else df
    order = [c for c in ("worst_rank", "ndcg_page_mean", "hit_page_mean", "qa_id") if c in df.columns]
    return df.sort_values(order, na_position="last").head(top)


def disagreements(snap: Snapshot, metric: str = "ndcg_page", scope: str | None = None,
                  top: int = 25) -> pd.DataFrame:
    """Questions where two configurations of the same k differ most on ``metric``: the best and the
    worst configuration, their values and the spread."""
    def make() -> pd.DataFrame:
        rows = latest_retrieval_rows(snap)
        if rows.empty or metric not in rows.columns:
            return pd.DataFrame()
        r = rows[rows[metric].notna()]
        keys = ["qa_id", "filing_id", "scope", "k"]
        best = r.sort_values([metric, "config_name"], ascending=[False, True]).drop_duplicates(keys)
        worst = r.sort_values([metric, "config_name"], ascending=[True, True]).drop_duplicates(keys)
        m = best[[*keys, "config_name", metric, "question", "question_type"]].merge(
            worst[[*keys, "config_name", metric]], on=keys, suffixes=("_best", "_worst"))
        m["spread"] = m[f"{metric}_best"] - m[f"{metric}_worst"]
        m = m[m["spread"] > 0].sort_values(["spread", "k", "qa_id"], ascending=[False, True, True])
        return m.drop_duplicates(["qa_id", "scope"]).reset_index(drop=True)   # one row per question: its widest k
    df = snap.cached(("disagreements", metric), make)
    if scope and not df.empty:
        df = df[df["scope"] == scope]
    return df.head(top)


# ---------------------------------------------------------------------------------------------
# Corpus


def corpus_filings(snap: Snapshot) -> pd.DataFrame:
    def make() -> pd.DataFrame:
        has = {t: snap.has_table(*t.split(".")) for t in ("core.table_rows", "core.xbrl_facts", "core.chunks",
                                                         "qa.items")}
        count = {
            "tables": "(SELECT count(DISTINCT table_id) FROM core.table_rows t WHERE t.filing_id = f.filing_id)"
                      if has["core.table_rows"] else "NULL",
            "facts": "(SELECT count(*) FROM core.xbrl_facts x WHERE x.filing_id = f.filing_id)"
                     if has["core.xbrl_facts"] else "NULL",
            "chunks": "(SELECT count(*) FROM core.chunks c WHERE c.filing_id = f.filing_id AND c.is_leaf)"
                      if has["core.chunks"] else "NULL",
            "questions": "(SELECT count(*) FROM qa.items q WHERE q.filing_id = f.filing_id)"
                         if has["qa.items"] else "NULL",
        }
        cols = snap.columns("core", "filings")
        extra = ", ".join(f"f.{c}" for c in ("ticker", "source_format", "original_name", "registered_at") if c in cols)
        status = "CASE WHEN coalesce(f.removed, FALSE) THEN 'removed' ELSE 'active' END" \
            if "removed" in cols else "'active'"
        return snap.df(f"""
            SELECT f.filing_id, f.company, f.fiscal_year, {status} AS status, f.n_pages AS pages,
                   {count['tables']} AS tables, {count['facts']} AS facts, {count['chunks']} AS chunks,
                   {count['questions']} AS questions{', ' + extra if extra else ''}
            FROM core.filings f ORDER BY f.filing_id""")
    return snap.cached("corpus_filings", make)


def ingest_log(snap: Snapshot, limit: int = 200) -> pd.DataFrame:
    if not snap.has_table("core", "ingest_log"):
        return pd.DataFrame()
    return snap.df("SELECT * FROM core.ingest_log ORDER BY logged_at DESC LIMIT ?", [limit])


def last_runs(snap: Snapshot, limit: int = 50) -> pd.DataFrame:
    """The evaluation runs of the newest Dagster run (what the last automation tick re-ran), else the
    newest runs."""
    if not snap.has_table("eval", "runs"):
        return pd.DataFrame()
    return snap.df("""
        WITH newest AS (SELECT dagster_run_id FROM eval.runs WHERE dagster_run_id IS NOT NULL
                        ORDER BY coalesce(finished_at, started_at) DESC LIMIT 1)
        SELECT kind, config_name, filing_id, scope, status, n_questions, corpus_state, dagster_run_id,
               started_at, finished_at
        FROM eval.runs
        WHERE dagster_run_id = (SELECT dagster_run_id FROM newest) OR (SELECT count(*) FROM newest) = 0
        ORDER BY coalesce(finished_at, started_at) DESC, config_name LIMIT ?""", [limit])
