"""The HTML report: from the eval tables alone, from the dbt marts, and from an empty warehouse."""

from __future__ import annotations

import shutil

import duckdb
import pandas as pd
import pytest
from _synthetic_warehouse import build_synthetic_warehouse, dbt_executable, run_dbt_build
from plotly.offline import get_plotlyjs

from finrag_pipeline.core.reporting import build_report
from finrag_pipeline.core.reporting import report as report_module
from finrag_pipeline.core.reporting.report import (
    load_answer_quality,
    load_leaderboard,
    load_question_ranks,
    load_report_summary,
    load_worst_questions,
)
from finrag_pipeline.core.warehouse import Warehouse

CHART_DIVS = ['id="chart-leaderboard-filing"', 'id="chart-leaderboard-corpus"', 'id="chart-question-type-filing"',
              'id="chart-question-type-corpus"', 'id="chart-corpus-growth"', 'id="chart-answer-quality"',
              'id="chart-response-states"']


def assert_full_report(text: str) -> None:
    for div in CHART_DIVS:
        assert div in text, div
    # Leaderboard numbers: dense-k5 hit 0.5 with its Wilson interval, bm25-k5 (filing) 4/6.
    assert "0.500 [0.150, 0.850]" in text
    assert "0.667 [0.300, 0.903]" in text
    assert "75.0%" in text                          # dense-k5 coverage: one of four questions failed
    assert "Where is Apple headquartered?" in text   # among the worst questions
    assert "qwen-0.5b" in text and "No answer evaluation yet" not in text
    # Self-contained: plotly.js inlined exactly once, nothing loaded from a CDN.
    assert text.count(get_plotlyjs()[:400]) == 1
    assert "<script src=" not in text


def test_report_from_eval_tables(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh)
    out = build_report(wh, tmp_path / "reports" / "report.html")
    assert out.exists()
    text = out.read_text()
    assert "from the eval tables" in text
    assert_full_report(text)


@pytest.mark.skipif(shutil.which(dbt_executable()) is None, reason="dbt is not installed")
def test_report_from_marts_with_an_open_connection(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh)
    shutil.copyfile(wh, tmp_path / "no_marts.duckdb")
    result = run_dbt_build(wh, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:]
    con = duckdb.connect(str(wh), read_only=True)
    try:
        out = build_report(con, tmp_path / "report.html")
    finally:
        con.close()
    text = out.read_text()
    assert "from the dbt marts" in text
    assert 'class="regressions"' in text and "AAPL-2022-10K" in text   # bm25-k5's flagged drop
    # corpus-vs-filing cost and resolution of bm25-k5 (hand-computed in _synthetic_warehouse.py)
    assert 'class="corpus-cost"' in text and "-0.167" in text
    assert 'class="company-resolution"' in text and "0.667" in text and "3 / 1 / 1 / 1" in text
    assert_full_report(text)
    assert_fallback_matches_marts(wh, tmp_path / "no_marts.duckdb")


def assert_fallback_matches_marts(with_marts, without_marts) -> None:
    """The report's Python fallback computes the same leaderboard and answer numbers as dbt."""
    keys = ["config_name", "scope"]
    cols = ["n_questions", "n_no_relevant", "coverage", "hit_chunk_mean", "hit_chunk_ci_low", "mrr_chunk_mean",
            "mrr_chunk_ci_high", "hit_page_mean", "ndcg_page_ci_low", "latency_p50_ms", "rank_in_scope_k"]
    frames = []
    for path in (with_marts, without_marts):
        con = duckdb.connect(str(path), read_only=True)
        try:
            board = load_leaderboard(con).sort_values(keys).reset_index(drop=True)
            quality, _ = load_answer_quality(con)
        finally:
            con.close()
        frames.append((board[keys + cols].astype({c: "float64" for c in cols}),
                       quality.sort_values("model").reset_index(drop=True)))
    pd.testing.assert_frame_equal(frames[0][0], frames[1][0], check_dtype=False)
    answer_cols = ["correctness_mean", "correctness_ci_low", "faithfulness_mean", "faithfulness_coverage",
                   "state_correct_mean"]
    pd.testing.assert_frame_equal(frames[0][1][answer_cols].astype("float64"),
                                  frames[1][1][answer_cols].astype("float64"))


