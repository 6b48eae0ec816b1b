"""The metric registry is the one list: the runner, the eval DDL, the dbt macros, the report and the docs
table are read or generated from it, and adding a metric is one entry plus its function (the worked
example of docs/ARCHITECTURE.md, run here)."""

from __future__ import annotations

import dataclasses

import duckdb
import pytest

from finrag_pipeline.core.evaluation import leaderboard, runner
from finrag_pipeline.core.models import EvidencePlace, Hit, QAItem
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.reporting import report
from finrag_pipeline.core.scoring import answer_metrics, metrics
from finrag_pipeline.core.scoring import metric_registry as reg
from finrag_pipeline.core.scoring.response_states import (
    FAILURE_STATES,
    STORED_FAILURE_STATES,
    SYSTEM_FAILURE_STATES,
)
from finrag_pipeline.core.scoring.results_views import ANSWER_SCORED, ensure_views, view_sql
from finrag_pipeline.core.warehouse import TABLE_DDL, _add_missing_columns
from finrag_pipeline.web import queries

# The metric columns as they were before the registry: the tables, marts and leaderboard rows keep them.
RETRIEVAL_COLUMNS_BEFORE = (
    "hit_chunk", "mrr_chunk", "precision_chunk", "recall_chunk", "ap_chunk", "ndcg_chunk",
    "hit_page", "mrr_page", "precision_page", "recall_page", "ap_page", "ndcg_page", "all_evidence_hit")
ANSWER_COLUMNS_BEFORE = (
    "correctness", "non_committal", "grounded", "period_ok", "citation_precision", "citation_recall",
    "block_citation_precision", "block_citation_recall", "abstention_correct", "faithfulness",
    "answer_relevancy", "state_correct")


def _table_columns(ddl: str) -> list[tuple[str, str]]:
    con = duckdb.connect()
    con.execute(f"create table t ({ddl})")
    return [(r[0], r[1]) for r in con.execute("describe t").fetchall()]


def test_committed_dbt_macro_is_the_generated_one():
    committed = (REPO_ROOT / reg.DBT_MACRO_PATH).read_text(encoding="utf-8")
    assert committed == reg.render_dbt_macros(), (
        "dbt_metrics/macros/metric_lists.sql differs from the registry: run "
        "`python -m finrag_pipeline.core.scoring.metric_registry --write`")


def test_docs_table_is_the_generated_one():
    text = (REPO_ROOT / reg.DOCS_PATH).read_text(encoding="utf-8")
    assert reg.render_docs_table() in text
    assert reg.docs_with_table(text) == text
    for name in (*RETRIEVAL_COLUMNS_BEFORE, *ANSWER_COLUMNS_BEFORE):
        assert f"| `{name}` |" in text


# Added after the registry (issue 15): metrics read from the retriever's own page ranking (top_pages).
RANKED_PAGE_COLUMNS = ("hit_ranked_page", "recall_ranked_page", "all_evidence_hit_ranked_page")


# Added by issue 25: the judge-free recall of a reference's key facts (narrative answers).
KEY_FACT_COLUMNS = ("key_fact_recall",)


