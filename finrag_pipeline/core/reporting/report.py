"""One self-contained HTML report of the evaluation results, with plotly charts.

``build_report(warehouse, out_path)`` reads the dbt marts (schema ``marts``): every mean and interval
it shows is the marts' own. It never recomputes them: on a warehouse with evaluation results but no
marts it raises ``MartsNotBuilt`` (``finrag report`` builds the marts first, through the same
``build_marts`` job the Dagster automation runs). The file embeds plotly.js once (no CDN): it opens
offline, from an email attachment or from the Dagster UI's metadata link.

Which rows count and how they score (the newest run of each configuration x filing x scope; failed
questions scored 0; 'no_relevant' questions and not-computable (NULL) values left out of a mean) is the
warehouse views ``eval.retrieval_current`` / ``eval.answer_current`` (core/scoring/results_views.py),
which the marts and the bootstrap leaderboard read too; the marts' 95% intervals (Wilson score for 0/1
metrics, normal approximation for graded ones: dbt_metrics/macros/stats.sql) are shown,
replaced by the evaluation engine's bootstrap intervals (``<metric>_boot_ci_low/high``, from
eval.leaderboard via the leaderboard mart) wherever those exist. Configurations whose paired difference
to the best of their scope and k (page nDCG, eval.comparisons) has a CI containing 0 are marked as
not distinguishable from the best.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import json
import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import duckdb
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from finrag_pipeline.core.scoring import metric_registry as registry
from finrag_pipeline.core.scoring.results_views import (
    ANSWER_CURRENT,
    RETRIEVAL_CURRENT,
    RETRIEVAL_RUN_ORDER,
)
from finrag_pipeline.core.warehouse import LATEST_CORPUS_VERSION_SQL

# Metric lists, their kinds and the configuration grain come from core/scoring/metric_registry.py.
RETRIEVAL_KEYS = list(registry.RETRIEVAL_KEYS)
ALL_RETRIEVAL_METRICS = list(registry.RETRIEVAL_METRICS)
ANSWER_METRICS = list(registry.ANSWER_METRICS)
# A display choice: the metrics charted by question type (the breakdown mart's key metrics, less mrr_page).
CHART_METRICS = [m for m in registry.KEY_RETRIEVAL_METRICS if m != "mrr_page"]
LEADERBOARD_ROWS = 10   # per scope and k
REGRESSION_ROWS = 50
WORST_QUESTIONS = 15    # per scope
NOT_COMPUTED = "n/a"


# ----------------------------------------------------------------------------------------------
# Connection and table helpers


@contextlib.contextmanager
def _open(source: str | os.PathLike | duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Use a caller's connection as-is; open a path read-only (a report never writes)."""
    if isinstance(source, duckdb.DuckDBPyConnection):
        yield source
        return
    con = duckdb.connect(str(source), read_only=True)
    try:
        yield con
    finally:
        con.close()


def _has_table(con: duckdb.DuckDBPyConnection, schema: str, name: str) -> bool:
    n = con.execute(
        "select count(*) from information_schema.tables where table_schema = ? and table_name = ?",
        [schema, name],
    ).fetchall()[0][0]
    return n > 0


def _df(con: duckdb.DuckDBPyConnection, sql: str) -> pd.DataFrame:
    return con.execute(sql).df()


# ----------------------------------------------------------------------------------------------
# Data: the marts (means and intervals), the results views (row-level detail)


