"""Bootstrap leaderboard and paired comparisons over the CURRENT evaluation rows.

``eval.retrieval_results`` / ``eval.answer_results`` keep every run. Which rows are current (the newest
run of each configuration x filing x scope) and how they score is defined once, by the warehouse views
``eval.retrieval_current`` / ``eval.answer_current`` (core/scoring/results_views.py), which the dbt
marts, the report and the web explorer read too. From them this module derives two snapshot tables
(fully replaced on every build):

* ``eval.leaderboard`` (LONG: one row per configuration x metric): mean, seeded percentile
  bootstrap CI (:func:`stats.bootstrap_ci` through the runner's :func:`aggregate`, so failures count
  as 0, ``no_relevant`` questions are left out and NULL = not computable lowers ``coverage``), ``n``,
  ``n_total``, ``coverage``, ``n_failed``. Long, so a new metric needs no DDL change; the dbt mart
  pivots it.
* ``eval.comparisons`` (LONG: one row per configuration x metric): every configuration against the
  BEST configuration of its comparison group on the same questions (inner join on filing, scope,
  qa_id): ``mean_diff`` = config - best, paired-bootstrap CI, two-sided sign-flip permutation
  p-value, ``distinguishable`` = the CI excludes 0. Groups: retrieval -> (scope, k), best by
  page nDCG (ties: page hit, then name); answers -> all answer configurations, best by figure
  match (ties: state_correct, then name). The best configuration has its own row (``is_best``,
  difference 0, p = 1).

Pure core: no Dagster. :func:`build_eval_statistics` reads and writes a :class:`Warehouse`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb
import pandas as pd

from finrag_pipeline.core.evaluation.runner import (
    PAIR_ON,
    RETRIEVAL_METRICS,
    StatsConfig,
    aggregate,
    compare_scored,
    scored_rows,
)
from finrag_pipeline.core.scoring.metric_registry import (
    ANSWER_METRICS,
    ANSWER_RANK_BY,
    HEADLINE_ANSWER_METRICS,
    HEADLINE_RETRIEVAL_METRICS,
    RETRIEVAL_KEYS,
    RETRIEVAL_RANK_BY,
)
from finrag_pipeline.core.scoring.results_views import ANSWER_CURRENT, RETRIEVAL_CURRENT, ensure_views
from finrag_pipeline.core.warehouse import ensure_tables

LEADERBOARD_TABLE = "eval.leaderboard"
COMPARISONS_TABLE = "eval.comparisons"

ANSWER_KEYS = ("config_name", "model", "prompt_type", "temperature", "top_p", "retriever", "k")
RETRIEVAL_BEST_BY = RETRIEVAL_RANK_BY       # primary, tie-break (the registry's)
ANSWER_BEST_BY = ANSWER_RANK_BY

CONFIG_COLUMNS = ("kind", "scope", "config_name", "retriever", "k", "chunking", "model", "prompt_type",
                  "temperature", "top_p")
LEADERBOARD_COLUMNS = (
    *CONFIG_COLUMNS, "metric", "mean", "ci_low", "ci_high", "n", "n_total", "coverage", "n_questions",
    "n_no_relevant", "n_failed", "n_filings", "confidence", "n_boot", "seed", "built_at")
COMPARISON_COLUMNS = (
    *CONFIG_COLUMNS, "best_config_name", "best_by", "is_best", "metric", "mean", "best_mean", "mean_diff",
    "ci_low", "ci_high", "p_value", "n_pairs", "distinguishable", "confidence", "n_boot", "n_perm", "seed",
    "built_at")

# DDL: core/warehouse.TABLE_DDL["eval.leaderboard"] / ["eval.comparisons"] (docs: docs/METRICS.md).


@dataclass(frozen=True)
class EvalStatistics:
    """The two derived tables, in the column order of their DDL."""

    leaderboard: pd.DataFrame
    comparisons: pd.DataFrame


# ---------------------------------------------------------------------------------------------
# Current rows: the warehouse views of core/scoring/results_views.py (never re-implemented here)


def current_rows(retrieval_results: pd.DataFrame | None = None, answer_results: pd.DataFrame | None = None,
                 runs: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(``eval.retrieval_current``, ``eval.answer_current``) of raw rows held in memory: they are written
    into an in-memory DuckDB with the warehouse's DDL and its results views, and read back in the order
    they were given (so a seeded bootstrap resamples the same rows)."""
    con = duckdb.connect()
    try:
        ensure_tables(con)
        ensure_views(con)
        for table, df in (("eval.retrieval_results", retrieval_results), ("eval.answer_results", answer_results),
                          ("eval.runs", runs)):
            if df is None or df.empty:
                continue
            have = {r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()}
            con.register("_incoming", df[[c for c in df.columns if c in have]])
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
            con.unregister("_incoming")
        return _read_current(con.execute)
    finally:
        con.close()