def test_report_on_an_empty_warehouse(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    with Warehouse(wh).connect():   # tables exist, no rows
        pass
    text = build_report(wh, tmp_path / "report.html").read_text()
    assert "No retrieval evaluation yet." in text
    assert "No answer evaluation yet." in text
    assert "chart-leaderboard" not in text


def test_report_on_a_warehouse_without_eval_tables(tmp_path):
    wh = tmp_path / "bare.duckdb"
    duckdb.connect(str(wh)).close()
    text = build_report(wh, tmp_path / "report.html").read_text()
    assert "No answer evaluation yet." in text


def test_report_with_retrieval_but_no_answers(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh, with_answers=False)
    text = build_report(wh, tmp_path / "report.html").read_text()
    assert "No answer evaluation yet." in text
    assert 'id="chart-leaderboard-filing"' in text


def test_report_sanity_checks_section(tmp_path):
    """Sanity answerers with their correctness on answerable questions (<= 0.05: ok), and sanity_random's
    chunk hit rate beside its chance level 1 - C(N-g, k)/C(N, k)."""
    import json
    from math import comb

    from finrag_pipeline.core.evaluation.runner import RETRIEVAL_COLUMNS
    from finrag_pipeline.core.reporting.report import (
        load_random_retrieval,
        load_sanity_answers,
        load_worst_questions,
    )

    wh_path = tmp_path / "warehouse.duckdb"
    wh = build_synthetic_warehouse(wh_path)
    with duckdb.connect(str(wh_path), read_only=True) as con:
        worst_before = load_worst_questions(con)
    f = "AAPL-2022-10K"
    # 20 leaf chunks in the filing; q1 has 2 evidence chunks, q2 one: chance at k=5 = mean of
    # 1 - C(18,5)/C(20,5) and 1 - C(19,5)/C(20,5)
    wh.replace_rows("core.chunks", [{"chunk_id": f"c{i}", "filing_id": f, "is_leaf": True} for i in range(20)],
                    where={"filing_id": f})
    ev = {"q1": [[{"chunk_id": "c1", "page": 1, "filing_id": f}, {"chunk_id": "c2", "page": 1, "filing_id": f}]],
          "q2": [[{"chunk_id": "c3", "page": 2, "filing_id": f}]]}
    wh.replace_rows("qa.items", [{"qa_id": q, "filing_id": f, "evidence": json.dumps(e)} for q, e in ev.items()],
                    where={"qa_id": list(ev)})
    rows = []
    for qa_id, hit in (("q1", 1.0), ("q2", 0.0)):
        row = dict.fromkeys(RETRIEVAL_COLUMNS)
        row.update(run_id="R9", filing_id=f, scope="filing", config_name="sanity_random@5", retriever="sanity_random",
                   k=5, qa_id=qa_id, hit_chunk=hit, status="ok", evaluated_at=pd.Timestamp("2026-01-01"))
        rows.append(row)
    wh.replace_rows("eval.retrieval_results", rows, where={"run_id": "R9"})
    with duckdb.connect(str(wh_path), read_only=True) as con:
        answers = load_sanity_answers(con).set_index("model")
        rnd = load_random_retrieval(con)
        worst_after = load_worst_questions(con)
    # the chance baseline is not a configuration a question is hard for
    cols = ["qa_id", "filing_id", "scope", "n_configs", "hit_chunk_mean", "ndcg_chunk_mean"]
    pd.testing.assert_frame_equal(worst_before[cols].reset_index(drop=True), worst_after[cols].reset_index(drop=True))
    assert list(answers.index) == ["sanity_echo"]
    assert answers.loc["sanity_echo", "correctness"] == 0.0 and answers.loc["sanity_echo", "check"] == "ok"
    expected = ((1 - comb(18, 5) / comb(20, 5)) + (1 - comb(19, 5) / comb(20, 5))) / 2
    (row,) = rnd.to_dict("records")
    assert row["chance_level"] == pytest.approx(expected) and row["hit_chunk"] == 0.5 and row["n_questions"] == 2
    text = build_report(wh_path, tmp_path / "r.html").read_text()
    assert "Sanity checks" in text and 'class="sanity-answers"' in text and 'class="sanity-random"' in text

def test_report_shows_external_agreement(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh, with_statistics=True)   # + the hand-computed agreement case
    text = build_report(wh, tmp_path / "report.html").read_text()
    assert 'class="external-agreement"' in text and 'class="external-agreement-configs"' in text
    assert "analyst_questions" in text and "all_evidence_hit@5" in text
    assert "+0.00 [" in text                               # tau-b 0 with its bootstrap interval
    assert "1 of 3: A@5 &gt; B@5 on synthetic, B@5 &gt; A@5 on external" in text   # escaped, not raw HTML


def test_report_without_external_set_says_how_to_get_one(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh)
    text = build_report(wh, tmp_path / "report.html").read_text()
    assert "No external QA set imported" in text

# ---------------------------------------------------------------------------------------------
# What the report says about itself: how much of each table it shows, what could not be computed,
# what there was nothing to compare with.


def _section(text: str, title: str) -> str:
    start = text.index(f"<h2>{title}")
    return text[start:text.index("</section>", start)]


def test_leaderboard_says_top_n_of_m_and_is_sorted_by_scope_and_k(tmp_path, monkeypatch):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh)
    # 7 rows: filing k=5 (bm25-k5, bm25-k5-w256, dense-k5), filing k=10 (3 configs), corpus k=5 (bm25-k5)
    monkeypatch.setattr(report_module, "LEADERBOARD_ROWS", 1)
    section = _section(build_report(wh, tmp_path / "r.html").read_text(), "Retriever leaderboard")
    assert "Top 3 of 7 rows: the best 1 configurations of each scope and k" in section
    assert '<div class="scroll"><table class="leaderboard">' in section
    body = section[section.index("<tbody>"):section.index("</tbody>")]
    rows = [r.split("</td><td>")[:5] for r in body.split("<tr><td>")[1:]]
    assert [(r[0], r[4]) for r in rows] == [("corpus", "5"), ("filing", "5"), ("filing", "10")]