def test_every_reader_uses_the_registry_lists():
    assert (*RETRIEVAL_COLUMNS_BEFORE, *RANKED_PAGE_COLUMNS) == reg.RETRIEVAL_METRICS
    assert (*ANSWER_COLUMNS_BEFORE, *KEY_FACT_COLUMNS) == reg.ANSWER_METRICS
    assert runner.RETRIEVAL_METRICS == reg.RETRIEVAL_METRICS
    assert answer_metrics.ANSWER_METRICS == reg.ANSWER_METRICS
    assert {"non_committal", "abstention_correct"} == answer_metrics.RATE_METRICS
    assert list(reg.RETRIEVAL_METRICS) == report.ALL_RETRIEVAL_METRICS
    assert list(reg.ANSWER_METRICS) == report.ANSWER_METRICS
    assert set(report.CHART_METRICS) <= set(reg.KEY_RETRIEVAL_METRICS)
    assert set(queries.BOARD_METRICS) <= set(reg.RETRIEVAL_METRICS)   # the web board's display subset
    assert {"hit_chunk", "hit_page", "all_evidence_hit", "hit_ranked_page", "all_evidence_hit_ranked_page",
            "correctness", "non_committal", "abstention_correct", "state_correct"} == reg.BINARY_METRICS
    assert set(reg.KEY_RETRIEVAL_METRICS) == {"hit_chunk", "mrr_chunk", "ndcg_chunk", "recall_chunk", "hit_page",
                                              "mrr_page", "all_evidence_hit"}
    assert {"non_committal"} == reg.LOWER_IS_BETTER
    # the ranking functions are exactly the registry's ranking values
    assert set(metrics.RANKING_FUNCTIONS) == set(metrics.METRIC_NAMES) == {
        "hit", "mrr", "precision", "recall", "ap", "ndcg", "all_evidence_hit"}
    # the runner's row columns hold every metric once, in registry order
    assert [c for c in runner.RETRIEVAL_COLUMNS if c in reg.RETRIEVAL_METRICS] == list(reg.RETRIEVAL_METRICS)
    assert [c for c in runner.ANSWER_COLUMNS if c in reg.ANSWER_METRICS] == list(reg.ANSWER_METRICS)


def test_response_states_and_keys_are_defined_once():
    assert report.RETRIEVAL_KEYS == list(leaderboard.RETRIEVAL_KEYS) == list(reg.RETRIEVAL_KEYS)
    assert {"backend_error", "invalid_output", "error", *SYSTEM_FAILURE_STATES} == STORED_FAILURE_STATES
    assert FAILURE_STATES < STORED_FAILURE_STATES
    # The failure states are scored in the warehouse view (core/scoring/results_views.py); no dbt
    # model or macro lists them again.
    assert all(f"'{s}'" in view_sql()[ANSWER_SCORED] for s in STORED_FAILURE_STATES)
    for path in (REPO_ROOT / "dbt_metrics").rglob("*.sql"):
        assert "'invalid_output'" not in path.read_text(encoding="utf-8"), path


@pytest.mark.parametrize(("table", "expected"), [
    ("eval.retrieval_results", RETRIEVAL_COLUMNS_BEFORE),
    ("eval.answer_results", ANSWER_COLUMNS_BEFORE),
])
def test_eval_tables_have_the_registry_columns_in_order(table, expected):
    cols = _table_columns(TABLE_DDL[table])
    metric_cols = [(n, t) for n, t in cols if n in expected]
    assert metric_cols == [(n, "DOUBLE") for n in expected]
    names = [n for n, _ in cols]
    # a contiguous block, where it always was (after the ranks / the response state)
    first = names.index(expected[0])
    assert names[first:first + len(expected)] == list(expected)
    assert names[first - 1] == ("first_relevant_rank_page" if table == "eval.retrieval_results" else "response_state")


def test_registry_rejects_bad_entries():
    ok = reg.RETRIEVAL_METRIC_SPECS[0]
    with pytest.raises(ValueError, match="registered twice"):
        reg.validate([ok, ok])
    with pytest.raises(ValueError, match="SQL identifier"):
        reg.validate([dataclasses.replace(ok, name="hit; drop table x")])
    with pytest.raises(ValueError, match="need `ranking`"):
        reg.validate([dataclasses.replace(ok, ranking=None)])


# --- The worked example of docs/ARCHITECTURE.md: a new retrieval metric "top1" (is the first hit relevant?)