def _read_current(execute: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (execute(f"SELECT * FROM {RETRIEVAL_CURRENT} ORDER BY source_row").df(),
            execute(f"SELECT * FROM {ANSWER_CURRENT} ORDER BY source_row").df())


def latest_retrieval_rows(results: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """``eval.retrieval_current`` of these raw rows (``runs``: eval.runs, which orders the runs)."""
    return current_rows(results, None, runs)[0]


def latest_answer_rows(results: pd.DataFrame) -> pd.DataFrame:
    """``eval.answer_current`` of these raw rows."""
    return current_rows(None, results)[1]


# ---------------------------------------------------------------------------------------------
# Leaderboard


def _leaderboard(rows: pd.DataFrame, kind: str, keys: Sequence[str], metrics: Sequence[str],
                 stats: StatsConfig) -> pd.DataFrame:
    if rows.empty:
        return pd.DataFrame(columns=list(LEADERBOARD_COLUMNS))
    metrics = [m for m in metrics if m in rows.columns]
    agg = aggregate(rows, by=list(keys), metrics=metrics, n_boot=stats.n_boot, confidence=stats.confidence,
                    seed=stats.seed)
    n_filings = rows.groupby(list(keys), dropna=False)["filing_id"].nunique().rename("n_filings").reset_index()
    agg = agg.merge(n_filings, on=list(keys), how="left")
    agg = agg.rename(columns={"n_scored": "n", "n_rows": "n_questions", "n_error": "n_failed"})
    agg["kind"] = kind
    agg["confidence"], agg["n_boot"], agg["seed"] = stats.confidence, stats.n_boot, stats.seed
    return _frame(agg, LEADERBOARD_COLUMNS)


def _frame(df: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """``df`` with exactly ``columns`` (missing ones NULL), NaN -> None so DuckDB stores NULL."""
    out = pd.DataFrame({c: df.get(c) for c in columns}, index=df.index)
    return out.astype(object).where(out.notna(), None).reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# Paired comparisons against the best configuration


def _best(board: pd.DataFrame, best_by: Sequence[str]) -> str | None:
    """Config with the highest mean of best_by[0] (then best_by[1], then the smaller name); None if
    no configuration has a value of the primary metric."""
    wide = board.pivot_table(index="config_name", columns="metric", values="mean", aggfunc="first", dropna=False)
    wide = wide.reindex(columns=list(best_by))
    wide = wide[wide[best_by[0]].notna()]
    if wide.empty:
        return None
    ranked = wide.reset_index().sort_values([*best_by, "config_name"], ascending=[False] * len(best_by) + [True],
                                            na_position="last", kind="mergesort")
    return str(ranked["config_name"].iloc[0])


def _comparisons(rows: pd.DataFrame, board: pd.DataFrame, kind: str, group_keys: Sequence[str],
                 best_by: Sequence[str], metrics: Sequence[str], stats: StatsConfig) -> pd.DataFrame:
    out: list[dict[str, Any]] = []
    if rows.empty or board.empty:
        return pd.DataFrame(columns=list(COMPARISON_COLUMNS))
    groups = board.groupby(list(group_keys), dropna=False, sort=True) if group_keys else [((), board)]
    for key, gboard in groups:
        key = key if isinstance(key, tuple) else (key,)
        mask = pd.Series(True, index=rows.index)
        for col, val in zip(group_keys, key, strict=True):
            mask &= rows[col].isna() if pd.isna(val) else rows[col].eq(val)
        grows = rows[mask]
        best = _best(gboard, best_by)
        if best is None:
            continue
        means = gboard.set_index(["config_name", "metric"])["mean"].to_dict()
        configs = gboard.drop_duplicates("config_name").set_index("config_name")
        pair_on = [c for c in PAIR_ON if c in grows.columns]
        # Each config's rows are split out and scored once, not once per comparison.
        scored = {cfg: scored_rows(g) for cfg, g in grows.groupby("config_name", sort=False)}
        empty = grows.iloc[:0]
        for cfg in configs.index:
            for metric in metrics:
                if metric not in grows.columns:
                    continue
                res = compare_scored(scored.get(best, empty), scored.get(cfg, empty), metric, pair_on,
                                     n_boot=stats.n_boot, n_perm=stats.n_perm, seed=stats.seed)
                lo, hi = res["ci_low"], res["ci_high"]
                out.append({
                    **{c: configs.at[cfg, c] for c in CONFIG_COLUMNS if c in configs.columns},
                    "config_name": cfg, "best_config_name": best, "best_by": best_by[0], "is_best": cfg == best,
                    "metric": metric, "mean": means.get((cfg, metric)), "best_mean": means.get((best, metric)),
                    "mean_diff": res["mean_diff"], "ci_low": lo, "ci_high": hi, "p_value": res["p_value"],
                    "n_pairs": res["n_pairs"],
                    "distinguishable": None if lo is None or hi is None else bool(lo > 0 or hi < 0),
                })
    if not out:
        return pd.DataFrame(columns=list(COMPARISON_COLUMNS))
    df = pd.DataFrame(out)
    df["confidence"], df["n_boot"], df["n_perm"], df["seed"] = (stats.confidence, stats.n_boot, stats.n_perm,
                                                                stats.seed)
    return _frame(df, COMPARISON_COLUMNS)


# ---------------------------------------------------------------------------------------------
# Entry points


def compute_statistics(retrieval_results: pd.DataFrame | None, answer_results: pd.DataFrame | None = None,
                       runs: pd.DataFrame | None = None, stats: StatsConfig | None = None, *,
                       built_at: datetime | None = None,
                       retrieval_metrics: Sequence[str] = RETRIEVAL_METRICS,
                       answer_metrics: Sequence[str] = ANSWER_METRICS) -> EvalStatistics:
    """Leaderboard and comparisons from raw ``eval.*`` rows (any history; the newest runs are used).

    ``runs`` (eval.runs) orders the runs as dbt does; without it the rows' ``evaluated_at`` does.
    Comparisons are computed for every metric of the leaderboard against the one best configuration
    of the group (chosen by page nDCG / correctness).
    """
    stats = stats or StatsConfig()
    built_at = built_at or datetime.now(UTC).replace(tzinfo=None)
    return statistics_of_current(*current_rows(retrieval_results, answer_results, runs), stats, built_at=built_at,
                                 retrieval_metrics=retrieval_metrics, answer_metrics=answer_metrics)


def statistics_of_current(retrieval_current: pd.DataFrame, answer_current: pd.DataFrame,
                          stats: StatsConfig | None = None, *, built_at: datetime | None = None,
                          retrieval_metrics: Sequence[str] = RETRIEVAL_METRICS,
                          answer_metrics: Sequence[str] = ANSWER_METRICS) -> EvalStatistics:
    """Leaderboard and comparisons from the CURRENT rows (the results views)."""
    stats = stats or StatsConfig()
    built_at = built_at or datetime.now(UTC).replace(tzinfo=None)
    boards, comps = [], []
    if not retrieval_current.empty:
        rows = retrieval_current
        board = _leaderboard(rows, "retrieval", RETRIEVAL_KEYS, retrieval_metrics, stats)
        boards.append(board)
        comps.append(_comparisons(rows, board, "retrieval", ("scope", "k"), RETRIEVAL_BEST_BY,
                                  [m for m in retrieval_metrics if m in rows.columns], stats))
    if not answer_current.empty:
        rows = answer_current
        board = _leaderboard(rows, "answer", ANSWER_KEYS, answer_metrics, stats)
        boards.append(board)
        comps.append(_comparisons(rows, board, "answer", (), ANSWER_BEST_BY,
                                  [m for m in answer_metrics if m in rows.columns], stats))
    leaderboard = _concat(boards, LEADERBOARD_COLUMNS)
    comparisons = _concat(comps, COMPARISON_COLUMNS)
    leaderboard["built_at"] = built_at
    comparisons["built_at"] = built_at
    return EvalStatistics(leaderboard, comparisons)


def _concat(frames: Sequence[pd.DataFrame], columns: Sequence[str]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    if not frames:
        return pd.DataFrame(columns=list(columns))
    return pd.concat(frames, ignore_index=True)[list(columns)]


def build_eval_statistics(warehouse: Any, stats: StatsConfig | None = None, *,
                          built_at: datetime | None = None) -> EvalStatistics:
    """Read ``eval.retrieval_results`` / ``eval.answer_results`` / ``eval.runs`` from ``warehouse``
    (a :class:`~finrag_pipeline.core.warehouse.Warehouse`), compute, and fully replace
    ``eval.leaderboard`` and ``eval.comparisons`` (each in one transaction)."""
    with warehouse.connect() as con:
        retrieval, answers = _read_current(con.execute)
    result = statistics_of_current(retrieval, answers, stats, built_at=built_at)
    warehouse.replace_rows(LEADERBOARD_TABLE, result.leaderboard, where={})
    warehouse.replace_rows(COMPARISONS_TABLE, result.comparisons, where={})
    return result


# ---------------------------------------------------------------------------------------------
# Markdown (Dagster metadata)


def _fmt(mean: Any, lo: Any, hi: Any, digits: int = 3) -> str:
    if mean is None or pd.isna(mean):
        return "-"
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _verdict(c: pd.Series | None) -> str:
    if c is None:
        return "-"
    if c["is_best"]:
        return "best"
    if c["distinguishable"] is None or pd.isna(c["distinguishable"]):
        return "n/a (no shared questions)"
    word = "yes" if c["distinguishable"] else "no"
    return f"{word} (p={c['p_value']:.3g})"


def leaderboard_markdown(result: EvalStatistics, top: int = 5,
                         retrieval_metrics: Sequence[str] = HEADLINE_RETRIEVAL_METRICS,
                         answer_metrics: Sequence[str] = HEADLINE_ANSWER_METRICS) -> str:
    """Top ``top`` configurations per scope and k (answers: overall) as "mean [low, high]" with the
    paired difference to the best on the ranking metric and whether it is distinguishable."""
    board, comps = result.leaderboard, result.comparisons
    if board.empty:
        return "_No evaluation results yet._"
    parts: list[str] = []
    for kind, keys, best_by, metrics in (("retrieval", ["scope", "k"], RETRIEVAL_BEST_BY[0], retrieval_metrics),
                                         ("answer", [], ANSWER_BEST_BY[0], answer_metrics)):
        b = board[board["kind"] == kind]
        if b.empty:
            continue
        c = comps[(comps["kind"] == kind) & (comps["metric"] == best_by)] if not comps.empty else comps
        cmp_by_cfg = {(r["scope"], r["config_name"]): r for _, r in c.iterrows()}
        groups = b.groupby(keys, dropna=False, sort=True) if keys else [((), b)]
        for key, g in groups:
            key = key if isinstance(key, tuple) else (key,)
            title = ", ".join(f"{k}={v}" for k, v in zip(keys, key, strict=True)) or "all answer configurations"
            wide = g.pivot_table(index=["scope", "config_name"] if kind == "retrieval" else ["config_name"],
                                 columns="metric", values=["mean", "ci_low", "ci_high", "n"], aggfunc="first",
                                 dropna=False)
            rank_by = ("mean", best_by) if ("mean", best_by) in wide.columns else wide["mean"].columns[:1].map(
                lambda m: ("mean", m))[0]
            order = wide[rank_by].sort_values(ascending=False, na_position="last").index[:top]
            lines = [f"**{kind}: {title}** (best by {best_by}; paired difference vs the best)", "",
                     "| config | n | " + " | ".join(metrics) + f" | Δ {best_by} vs best | distinguishable |",
                     "|" + "---|" * (len(metrics) + 4)]
            for idx in order:
                cfg = idx[-1] if isinstance(idx, tuple) else idx
                scope = idx[0] if kind == "retrieval" else None
                cells = [_fmt(wide.at[idx, ("mean", m)], wide.at[idx, ("ci_low", m)], wide.at[idx, ("ci_high", m)])
                         if ("mean", m) in wide.columns else "-" for m in metrics]
                comp = cmp_by_cfg.get((scope, cfg))
                delta = "-" if comp is None else _fmt(comp["mean_diff"], comp["ci_low"], comp["ci_high"])
                n = wide.at[idx, ("n", best_by)] if ("n", best_by) in wide.columns else None
                n_txt = "-" if n is None or pd.isna(n) else str(int(n))
                lines.append(f"| {cfg} | {n_txt} | " + " | ".join(cells) + f" | {delta} | {_verdict(comp)} |")
            parts.append("\n".join(lines))
    return "\n\n".join(parts)