def test_uncomputed_metrics_show_na_with_the_reason(tmp_path, monkeypatch):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh)
    section = _section(build_report(wh, tmp_path / "r.html").read_text(), "Retriever leaderboard")
    w256 = section[section.index("<td>bm25-k5-w256</td>"):]
    w256 = w256[:w256.index("</tr>")]
    # chunk-level metrics of a chunking variant are not computable; page-level ones are
    assert w256.count("<td>n/a</td>") == 4 and "0.750 [" in w256
    assert "n/a: not computed. Chunk-level metrics of a chunking variant" in section


def test_question_types_are_a_heatmap_with_intervals_on_hover(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh)
    text = build_report(wh, tmp_path / "r.html").read_text()
    section = _section(text, "Metrics per question type")
    assert section.count('"hovertemplate":"%{y}\\u003cbr\\u003e%{x}: %{text}') == 2   # one heatmap per scope
    # bm25-k5 on the two factual questions (q2 missed, m1 hit): 0.5 with its Wilson interval
    assert "0.500 [0.095, 0.905], n=2" in section
    assert "(not computable), n=2" in section   # chunk hits of the window-256 variant ("n/a", "/" escaped)


def test_growth_regressions_and_filings_when_there_is_a_single_run(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh)
    con = duckdb.connect(str(wh))
    con.execute("delete from eval.retrieval_results where run_id in ('A1', 'A4')")  # the earlier runs
    con.execute("insert into core.corpus_versions (corpus_state, filing_ids, n_filings, n_chunks, embedder) "
                "values ('corpus-2', '[]', 2, 6, 'test')")
    con.close()
    text = build_report(wh, tmp_path / "r.html").read_text()
    assert 'id="chart-corpus-growth"' not in text
    assert "every run so far saw 2 filing(s)" in _section(text, "Corpus growth")
    assert "No earlier run: every configuration x filing x scope has been evaluated once" in text
    filings = _section(text, "Filings evaluated")
    assert "All 2 filings evaluated" in filings
    assert "<td>AAPL-2022-10K</td><td>Apple Inc.</td><td>2022</td><td>5</td>" in filings.replace("\n", "")
    assert filings.count("<td>current</td>") == 2


def test_worst_questions_show_reference_evidence_and_every_configurations_rank(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh)
    con = duckdb.connect(str(wh))
    con.execute("""update qa.items set evidence = '[[{"chunk_id": "c", "filing_id": "AAPL-2022-10K", "page": 41}],
                   [{"chunk_id": "d", "filing_id": "AAPL-2022-10K", "page": 7}, {"chunk_id": "e",
                     "filing_id": "AAPL-2022-10K", "page": 9}]]' where qa_id = 'q2'""")
    con.execute("update eval.retrieval_results set first_relevant_rank_page = 3 "
                "where qa_id = 'q2' and config_name = 'bm25-k5-w256'")
    worst = load_worst_questions(con)
    ranks = load_question_ranks(con, worst)
    con.close()
    # q2 in the filing scope: dense-k5 missed it, the w256 variant found its page at rank 3, the newest bm25-k5
    # run (A2) missed it
    assert ranks[("q2", "filing")] == "bm25-k5: miss; bm25-k5-w256: #3; dense-k5: miss"
    assert ranks[("q4", "filing")].startswith("bm25-k5: error")
    section = _section(build_report(wh, tmp_path / "r.html").read_text(), "Worst questions")
    assert "p. 41 | p. 7, 9" in section and "<td>42</td>" in section
    assert "bm25-k5-w256: #3" in section
    assert "none found it" in section          # a question every configuration missed has no "best"
    assert "The 21 hardest of 33 question x scope pairs" in section


def test_report_summary_lists_the_best_of_each_scope_and_k(tmp_path):
    wh = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(wh)
    summary = load_report_summary(wh)
    assert list(zip(summary["scope"], summary["k"], summary["configs"], strict=True)) == [
        ("corpus", 5, 1), ("filing", 5, 3), ("filing", 10, 3)]
    assert summary.iloc[0]["best"] == "bm25-k5"


def test_report_served_over_http(tmp_path):
    import threading
    import urllib.request

    from finrag_pipeline.core.reporting.serve import make_server

    (tmp_path / "finrag_report.html").write_text("<html>report</html>")
    server = make_server(tmp_path, host="127.0.0.1", port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/finrag_report.html"
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200 and response.read() == b"<html>report</html>"
    finally:
        server.shutdown()
        server.server_close()