def _doc_metric_entry() -> reg.MetricSpec:
    """The registry entry of docs/ARCHITECTURE.md "Adding a metric", evaluated as the registry module would."""
    import ast
    import re

    text = (REPO_ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- worked-example: metric -->\n```python\n(.*?)```", text, re.S)
    assert match, "the worked example is gone from docs/ARCHITECTURE.md"
    tree = ast.parse(match.group(1))
    *defs, entry = tree.body
    namespace = {"MetricSpec": reg.MetricSpec}
    exec(compile(ast.Module(body=defs, type_ignores=[]), "ARCHITECTURE.md", "exec"), namespace)
    return eval(compile(ast.Expression(entry.value), "ARCHITECTURE.md", "eval"), namespace)


TOP1 = _doc_metric_entry()


def test_worked_example_adding_a_metric(monkeypatch, tmp_path):
    assert TOP1.name == "top1_page" and TOP1.function is not None
    specs = (*reg.RETRIEVAL_METRIC_SPECS, TOP1)
    reg.validate((*specs, *reg.ANSWER_METRIC_SPECS))
    # the entry (with its function) is all the runner needs: metrics.py registers entries' functions
    monkeypatch.setattr(metrics, "RANKING_FUNCTIONS", dict(metrics.RANKING_FUNCTIONS))
    metrics.register_ranking_functions(specs)
    monkeypatch.setattr(runner, "RETRIEVAL_METRIC_SPECS", specs)
    item = QAItem(qa_id="q", filing_id="F", question="?", reference_answer="", question_type="numerical",
                  evidence=[[EvidencePlace("c2", 7, "F")]])
    hits = [Hit("c1", 2.0, 1, "F", 3, 3, "prose", "", "bm25"), Hit("c2", 1.0, 2, "F", 7, 7, "prose", "", "bm25")]
    row, status, _ = runner.retrieval_metrics_for(hits, item, 2)
    assert status == "ok"
    assert row["top1_page"] == 0.0 and row["hit_page"] == 1.0 and row["mrr_page"] == 0.5
    row, _, _ = runner.retrieval_metrics_for(hits[::-1], item, 2)
    assert row["top1_page"] == 1.0
    # the DDL column, its migration into an existing warehouse, the dbt macro and the docs row follow
    assert reg.ddl_columns(specs).endswith("all_evidence_hit_ranked_page DOUBLE, top1_page DOUBLE")
    con = duckdb.connect()
    con.execute("create schema eval")
    con.execute(f"create table eval.retrieval_results ({TABLE_DDL['eval.retrieval_results']})")
    new_ddl = TABLE_DDL["eval.retrieval_results"].replace(reg.ddl_columns(reg.RETRIEVAL_METRIC_SPECS),
                                                          reg.ddl_columns(specs))
    have = {r[0].lower() for r in con.execute("describe eval.retrieval_results").fetchall()}
    _add_missing_columns(con, "eval.retrieval_results", new_ddl, have)
    assert ("top1_page", "DOUBLE") in {(r[0], r[1]) for r in con.execute("describe eval.retrieval_results").fetchall()}
    # the results views score it like every metric: a failed question scores 0, no_relevant is left out
    con.execute("create table eval.runs (run_id varchar, started_at timestamp, finished_at timestamp, "
                "n_filings_in_corpus integer)")
    con.execute(f"create table eval.answer_results ({TABLE_DDL['eval.answer_results']})")
    ensure_views(con, specs)
    con.execute("insert into eval.retrieval_results (run_id, config_name, qa_id, status, top1_page) values "
                "('R', 'bm25', 'q1', 'ok', 1.0), ('R', 'bm25', 'q2', 'error', NULL), ('R', 'bm25', 'q3', 'no_relevant', 1.0)")
    assert con.execute("select qa_id, top1_page from eval.retrieval_current order by qa_id").fetchall() == [
        ("q1", 1.0), ("q2", 0.0), ("q3", None)]
    assert "{'name': 'top1_page', 'binary': true}" in reg.render_dbt_macros(specs)
    assert "| `top1_page` | page | higher | binary |" in reg.render_docs_table(specs)
    # the committed files do not have it (the example only ran here)
    assert "top1_page" not in (REPO_ROOT / reg.DBT_MACRO_PATH).read_text(encoding="utf-8")