def _latest_retrieval_rows(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The current retrieval rows, scored: the warehouse view ``eval.retrieval_current``, defined once in
    core/scoring/results_views.py; empty before any evaluation. The worst questions' per-configuration
    ranks read row-level detail here; every mean, interval and chance level comes from the marts."""
    if not _has_view(con, RETRIEVAL_CURRENT, "eval.retrieval_results"):
        return pd.DataFrame()
    return _df(con, f"select * from {RETRIEVAL_CURRENT} order by source_row")


def _latest_answer_rows(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The current answer rows, scored: the warehouse view ``eval.answer_current`` (the web explorer's
    per-question answers)."""
    if not _has_view(con, ANSWER_CURRENT, "eval.answer_results"):
        return pd.DataFrame()
    return _df(con, f"select * from {ANSWER_CURRENT} order by source_row")


class ResultsViewsMissing(RuntimeError):
    """A warehouse written before the results views existed, opened read-only."""


def _has_view(con: duckdb.DuckDBPyConnection, view: str, table: str) -> bool:
    """True when ``view`` exists; False when there are no results at all; an error when results exist
    but their views do not (an older warehouse opened read-only): never an empty report over real rows."""
    if _has_table(con, *view.split(".")):
        return True
    if _has_table(con, *table.split(".")) and con.execute(f"select count(*) from {table}").fetchone()[0]:
        raise ResultsViewsMissing(
            f"{table} has rows but the view {view} is missing: the warehouse predates the results views. "
            "Open it once for writing (any `finrag` command that writes, e.g. `finrag ingest`, or "
            "Warehouse(path).connect()) to create them, then build the report again.")
    return False


RANDOM_RETRIEVER = "sanity_random"
SANITY_LIMITS = registry.SANITY_LIMITS   # one place: core/scoring/metric_registry.py (dbt reads it too)


def load_sanity_answers(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """marts.mart_sanity_answers: per sanity answerer, correctness on answerable questions (must stay
    within the registry's limit, the mart's ``within_limit``), non-committal rate, abstention accuracy on
    unanswerable ones; ``check`` marks a failure."""
    df = read_mart(con, "mart_sanity_answers", "select * from marts.mart_sanity_answers order by model")
    if not df.empty:
        within = df["within_limit"] if "within_limit" in df else pd.Series([None] * len(df), index=df.index)
        df["check"] = [_check(w) for w in within]
    return df


def _check(within: object, note: object = None) -> str:
    """A sanity row's verdict from its mart: the n/a reason when there is one, '-' when the mart could not
    decide (NULL, read back as NaN: never taken for a pass), else ok / FAIL."""
    if isinstance(note, str) and note:
        return note
    if within is None or pd.isna(within):
        return "-"
    return "ok" if within else "FAIL"


def load_random_retrieval(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """marts.mart_chance_levels for ``sanity_random``: per scope x k, its chunk hit, page hit and
    all-evidence page hit beside their chance levels and bands; ``check`` is ok / FAIL (the mart's
    ``within_chance_band``) or the mart's n/a reason."""
    df = read_mart(con, "mart_chance_levels", """
        select scope, k, metric, n_questions, mean, chance_level, chance_band, within_chance_band, chance_note
        from marts.mart_chance_levels where retriever = ? order by scope, k, metric""", [RANDOM_RETRIEVER])
    if not df.empty:
        df["check"] = [_check(w, note) for w, note in zip(df["within_chance_band"], df["chance_note"], strict=True)]
        df = df.drop(columns=["within_chance_band", "chance_note"])
    return df


def sanity_tables(answers: pd.DataFrame, retrieval: pd.DataFrame) -> list[str]:
    parts = []
    if not answers.empty:
        view = answers.drop(columns=[c for c in ("max_correctness", "within_limit") if c in answers])
        for c in ("correctness", "non_committal", "abstention_accuracy"):
            view[c] = view[c].map(_fmt)
        parts.append(f"<p>Lazy answerers run beside the real ones. Correctness on answerable questions must stay "
                     f"&le; {SANITY_LIMITS.max_correctness}; <code>sanity_abstain</code> earns credit only as "
                     "abstention accuracy on unanswerable questions.</p>"
                     + _table_block(view, "sanity-answers", _all_rows(len(view), "sanity answerer")))
    if not retrieval.empty:
        view = retrieval.copy()
        for c in ("mean", "chance_level", "chance_band"):
            view[c] = view[c].map(_fmt)
        parts.append("<p><code>sanity_random</code> draws k leaf chunks of the scope at random: each metric must "
                     f"stay within {SANITY_LIMITS.chance_band_se:g} standard errors + "
                     f"{SANITY_LIMITS.chance_band_slack} of its chance level. Chunk hit: 1 - C(N-g, k)/C(N, k) "
                     "(N leaves, g evidence chunks); page hit: the same with m = leaves on an evidence page "
                     "(statement pages hold many table-row chunks, so page chance is far above chunk chance); "
                     "all-evidence page hit: every evidence group drawn, by inclusion-exclusion "
                     "(docs/METRICS.md, \"Chance levels\").</p>"
                     + _table_block(view, "sanity-random", _all_rows(len(view), "metric x scope x k")))
    return parts


class MartsNotBuilt(RuntimeError):
    """Evaluation results exist but the dbt marts that summarise them do not: the report shows the marts'
    means and intervals and never recomputes them."""


MARTS_REMEDY = ("build them first: `finrag report` does (it runs the build_marts job, the same dbt build the "
                "Dagster automation runs), or materialize the `build_marts` job in the Dagster UI")


def has_results(con: duckdb.DuckDBPyConnection) -> bool:
    """True when any evaluation row exists (retrieval or answer)."""
    return any(_has_table(con, "eval", t) and con.execute(f"select count(*) from eval.{t}").fetchone()[0]
               for t in ("retrieval_results", "answer_results"))


# Every mart the report reads its means and intervals from (marts added later are absent from an older
# build: the CLI builds them before reporting).
REPORT_MARTS = ("mart_retriever_leaderboard", "mart_metrics_by_question_type", "mart_corpus_growth",
                "mart_question_difficulty", "mart_answer_quality", "mart_answer_response_states",
                "mart_sanity_answers", "mart_chance_levels", "mart_answer_agreement")


def missing_marts(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The marts of ``REPORT_MARTS`` not built yet, when the warehouse has evaluation results (else [])."""
    missing = [m for m in REPORT_MARTS if not _has_table(con, "marts", m)]
    return missing if missing and has_results(con) else []


def marts_needed(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the warehouse has evaluation results but not every mart the report reads."""
    return bool(missing_marts(con))


def read_mart(con: duckdb.DuckDBPyConnection, name: str, sql: str, params: Sequence[object] = ()) -> pd.DataFrame:
    """``sql`` over ``marts.<name>``; empty when there are no results yet; ``MartsNotBuilt`` when there
    are results but the mart is missing (never a recomputation, never an empty report over real rows)."""
    if _has_table(con, "marts", name):
        return con.execute(sql, list(params)).df()
    if has_results(con):
        raise MartsNotBuilt(f"the warehouse has evaluation results but no dbt mart marts.{name}: {MARTS_REMEDY}.")
    return pd.DataFrame()


def load_leaderboard(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """marts.mart_retriever_leaderboard: means, closed-form and bootstrap intervals, comparison with the best."""
    return read_mart(con, "mart_retriever_leaderboard",
                     "select * from marts.mart_retriever_leaderboard order by scope, rank_in_scope_k")


def load_by_question_type(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return read_mart(con, "mart_metrics_by_question_type", "select * from marts.mart_metrics_by_question_type")


def load_breakdown(con: duckdb.DuckDBPyConnection, mart: str, column: str, value: object) -> pd.DataFrame:
    """The rows of the "metrics by <column>" mart ``marts.<mart>`` whose ``column`` equals ``value``
    (compared as text: a fiscal year may come from a form as a string)."""
    if not mart.replace("_", "").isalnum() or not column.replace("_", "").isalnum():
        raise ValueError(f"not a mart or column name: {mart!r}, {column!r}")
    return read_mart(con, mart, f"select * from marts.{mart} where cast({column} as varchar) = ?", [str(value)])


def load_corpus_growth(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return read_mart(con, "mart_corpus_growth", "select * from marts.mart_corpus_growth order by n_filings_in_corpus")


def load_worst_questions(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return read_mart(con, "mart_question_difficulty", f"""
        select * from marts.mart_question_difficulty
        qualify row_number() over (partition by scope order by worst_rank, qa_id) <= {WORST_QUESTIONS}
        order by scope, worst_rank, qa_id""")


def load_question_ranks(con: duckdb.DuckDBPyConnection, questions: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(qa_id, scope) -> every configuration's rank of the first relevant page in its newest run
    ("miss" when it was not in the top k, "error" when the retriever failed)."""
    rows = _latest_retrieval_rows(con)
    if rows.empty or questions.empty:
        return {}
    wanted = set(zip(questions["qa_id"], questions["scope"], strict=True))
    rows = rows[[(q, s) in wanted for q, s in zip(rows["qa_id"], rows["scope"], strict=True)]]
    out: dict[tuple[str, str], str] = {}
    for (qa_id, scope), g in rows.groupby(["qa_id", "scope"], sort=False):
        parts = []
        for _, r in g.sort_values(["k", "config_name"]).iterrows():
            rank = r.get("first_relevant_rank_page")
            shown = ("error" if r["is_failed"] else "n/a" if r["is_no_relevant"]
                     else "miss" if rank is None or pd.isna(rank) else f"#{int(rank)}")
            parts.append(f"{r['config_name']}: {shown}")
        out[(qa_id, scope)] = "; ".join(parts)
    return out


def load_evidence_pages(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """qa_id -> the evidence pages of its required groups ("p. 4" or "p. 4 | p. 12, 13")."""
    if not _has_table(con, "qa", "items"):
        return {}
    out = {}
    for qa_id, evidence in con.execute("select qa_id, any_value(evidence) from qa.items group by qa_id").fetchall():
        try:
            groups = json.loads(evidence or "[]")
            pages = [sorted({int(p["page"]) for p in group if p.get("page") is not None}) for group in groups]
        except (ValueError, TypeError, AttributeError, KeyError):
            continue
        shown = list(dict.fromkeys("p. " + ", ".join(map(str, g)) for g in pages if g))  # groups on one page once
        out[qa_id] = " | ".join(shown)
    return out


def load_filings_evaluated(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per evaluated filing: company, year, questions, and the corpus state of its newest
    whole-corpus run against the current corpus state (core.corpus_versions)."""
    if not _has_table(con, "eval", "retrieval_results"):
        return pd.DataFrame()
    # the newest whole-corpus run: the run order of the results views (core/scoring/results_views.py)
    newest_corpus_run = ("left join (select filing_id, arg_max(corpus_state, run_at) as corpus_state, "
                         "arg_max(n_filings_in_corpus, run_at) as filings_in_corpus "
                         f"from {RETRIEVAL_RUN_ORDER} where scope = 'corpus' group by filing_id) o using (filing_id)"
                         if _has_table(con, *RETRIEVAL_RUN_ORDER.split(".")) else
                         "cross join (select null as corpus_state, null as filings_in_corpus) o")
    df = _df(con, f"""
        select filing_id, r.questions, r.last_evaluated, o.corpus_state, o.filings_in_corpus
        from (select filing_id, count(distinct qa_id) as questions, max(evaluated_at) as last_evaluated
              from eval.retrieval_results group by filing_id) r
        {newest_corpus_run}
        order by filing_id""")
    if _has_table(con, "core", "filings"):
        meta = _df(con, "select filing_id, any_value(company) as company, any_value(fiscal_year) as fiscal_year "
                        "from core.filings group by filing_id")
        df = meta.merge(df, on="filing_id", how="right")
    current = None
    if _has_table(con, "core", "corpus_versions"):
        latest = con.execute(f"select corpus_state from ({LATEST_CORPUS_VERSION_SQL})").fetchall()
        current = latest[0][0] if latest else None
    df["corpus_state_status"] = [
        "" if current is None or state is None or pd.isna(state) else
        "current" if state == current else "older corpus (re-evaluation pending)" for state in df["corpus_state"]]
    return df


def count_rerun_comparisons(con: duckdb.DuckDBPyConnection) -> int:
    """How many configuration x filing x scope keys have at least two runs: the regressions mart
    compares the newest with the previous one, so zero means there was nothing to compare."""
    if not _has_table(con, *RETRIEVAL_RUN_ORDER.split(".")):
        return 0
    return int(con.execute(f"select count(*) from {RETRIEVAL_RUN_ORDER} where run_recency = 2").fetchall()[0][0])


def load_flagged_regressions(con: duckdb.DuckDBPyConnection) -> pd.DataFrame | None:
    """Flagged changes from marts.mart_regressions; None when the mart is not built (no fallback:
    the run-pairing logic lives in dbt only)."""
    if not _has_table(con, "marts", "mart_regressions"):
        return None
    df = _df(con, """select * from marts.mart_regressions where outside_interval
                     order by direction <> 'regression', delta, config_name, filing_id, metric, scope""")
    # Pick what exists: the mart may be a version older or newer than this code.
    cols = [c for c in ["scope", "config_name", "filing_id", "metric", "previous_mean", "latest_mean", "delta",
                        "previous_ci_low", "previous_ci_high", "paired_significant", "direction"] if c in df]
    return df[cols]


def load_answer_quality(con: duckdb.DuckDBPyConnection) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(quality per model x prompt x temperature, response-state shares): marts.mart_answer_quality and
    marts.mart_answer_response_states."""
    if not _has_table(con, "eval", "answer_results") or not con.execute(
            "select count(*) from eval.answer_results").fetchone()[0]:
        return pd.DataFrame(), pd.DataFrame()
    quality = read_mart(con, "mart_answer_quality",
                    "select * from marts.mart_answer_quality order by model, prompt_type, temperature")
    states = read_mart(con, "mart_answer_response_states", "select * from marts.mart_answer_response_states")
    return quality, states


def load_answer_na_reasons(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str, float, str], str]:
    """Why an answer metric was not computed: per model x prompt x temperature x metric, the most frequent
    reason (the rows' ``notes``) among its current rows (eval.answer_current, what the marts read) where the
    metric is NULL. Reasons, not statistics: the report shows them beside the marts' "n/a"."""
    schema, view = ANSWER_CURRENT.split(".")
    present = {r[0] for r in con.execute("select column_name from information_schema.columns where "
                                         "table_schema = ? and table_name = ?", [schema, view]).fetchall()}
    metrics = [m for m in ANSWER_METRICS if m in present]
    if "notes" not in present or not metrics:
        return {}
    judged = set(registry.JUDGE_METRICS) if "has_judge" in present else set()

    def reason(m: str) -> str:
        noted = f"case when json_valid(notes) then json_extract_string(notes, '$.{m}') end"
        return f"case when not has_judge then 'no judge configured' else {noted} end" if m in judged else noted

    union = " union all ".join(
        f"select model, prompt_type, temperature, '{m}' as metric, {reason(m)} as reason "
        f"from {ANSWER_CURRENT} where {m} is null" for m in metrics)
    rows = con.execute(f"""select model, prompt_type, temperature, metric, reason from (
        select *, row_number() over (partition by model, prompt_type, temperature, metric
                                     order by n desc, reason) as pick
        from (select model, prompt_type, temperature, metric, reason, count(*) as n from ({union})
              where reason is not null group by all)) where pick = 1""").fetchall()
    return {(model, prompt, _temperature(temp), metric): reason for model, prompt, temp, metric, reason in rows}


def _temperature(value: object) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


# ----------------------------------------------------------------------------------------------
# Charts


def _vs_best(row: pd.Series) -> str:
    """'best', 'not distinguishable from best', 'below best' / 'above best', or '' (no comparison)."""
    if "distinguishable_from_best" not in row or pd.isna(row.get("best_config_name")):
        return ""
    is_best, dist = row.get("is_best"), row.get("distinguishable_from_best")
    if is_best is not None and not pd.isna(is_best) and bool(is_best):
        return "best"
    if dist is None or pd.isna(dist):
        return ""
    if not bool(dist):
        return "not distinguishable from best"
    return "below best" if row.get("delta_vs_best", 0) < 0 else "above best"


def _config_label(row: pd.Series) -> str:
    label = f"{row['retriever']} k={row['k']}"
    label = label if row["config_name"] in (None, "", label) else f"{label} ({row['config_name']})"
    mark = _vs_best(row)
    return f"{label} [{'best' if mark == 'best' else '≈ best'}]" if mark in ("best", "not distinguishable from best") \
        else label


def interval_bounds(df: pd.DataFrame, metric: str) -> tuple[pd.Series | None, pd.Series | None]:
    """(low, high) of ``metric``: the bootstrap bounds where present, else the closed-form ones."""
    bounds = []
    for side in ("low", "high"):
        closed, boot = df.get(f"{metric}_ci_{side}"), df.get(f"{metric}_boot_ci_{side}")
        if boot is None:
            bounds.append(closed)
        else:
            boot = pd.to_numeric(boot, errors="coerce")
            bounds.append(boot if closed is None else boot.where(boot.notna(), pd.to_numeric(closed, errors="coerce")))
    return bounds[0], bounds[1]


def _bar_with_ci(df: pd.DataFrame, x: list[str], metric: str, name: str) -> go.Bar:
    mean = df[f"{metric}_mean"]
    low, high = interval_bounds(df, metric)
    upper = (high - mean).clip(lower=0) if high is not None else None
    lower = (mean - low).clip(lower=0) if low is not None else None
    error = None if upper is None else dict(type="data", array=upper.fillna(0).tolist(),
                                             arrayminus=lower.fillna(0).tolist(), visible=True)
    return go.Bar(x=x, y=mean.tolist(), name=name, error_y=error)


def _figure_html(fig: go.Figure, div_id: str, height: int = 420) -> str:
    # plotly.js is embedded once in <head>; each figure only carries its data.
    fig.update_layout(template="plotly_white", margin=dict(l=50, r=20, t=50, b=80), height=height)
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id)


def leaderboard_charts(board: pd.DataFrame) -> list[str]:
    """One grouped bar chart per scope: metrics per retriever and k, with 95% interval bars."""
    charts = []
    for scope, g in board.groupby("scope", sort=True):
        g = g.sort_values(["k", "rank_in_scope_k", "config_name"])
        x = [_config_label(r) for _, r in g.iterrows()]
        fig = go.Figure([_bar_with_ci(g, x, m, m) for m in CHART_METRICS if f"{m}_mean" in g])
        fig.update_layout(title=f"Retrieval metrics per retriever and k, scope={scope} (95% CI)",
                          barmode="group", yaxis=dict(range=[0, 1.05], title="mean (failures = 0)"))
        charts.append(_figure_html(fig, f"chart-leaderboard-{scope}"))
    return charts


def question_type_heatmaps(by_type: pd.DataFrame, metric: str = "hit_chunk") -> list[str]:
    """One heatmap per scope: configuration (rows, ordered by k) x question type (columns); the colour
    is the mean, the hover shows the 95% interval and the number of questions."""
    charts = []
    for scope, g in by_type.groupby("scope", sort=True):
        g = g.assign(row=[f"{r['config_name']} (k={r['k']})" for _, r in g.iterrows()])
        order = g.sort_values(["k", "config_name"])["row"].drop_duplicates().tolist()
        types = sorted(g["question_type"].astype(str).unique())
        low, high = interval_bounds(g, metric)
        g = g.assign(lo=low, hi=high)
        cell = {(r["row"], str(r["question_type"])): r for _, r in g.iterrows()}
        z, text = [], []
        for row in order:
            z_row, t_row = [], []
            for qt in types:
                r = cell.get((row, qt))
                mean = None if r is None or pd.isna(r[f"{metric}_mean"]) else float(r[f"{metric}_mean"])
                z_row.append(mean)
                if r is None:
                    t_row.append("no questions of this type")
                elif mean is None:
                    t_row.append(f"n/a (not computable), n={int(r['n_questions'])}")
                else:
                    ci = ("" if pd.isna(r["lo"]) or pd.isna(r["hi"]) else f" [{r['lo']:.3f}, {r['hi']:.3f}]")
                    t_row.append(f"{mean:.3f}{ci}, n={int(r['n_questions'])}")
            z.append(z_row)
            text.append(t_row)
        fig = go.Figure(go.Heatmap(
            z=z, x=types, y=order, text=text, zmin=0, zmax=1, colorscale="Viridis",
            colorbar=dict(title=metric),
            hovertemplate="%{y}<br>%{x}: %{text}<extra></extra>"))
        fig.update_layout(title=f"{metric} per configuration and question type, scope={scope} "
                                "(hover: mean [95% CI], questions)",
                          yaxis=dict(autorange="reversed"))
        charts.append(_figure_html(fig, f"chart-question-type-{scope}", height=max(320, 60 + 22 * len(order))))
    return charts


def corpus_growth_chart(growth: pd.DataFrame, metric: str = "ndcg_chunk") -> str:
    fig = go.Figure()
    for (cfg, retriever, k), g in growth.groupby(["config_name", "retriever", "k"], sort=True):
        g = g.sort_values("n_filings_in_corpus")
        mean = g[f"{metric}_mean"]
        fig.add_trace(go.Scatter(
            x=g["n_filings_in_corpus"].tolist(), y=mean.tolist(), mode="lines+markers",
            name=f"{retriever} k={k} ({cfg})",
            error_y=dict(type="data", array=(g[f"{metric}_ci_high"] - mean).clip(lower=0).fillna(0).tolist(),
                         arrayminus=(mean - g[f"{metric}_ci_low"]).clip(lower=0).fillna(0).tolist())))
    fig.update_layout(title=f"Corpus growth: whole-corpus {metric} vs number of filings",
                      xaxis=dict(title="filings in the corpus", dtick=1),
                      yaxis=dict(range=[0, 1.05], title=metric))
    return _figure_html(fig, "chart-corpus-growth")


def answer_quality_charts(quality: pd.DataFrame, states: pd.DataFrame) -> list[str]:
    x = [f"{r['model']} / {r['prompt_type']} / T={r['temperature']}" for _, r in quality.iterrows()]
    fig = go.Figure([_bar_with_ci(quality, x, m, m) for m in ANSWER_METRICS if f"{m}_mean" in quality])
    fig.update_layout(title="Answer quality by model / prompt / temperature (95% CI)", barmode="group",
                      yaxis=dict(range=[0, 1.05]))
    charts = [_figure_html(fig, "chart-answer-quality")]
    if not states.empty:
        sfig = go.Figure()
        states = states.assign(label=[f"{r['model']} / {r['prompt_type']} / T={r['temperature']}"
                                      for _, r in states.iterrows()])
        for state, g in states.groupby("response_state", sort=True):
            sfig.add_trace(go.Bar(x=g["label"].tolist(), y=g["share"].tolist(), name=str(state)))
        sfig.update_layout(title="Response states", barmode="stack", yaxis=dict(range=[0, 1], title="share"))
        charts.append(_figure_html(sfig, "chart-response-states"))
    return charts


# ----------------------------------------------------------------------------------------------
# Tables


def _fmt_ci(row: pd.Series, metric: str) -> str:
    mean, lo, hi = row.get(f"{metric}_mean"), row.get(f"{metric}_ci_low"), row.get(f"{metric}_ci_high")
    boot_lo, boot_hi = row.get(f"{metric}_boot_ci_low"), row.get(f"{metric}_boot_ci_high")
    if boot_lo is not None and boot_hi is not None and not pd.isna(boot_lo) and not pd.isna(boot_hi):
        lo, hi = boot_lo, boot_hi   # the bootstrap interval wins where it exists
    if mean is None or pd.isna(mean):
        return NOT_COMPUTED
    if lo is None or pd.isna(lo) or hi is None or pd.isna(hi):
        return f"{mean:.3f}"
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def _fmt(v: object, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def _fmt_ms(v: object) -> str:
    return "" if v is None or pd.isna(v) else f"{float(v):.0f}"


def _html_table(df: pd.DataFrame, css_class: str) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
                   for row in df.itertuples(index=False))
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def leaderboard_table(board: pd.DataFrame) -> str:
    ranked = board.sort_values(["scope", "k", "rank_in_scope_k", "config_name"])
    top = ranked.groupby(["scope", "k"], sort=True).head(LEADERBOARD_ROWS)
    view = pd.DataFrame({
        "scope": top["scope"], "rank": top["rank_in_scope_k"].astype(int), "config": top["config_name"],
        "retriever": _system_labels(top), "k": top["k"], "chunking": top["chunking"].fillna("default"),
        "questions": top["n_questions"], "coverage": top["coverage"].map(lambda v: f"{v:.1%}"),
        **{name: [_fmt_ci(r, m) for _, r in top.iterrows()] for name, m in [
            ("hit@k chunk", "hit_chunk"), ("MRR chunk", "mrr_chunk"), ("nDCG chunk", "ndcg_chunk"),
            ("recall chunk", "recall_chunk"), ("hit@k page", "hit_page"), ("all evidence", "all_evidence_hit")]},
        # what k random leaves of the scope earn on the same questions: page figures read against chance
        **{name: [_fmt_chance(r, m) for _, r in top.iterrows()] for name, m in [
            ("hit@k page chance", "hit_page"), ("all evidence chance", "all_evidence_hit")]},
        "latency p50 ms": top["latency_p50_ms"].map(_fmt_ms), "latency p95 ms": top["latency_p95_ms"].map(_fmt_ms),
    })
    if "distinguishable_from_best" in top:
        view["vs best (page nDCG, paired)"] = [_fmt_vs_best(r) for _, r in top.iterrows()]
    caption = (f"Top {len(top)} of {len(board)} rows: the best {LEADERBOARD_ROWS} configurations of each scope "
               f"and k by rank, sorted by scope, k and rank.")
    notes = []
    if any(v == NOT_COMPUTED for col in view.columns for v in view[col]):
        notes.append(f"{NOT_COMPUTED}: not computed. Chunk-level metrics of a chunking variant are not "
                     "computable (the evidence's chunk ids belong to the default chunking); the page-level "
                     "metrics compare them. In a chance column: some question has no recorded chance level "
                     "(mart_chance_levels.chance_note says why).")
    return _table_block(view, "leaderboard", caption, notes)


def _system_labels(rows: pd.DataFrame) -> list[str]:
    """The retriever, or for an outside system under test (systems.yaml) its name and kind."""
    kinds = rows["system_kind"] if "system_kind" in rows else [None] * len(rows)
    return [f"{name} (outside system: {kind})" if isinstance(kind, str) and kind else name
            for name, kind in zip(rows["retriever"], kinds, strict=True)]


def _fmt_chance(row: pd.Series, metric: str) -> str:
    """The chance level of ``metric`` from the leaderboard mart, with its band (n/a when not recorded)."""
    chance, band = row.get(registry.chance_column(metric)), row.get(f"{registry.chance_column(metric)}_band")
    if chance is None or pd.isna(chance):
        return NOT_COMPUTED
    return f"{chance:.3f}" if band is None or pd.isna(band) else f"{chance:.3f} \u00b1 {band:.3f}"


def _fmt_vs_best(row: pd.Series) -> str:
    mark = _vs_best(row)
    if mark in ("", "best"):
        return mark
    delta, lo, hi, p = (row.get(c) for c in ("delta_vs_best", "delta_vs_best_ci_low", "delta_vs_best_ci_high",
                                             "p_value_vs_best"))
    return (f"{mark}: Δ {delta:+.3f} [{lo:+.3f}, {hi:+.3f}], p={p:.3g} vs {row.get('best_config_name')}"
            if not any(v is None or pd.isna(v) for v in (delta, lo, hi, p)) else mark)


def worst_questions_table(worst: pd.DataFrame, n_total: int | None = None,
                          ranks: dict[tuple[str, str], str] | None = None,
                          evidence_pages: dict[str, str] | None = None) -> str:
    ranks, evidence_pages = ranks or {}, evidence_pages or {}
    worst = worst.sort_values(["scope", *(c for c in ("worst_rank",) if c in worst), "ndcg_chunk_mean", "qa_id"])
    view = pd.DataFrame({c: worst[c] for c in ["scope", "filing_id", "question_type", "question",
                                                 "reference_answer"] if c in worst})
    view["evidence"] = [evidence_pages.get(q, "") for q in worst["qa_id"]]
    view["rank of the evidence page per configuration"] = [
        ranks.get((q, s), "") for q, s in zip(worst["qa_id"], worst["scope"], strict=True)]
    for c in ("n_configs", "n_failed", "hit_chunk_mean", "ndcg_chunk_mean"):
        if c in worst:
            view[c] = worst[c]
    if "best_config_name" in worst:
        # No configuration found it: a "best" would be a tie-break artefact.
        best_score = worst["best_ndcg_chunk"] if "best_ndcg_chunk" in worst else worst.get("ndcg_chunk_mean")
        view["best configuration"] = [name if score is not None and not pd.isna(score) and score > 0
                                      else "none found it" for name, score in zip(worst["best_config_name"],
                                                                                   best_score, strict=True)]
    view["qa_id"] = worst["qa_id"]
    shown = len(view)
    caption = (f"The {shown} hardest of {n_total if n_total is not None else shown} question x scope pairs "
               f"(up to {WORST_QUESTIONS} per scope), by mean nDCG over every configuration; "
               "#n = rank of the first relevant page, miss = not in the top k.")
    return _table_block(view, "worst-questions", caption)


def filings_table(filings: pd.DataFrame) -> str:
    view = filings.assign(last_evaluated=pd.to_datetime(filings["last_evaluated"]).dt.strftime("%Y-%m-%d %H:%M"))
    view = view.rename(columns={"filing_id": "filing", "fiscal_year": "fiscal year", "last_evaluated": "last evaluated",
                                "corpus_state": "corpus state", "filings_in_corpus": "filings in that corpus",
                                "corpus_state_status": "against the current corpus"})
    caption = (f"All {len(view)} filings evaluated; corpus state of each filing's newest whole-corpus run "
               "and how many filings that corpus held.")
    return _table_block(view, "filings", caption)


def _all_rows(n: int, what: str) -> str:
    """The caption of a table that shows every row: 'All 6 of 6 rows (one per model x prompt).'"""
    return f"All {n} of {n} row{'' if n == 1 else 's'} (one per {what})."


def _table_block(view: pd.DataFrame, css_class: str, caption: str, notes: Sequence[str] = ()) -> str:
    """A captioned table that scrolls inside the page (sticky header) instead of overflowing it."""
    foot = "".join(f'<p class="note">{html.escape(n)}</p>' for n in notes)
    return (f'<p class="caption">{html.escape(caption)}</p>'
            f'<div class="scroll">{_html_table(view, css_class)}</div>{foot}')


def answer_quality_table(quality: pd.DataFrame,
                         na_reasons: Mapping[tuple[str, str, float, str], str] | None = None) -> str:
    """Every model x prompt x temperature; a metric that was not computed shows "n/a" with its reason."""
    na_reasons = na_reasons or {}

    def cell(row: pd.Series, metric: str) -> str:
        shown = _fmt_ci(row, metric)
        reason = na_reasons.get((row["model"], row["prompt_type"], _temperature(row["temperature"]), metric))
        return f"{shown}: {reason}" if shown == NOT_COMPUTED and reason else shown

    view = pd.DataFrame({
        "model": quality["model"], "prompt": quality["prompt_type"], "temperature": quality["temperature"],
        "answers": quality["n_answers"],
        **{m: [cell(r, m) for _, r in quality.iterrows()] for m in ANSWER_METRICS if f"{m}_mean" in quality},
    })
    for m in ANSWER_METRICS:
        if f"{m}_coverage" in quality:
            view[f"{m} coverage"] = quality[f"{m}_coverage"].map(lambda v: "" if pd.isna(v) else f"{v:.0%}")
    caption = (f"All {len(view)} of {len(view)} model x prompt x temperature rows, sorted by model, prompt and "
               "temperature; coverage = share of answers with a score for the metric.")
    notes = ([f"{NOT_COMPUTED}: no answer of that row could be scored on the metric; the most frequent reason "
              "follows it."] if any(str(v).startswith(NOT_COMPUTED) for col in view.columns for v in view[col])
             else [])
    return _table_block(view, "answer-quality", caption, notes)


# ----------------------------------------------------------------------------------------------
# External agreement (core/evaluation/agreement.py; marts.mart_external_agreement)


def _first_table(con: duckdb.DuckDBPyConnection, *candidates: tuple[str, str]) -> str | None:
    return next((f"{schema}.{name}" for schema, name in candidates if _has_table(con, schema, name)), None)


def external_agreement_section(con: duckdb.DuckDBPyConnection) -> str:
    """The "Synthetic vs external questions" section: per external set and scope, the rank agreement of
    the two leaderboards with its bootstrap interval and the flipped pairs, then both leaderboards side
    by side. Reads the marts, else the eval tables the marts select from."""
    title = "Synthetic vs external questions (rank agreement of the leaderboards)"
    summary_table = _first_table(con, ("marts", "mart_external_agreement"), ("eval", "external_agreement"))
    configs_table = _first_table(con, ("marts", "mart_external_agreement_configs"),
                                 ("eval", "external_agreement_configs"))
    summary = _df(con, f"select * from {summary_table} order by external_set, scope") if summary_table else None
    if summary is None or summary.empty:
        return _section(title, [], "No external QA set imported (finrag qa import; the demo imports the "
                                   "hand-written analysts' questions).")
    configs = (_df(con, f"select * from {configs_table} order by external_set, scope, external_rank, config_name")
               if configs_table else pd.DataFrame())

    def corr(row: pd.Series, name: str) -> str:
        v, lo, hi = row[name], row[name.split("_")[0] + "_ci_low"], row[name.split("_")[0] + "_ci_high"]
        if v is None or pd.isna(v):
            return "n/a"
        return f"{v:+.2f}" + ("" if lo is None or pd.isna(lo) else f" [{lo:+.2f}, {hi:+.2f}]")

    def flips(value: object) -> str:
        try:
            listed = json.loads(value) if isinstance(value, str) else []
        except ValueError:
            listed = []
        return "; ".join(listed[:6]) + (f" (+{len(listed) - 6} more)" if len(listed) > 6 else "")

    view = pd.DataFrame({
        "external set": summary["external_set"], "scope": summary["scope"],
        "ranked by": summary["metric"] + "@" + summary["k"].astype(str),
        "configs": summary["n_configs"],
        "questions ext / syn": summary["n_external_questions"].astype(str) + " / "
        + summary["n_synthetic_questions"].astype(str),
        "Kendall tau-b [95% CI]": [corr(r, "kendall_tau_b") for _, r in summary.iterrows()],
        "Spearman rho [95% CI]": [corr(r, "spearman_rho") for _, r in summary.iterrows()],
        "best synthetic": summary["best_synthetic"], "best external": summary["best_external"],
        "flipped pairs": [f"{r['n_flipped_pairs']} of {r['n_pairs']}: {flips(r['flipped_pairs'])}"
                          for _, r in summary.iterrows()],
        "note": summary["note"],
    })
    parts = [
        "<p>Both leaderboards rank the same configurations on the same filings: the synthetic one over the "
        "generated questions, the external one over the imported set's questions. Intervals resample the "
        "questions of both sets (seeded bootstrap). A tau near 1 means the synthetic sets can stand in for "
        "the external questions; near 0, their ranking says little about it.</p>",
        _table_block(view, "external-agreement", _all_rows(len(view), "external set x scope"))]
    if not configs.empty:
        side = pd.DataFrame({
            "external set": configs["external_set"], "scope": configs["scope"], "config": configs["config_name"],
            "synthetic mean": configs["synthetic_mean"], "synthetic rank": configs["synthetic_rank"],
            "external mean": configs["external_mean"], "external rank": configs["external_rank"],
            "rank change (syn - ext)": configs["rank_change"]})
        parts.append(_table_block(side, "external-agreement-configs",
                                  _all_rows(len(side), "external set x scope x configuration") + " Both "
                                  "leaderboards side by side, sorted by external rank."))
    return _section(title, parts, "")


# Agreement with people (core/evaluation/human_agreement.py; marts.mart_answer_agreement)


def answer_agreement_section(con: duckdb.DuckDBPyConnection) -> str:
    """How far the answer scorer agrees with answers people graded, per labelled set x split x answer
    kinds, as mart_answer_agreement computed it (`finrag score agreement FILE` writes the verdicts)."""
    title = "Agreement with people (answer scorer vs human grades)"
    empty = ("No labelled answer set scored (finrag score agreement data/labelled_answers/answers.jsonl, "
             "then finrag report).")
    if not _has_table(con, "marts", "mart_answer_agreement"):
        return _section(title, [], empty)
    mart = _df(con, "select * from marts.mart_answer_agreement order by set_name, "
                    "case split when 'all' then 0 when 'dev' then 1 else 2 end, split, "
                    "case kinds when 'all' then 0 when 'figure+choice' then 1 else 2 end, kinds")
    if mart.empty:
        return _section(title, [], empty)

    def pct(v: object) -> str:
        return "n/a" if v is None or pd.isna(v) else f"{100 * float(v):.1f}%"

    view = pd.DataFrame({
        "set": mart["set_name"], "split": mart["split"], "answers": mart["kinds"], "n": mart["n_answers"],
        "decided": mart["n_decided"], "coverage": mart["coverage"].map(pct),
        "agreement": mart["agreement"].map(pct),
        "kappa": mart["kappa"].map(lambda v: "n/a" if v is None or pd.isna(v) else f"{float(v):.3f}"),
        "false accepts": mart["false_accepts"], "false rejects": mart["false_rejects"],
        "judge": mart["judge_name"].fillna("-"),
        "judge vs people": mart["judge_agreement"].map(pct),
        "judge vs scorer": mart["judge_scorer_agreement"].map(pct)})
    parts = [
        "<p>Each labelled answer was graded Correct, Incorrect or Refusal by a person against the reference "
        "(data/labelled_answers/LABELLING_GUIDE.md) and scored by the project's answer scorer. Coverage is the "
        "share the scorer decides (the rest are judged, not matched); agreement and Cohen's kappa are over the "
        "answers it decides (a person accepts only Correct). 'figure+choice' are the answers a deterministic "
        "scorer should decide. A set its author wrote and labelled (the repository's own) gives an upper "
        "bound: measure on answers your systems wrote, graded by your people.</p>",
        _table_block(view, "answer-agreement", _all_rows(len(view), "set x split x answer kinds"))]
    return _section(title, parts, "")


# Corpus-vs-filing cost and company resolution (marts.mart_corpus_cost, marts.mart_company_resolution)


def corpus_cost_section(con: duckdb.DuckDBPyConnection) -> str:
    """What the corpus scope costs against the filing scope per configuration and question set, and how
    often the configurations that resolve a company/period found the question's own filing."""
    title = "Corpus vs filing scope (company-first search)"
    parts = []
    if _has_table(con, "marts", "mart_corpus_cost"):
        cost = _df(con, "select * from marts.mart_corpus_cost order by question_set, k, "
                        "all_evidence_hit_cost desc, config_name")
        if not cost.empty:
            parts.append(_table_block(pd.DataFrame({
                "question set": cost["question_set"], "config": cost["config_name"], "n": cost["n_paired"],
                "all-evidence filing": cost["all_evidence_hit_filing"].map(_fmt),
                "all-evidence corpus": cost["all_evidence_hit_corpus"].map(_fmt),
                "cost": cost["all_evidence_hit_cost"].map(lambda v: _fmt(v) if pd.isna(v) else f"{v:+.3f}"),
                "page hit cost": cost["hit_page_cost"].map(lambda v: _fmt(v) if pd.isna(v) else f"{v:+.3f}"),
            }), "corpus-cost", _all_rows(len(cost), "question set x configuration") + " All-evidence page hit "
                "and page hit in each scope over the same questions; cost = corpus - filing (negative: other "
                "filings crowd the evidence out)."))
    if _has_table(con, "marts", "mart_company_resolution"):
        res = _df(con, "select * from marts.mart_company_resolution order by question_set, scope, config_name")
        if not res.empty:
            parts.append(_table_block(pd.DataFrame({
                "question set": res["question_set"], "scope": res["scope"], "config": res["config_name"],
                "n": res["n_questions"], "accuracy": res["resolution_accuracy"].map(_fmt),
                "exact / covers / wrong / unresolved": res["n_exact"].astype(str) + " / " + res["n_covers"].astype(str)
                + " / " + res["n_wrong"].astype(str) + " / " + res["n_unresolved"].astype(str),
            }), "company-resolution", _all_rows(len(res), "question set x scope x configuration")
                + " Company/period resolution against each question's own filing (configurations with "
                "company_mode or period_mode)."))
    return _section(title, parts, "Needs the dbt marts and an evaluation in both scopes.")


# ----------------------------------------------------------------------------------------------
# Page


CSS = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #222; }
h1 { margin-bottom: .2rem; } .meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; font-size: .85rem; margin: 0; }
th, td { border: 1px solid #ddd; padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; position: sticky; top: 0; z-index: 1; } .empty { color: #888; font-style: italic; }
.scroll { max-height: 28rem; overflow: auto; border: 1px solid #ddd; margin: .3rem 0 1rem; }
.caption { color: #444; margin: .8rem 0 .2rem; font-size: .9rem; } .note { color: #666; font-size: .8rem; }
td { max-width: 28rem; } table.worst-questions td:nth-child(7) { font-size: .75rem; min-width: 22rem; }
table.worst-questions td:nth-child(4), table.worst-questions td:nth-child(5) { min-width: 14rem; }
table.worst-questions td:nth-child(2), table.filings td { white-space: nowrap; }
"""


def _growth_parts(growth: pd.DataFrame) -> list[str]:
    if growth.empty:
        return []
    sizes = sorted(int(n) for n in growth["n_filings_in_corpus"].dropna().unique())
    if len(sizes) < 2:
        return [f'<p class="empty">Growth needs whole-corpus runs at two corpus sizes or more; every run so far '
                f'saw {sizes[0] if sizes else "an unknown number of"} filing(s). The curve appears once a filing '
                'is added and the corpus re-evaluated.</p>']
    return [corpus_growth_chart(growth)]


def _regression_parts(regressions: pd.DataFrame | None, n_comparable: int) -> list[str]:
    if n_comparable == 0:
        return ['<p class="empty">No earlier run: every configuration x filing x scope has been evaluated once, '
                'so there is nothing to compare yet.</p>']
    if regressions is None:
        return ['<p class="empty">Regressions need the dbt marts (dbt build of dbt_metrics/).</p>']
    if regressions.empty:
        return [f'<p class="empty">No regressions flagged: {n_comparable} configuration x filing x scope '
                'pairs have an earlier run, and no latest mean left the previous 95% interval.</p>']
    shown = regressions.head(REGRESSION_ROWS)
    caption = (f"{'All' if len(shown) == len(regressions) else 'Top'} {len(shown)} of {len(regressions)} flagged "
               f"change(s) (regressions first, largest drop first) among {n_comparable} configuration x filing x "
               "scope pairs with an earlier run.")
    return [_table_block(shown, "regressions", caption)]


def _count_question_scopes(con: duckdb.DuckDBPyConnection) -> int:
    if not _has_table(con, "eval", "retrieval_results"):
        return 0
    return int(con.execute("select count(*) from (select distinct qa_id, scope from eval.retrieval_results)")
               .fetchall()[0][0])


def report_summary(board: pd.DataFrame) -> pd.DataFrame:
    """The best configuration of each scope and k (rank 1) with its page nDCG and hit rate: the table the
    eval_report asset shows in the Dagster UI."""
    if board.empty:
        return pd.DataFrame()
    best = board.sort_values(["scope", "k", "rank_in_scope_k", "config_name"]).groupby(["scope", "k"]).head(1)
    n_configs = board.groupby(["scope", "k"]).size().rename("configs").reset_index()
    best = best.merge(n_configs, on=["scope", "k"])
    return pd.DataFrame({
        "scope": best["scope"], "k": best["k"].astype(int), "best": best["config_name"],
        "ndcg_page": [_fmt_ci(r, "ndcg_page") for _, r in best.iterrows()],
        "hit_page": [_fmt_ci(r, "hit_page") for _, r in best.iterrows()],
        "questions": best["n_questions"].astype(int), "configs": best["configs"].astype(int),
    }).reset_index(drop=True)


def load_report_summary(warehouse: str | os.PathLike | duckdb.DuckDBPyConnection) -> pd.DataFrame:
    with _open(warehouse) as con:
        return report_summary(load_leaderboard(con))


def _section(title: str, parts: Sequence[str], empty_message: str) -> str:
    body = "\n".join(parts) if parts else f'<p class="empty">{html.escape(empty_message)}</p>'
    anchor = "-".join(re.sub(r"[^a-z0-9 ]", "", title.lower()).split()[:3])
    return f'<section id="{html.escape(anchor)}"><h2>{html.escape(title)}</h2>\n{body}\n</section>'


def build_report(warehouse: str | os.PathLike | duckdb.DuckDBPyConnection, out_path: str | os.PathLike) -> Path:
    """Write the HTML report for ``warehouse`` (a path or an open connection) to ``out_path``.

    Written to a temp file and renamed, so a browser or the Dagster UI never opens half a report.
    ``MartsNotBuilt`` when there are evaluation results but no marts (see ``marts_needed``).
    """
    out = Path(out_path)
    with _open(warehouse) as con:
        missing = missing_marts(con)
        if missing:
            raise MartsNotBuilt(f"the warehouse has evaluation results but the dbt marts are not built "
                                f"({', '.join(missing)}): {MARTS_REMEDY}.")
        board = load_leaderboard(con)
        by_type = load_by_question_type(con)
        growth = load_corpus_growth(con)
        worst = load_worst_questions(con)
        n_question_scopes = _count_question_scopes(con)
        ranks = load_question_ranks(con, worst) if not worst.empty else {}
        evidence_pages = load_evidence_pages(con)
        quality, states = load_answer_quality(con)
        na_reasons = load_answer_na_reasons(con) if not quality.empty else {}
        regressions = load_flagged_regressions(con)
        sanity_answers, random_retrieval = load_sanity_answers(con), load_random_retrieval(con)
        agreement_html = external_agreement_section(con)
        people_html = answer_agreement_section(con)
        corpus_cost_html = corpus_cost_section(con)
        n_comparable = count_rerun_comparisons(con)
        filings = load_filings_evaluated(con)

    sections = [
        _section("Filings evaluated", [filings_table(filings)] if not filings.empty else [],
                 "No filing evaluated yet."),
        _section("Retriever leaderboard",
                 [leaderboard_table(board), *leaderboard_charts(board)] if not board.empty else [],
                 "No retrieval evaluation yet."),
        _section("Metrics per question type", question_type_heatmaps(by_type) if not by_type.empty else [],
                 "No retrieval evaluation yet."),
        _section("Corpus growth", _growth_parts(growth), "No whole-corpus (scope=corpus) evaluation yet."),
        _section("Answer quality",
                 [answer_quality_table(quality, na_reasons), *answer_quality_charts(quality, states)] if not quality.empty else [],
                 "No answer evaluation yet."),
        _section("Sanity checks", sanity_tables(sanity_answers, random_retrieval),
                 "No sanity answerer or sanity_random results yet."),
        _section("Regressions (latest vs previous run, outside the previous 95% interval)",
                 _regression_parts(regressions, n_comparable), ""),
        _section("Worst questions",
                 [worst_questions_table(worst, n_question_scopes, ranks, evidence_pages)] if not worst.empty else [],
                 "No retrieval evaluation yet."),
        agreement_html,
        people_html,
        corpus_cost_html,
    ]
    generated = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>finrag evaluation report</title>
<style>{CSS}</style>
<script type="text/javascript">{get_plotlyjs()}</script>
</head><body>
<h1>finrag evaluation report</h1>
<p class="meta">Generated {generated} from the dbt marts. Means count failed questions as 0; intervals are
95%: the evaluation engine's bootstrap intervals where available, else Wilson (hit rates) or the
normal approximation (graded metrics). "≈ best" marks a configuration whose paired difference to the
best of its scope and k (page nDCG) has a 95% CI containing 0: the data cannot tell them apart.</p>
{chr(10).join(sections)}
</body></html>
"""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, out)
    return out
