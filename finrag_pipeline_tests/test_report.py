"""The HTML report: from the dbt marts (never its own statistics), what it says without them, and from an
empty warehouse."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from _synthetic_warehouse import build_synthetic_warehouse, run_dbt_build
from plotly.offline import get_plotlyjs

from finrag_pipeline.core.reporting import build_report
from finrag_pipeline.core.reporting import report as report_module
from finrag_pipeline.core.reporting.report import (
    MartsNotBuilt,
    load_answer_quality,
    load_leaderboard,
    load_question_ranks,
    load_report_summary,
    load_worst_questions,
    marts_needed,
)
from finrag_pipeline.core.warehouse import Warehouse
from finrag_pipeline.defs.marts.project import dbt_executable

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


def _marted(tmp_path_factory, name: str, mutate=None, **kwargs) -> Path:
    """The synthetic warehouse (``mutate`` applied) with its dbt marts built, once per module."""
    if shutil.which(dbt_executable()) is None:
        pytest.skip("dbt is not installed")
    scratch = tmp_path_factory.mktemp(name)
    wh = scratch / "warehouse.duckdb"
    build_synthetic_warehouse(wh, **kwargs)
    if mutate is not None:
        with duckdb.connect(str(wh)) as con:
            mutate(con)
    result = run_dbt_build(wh, scratch)
    assert result.returncode == 0, result.stdout[-3000:]
    return wh


@pytest.fixture(scope="module")
def built_marts(tmp_path_factory) -> Path:
    return _marted(tmp_path_factory, "marts")


@pytest.fixture
def wh(built_marts, tmp_path) -> Path:
    """A private copy of the warehouse with marts: a test may change it."""
    path = tmp_path / "warehouse.duckdb"
    shutil.copyfile(built_marts, path)
    return path


def test_report_from_the_marts_with_an_open_connection(wh, tmp_path):
    con = duckdb.connect(str(wh), read_only=True)
    try:
        out = build_report(con, tmp_path / "reports" / "report.html")
    finally:
        con.close()
    text = out.read_text()
    assert "from the dbt marts" in text
    assert 'class="regressions"' in text and "AAPL-2022-10K" in text   # bm25-k5's flagged drop
    # corpus-vs-filing cost and resolution of bm25-k5 (hand-computed in _synthetic_warehouse.py)
    assert 'class="corpus-cost"' in text and "-0.167" in text
    assert 'class="company-resolution"' in text and "0.667" in text and "3 / 1 / 1 / 1" in text
    assert_full_report(text)


def test_report_shows_the_marts_numbers_and_computes_none(wh, tmp_path):
    """The means and intervals shown are the marts' own: change them in the marts and the report follows
    (a report recomputing them from the eval rows would still show 0.500 [0.150, 0.850])."""
    before = build_report(wh, tmp_path / "before.html").read_text()
    with duckdb.connect(str(wh)) as con:
        con.execute("""update marts.mart_retriever_leaderboard set hit_chunk_mean = 0.123, hit_chunk_ci_low = 0.045,
                       hit_chunk_ci_high = 0.678 where config_name = 'dense-k5' and scope = 'filing'""")
        con.execute("update marts.mart_answer_quality set correctness_mean = 0.321, correctness_ci_low = 0.111, "
                    "correctness_ci_high = 0.555")
    text = build_report(wh, tmp_path / "r.html").read_text()
    assert "0.123 [0.045, 0.678]" not in before and "0.123 [0.045, 0.678]" in text
    assert text.count("0.500 [0.150, 0.850]") == before.count("0.500 [0.150, 0.850]") - 1   # dense-k5's, replaced
    assert "0.321 [0.111, 0.555]" not in before and "0.321 [0.111, 0.555]" in text


def test_report_module_has_no_statistics_of_its_own():
    """The marts' rules (means, Wilson / normal intervals, coverage, latency quantiles) live in dbt
    (dbt_metrics/macros/stats.sql) and the bootstrap in core/evaluation/leaderboard.py, never in report.py."""
    import re

    source = Path(report_module.__file__).read_text(encoding="utf-8")
    forbidden = re.compile(r"def (wilson|normal_interval|summarise)|\.std\(|\.quantile\(|\bZ\s*=\s*1\.96"
                           r"|_ci_(low|high)\"\]\s*=|_mean\"\]\s*=|\[\"coverage\"\]\s*=")
    assert [m.group(0) for m in forbidden.finditer(source)] == []
    assert forbidden.search("def wilson_interval(p, n):")      # the pattern does catch a copy


def test_report_without_marts_says_they_must_be_built(tmp_path):
    """Results but no marts: a clear error naming the remedy, never numbers of the report's own."""
    path = tmp_path / "warehouse.duckdb"
    build_synthetic_warehouse(path)
    with pytest.raises(MartsNotBuilt, match=r"results but the dbt marts are not built.*`finrag report`.*build_marts"):
        build_report(path, tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()
    with duckdb.connect(str(path), read_only=True) as con:
        assert marts_needed(con)
        with pytest.raises(MartsNotBuilt, match="marts.mart_retriever_leaderboard"):
            load_leaderboard(con)
        with pytest.raises(MartsNotBuilt, match="marts.mart_answer_quality"):
            load_answer_quality(con)


def test_a_build_older_than_a_mart_the_report_reads_needs_a_new_build(wh, tmp_path):
    """Marts from a build before mart_sanity_answers existed: the report names the missing mart (and
    `finrag report` rebuilds) instead of showing the other sections without it."""
    from finrag_pipeline.core.reporting.report import missing_marts

    with duckdb.connect(str(wh)) as con:
        assert missing_marts(con) == []
        con.execute("drop table marts.mart_sanity_answers")
        assert missing_marts(con) == ["mart_sanity_answers"] and marts_needed(con)
    with pytest.raises(MartsNotBuilt, match=r"\(mart_sanity_answers\)"):
        build_report(wh, tmp_path / "r.html")


@pytest.mark.slow
def test_finrag_report_builds_the_marts_first(tmp_path):
    """`finrag report` on a home whose marts were never built runs the build_marts job (the Dagster
    path), then writes the report from the analysts' snapshot. ~1-4 min on 2 shared cores: slow."""
    from click.testing import CliRunner

    from finrag_pipeline.cli import main
    from finrag_pipeline.core.paths import FinragPaths

    if shutil.which(dbt_executable()) is None:
        pytest.skip("dbt is not installed")
    paths = FinragPaths.from_env(str(tmp_path / "home")).ensure()
    build_synthetic_warehouse(paths.warehouse)
    result = CliRunner().invoke(main, ["--home", str(paths.home), "report"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "no dbt marts yet: building them first" in result.output
    text = (paths.reports_dir / "finrag_report.html").read_text()
    assert "from the dbt marts" in text
    for div in CHART_DIVS:
        assert div in text, div
    # the job computed the bootstrap leaderboard too: dense-k5's hit rate 0.5 with bootstrap bounds
    # (not the Wilson ones of a build without eval.leaderboard)
    assert "Where is Apple headquartered?" in text and "qwen-0.5b" in text
    with duckdb.connect(str(paths.warehouse_snapshot), read_only=True) as con:
        assert not marts_needed(con)
        assert con.execute("select count(*) from marts.mart_retriever_leaderboard "
                           "where hit_chunk_boot_ci_low is not null").fetchone()[0] > 0
    again = CliRunner().invoke(main, ["--home", str(paths.home), "report"], catch_exceptions=False)
    assert again.exit_code == 0 and "building them first" not in again.output   # built once


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


def test_report_with_retrieval_but_no_answers(wh, tmp_path):
    with duckdb.connect(str(wh)) as con:   # the state after a build with no answer evaluation
        for table in ("eval.answer_results", "marts.mart_answer_quality", "marts.mart_answer_response_states"):
            con.execute(f"delete from {table}")
    text = build_report(wh, tmp_path / "report.html").read_text()
    assert "No answer evaluation yet." in text
    assert 'id="chart-leaderboard-filing"' in text


def test_report_sanity_checks_section(wh, tmp_path):
    """Sanity answerers against the registry's correctness limit, and sanity_random's chunk hit, page hit
    and all-evidence page hit beside their chance levels, all read from the marts (mart_sanity_answers,
    mart_chance_levels): ok within the band, FAIL outside it, n/a with the reason where no chance level was
    recorded."""
    from finrag_pipeline.core.evaluation.runner import RETRIEVAL_COLUMNS
    from finrag_pipeline.core.reporting.report import load_random_retrieval, load_sanity_answers
    from finrag_pipeline.core.scoring.metric_registry import SANITY_LIMITS

    f = "AAPL-2022-10K"
    rows = []
    # k=5 (chance recorded): hit_chunk [1, 0, 0, 0] vs chance 0.1 each (band 3 * sqrt(4 * 0.09) / 4 = 0.45);
    # hit_page [1, 1, 0, 0] vs 0.5 each (band 0.75); all-evidence [1, 0, 0, 0] vs chance 0: band 0, so
    # 0.25 is outside 0 + 0.02 -> FAIL. k=3: nothing recorded -> n/a with the reason.
    for k, chances in ((5, dict(hit_chunk_chance=0.1, hit_page_chance=0.5, all_evidence_hit_chance=0.0)), (3, {})):
        for i, qa_id in enumerate(("q1", "q2", "q3", "q4")):
            row = dict.fromkeys(RETRIEVAL_COLUMNS)
            row.update(run_id=f"R{k}", filing_id=f, scope="filing", config_name=f"sanity_random@{k}",
                       retriever="sanity_random", k=k, qa_id=qa_id, status="ok", hit_chunk=float(i == 0),
                       hit_page=float(i < 2), all_evidence_hit=float(i == 0), evaluated_at=pd.Timestamp("2026-01-01"),
                       **({"chance_pool_size": 20, **chances} if chances else {}))
            rows.append(row)
    Warehouse(wh).replace_rows("eval.retrieval_results", rows, where={"run_id": ["R5", "R3"]})
    result = run_dbt_build(wh, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:]
    with duckdb.connect(str(wh), read_only=True) as con:
        answers = load_sanity_answers(con).set_index("model")
        rnd = load_random_retrieval(con).set_index(["k", "metric"])
    assert list(answers.index) == ["sanity_echo"]
    assert answers.loc["sanity_echo", "correctness"] == 0.0 and answers.loc["sanity_echo", "check"] == "ok"
    assert answers.loc["sanity_echo", "max_correctness"] == pytest.approx(SANITY_LIMITS.max_correctness)
    chunk, page, every = (rnd.loc[(5, m)] for m in ("hit_chunk", "hit_page", "all_evidence_hit"))
    assert (chunk["mean"], chunk["chance_level"], chunk["chance_band"]) == (
        pytest.approx(0.25), pytest.approx(0.1), pytest.approx(0.45))
    assert chunk["check"] == "ok" and page["check"] == "ok" and page["chance_level"] == pytest.approx(0.5)
    assert every["check"] == "FAIL"
    assert rnd.loc[(3, "hit_page"), "check"].startswith("n/a: 4 of 4 questions were evaluated before")
    text = build_report(wh, tmp_path / "r.html").read_text()
    assert "Sanity checks" in text and 'class="sanity-answers"' in text and 'class="sanity-random"' in text
    assert "FAIL" in text and "0.500 \u00b1 0.750" in text   # the leaderboard's page chance column


@pytest.fixture(scope="module")
def built_marts_with_statistics(tmp_path_factory) -> Path:
    """+ eval.leaderboard / eval.comparisons (bootstrap) and the hand-computed agreement case."""
    return _marted(tmp_path_factory, "marts-stats", with_statistics=True)


def test_report_shows_external_agreement(built_marts_with_statistics, tmp_path):
    wh = built_marts_with_statistics
    text = build_report(wh, tmp_path / "report.html").read_text()
    assert 'class="external-agreement"' in text and 'class="external-agreement-configs"' in text
    assert "analyst_questions" in text and "all_evidence_hit@5" in text
    assert "+0.00 [" in text                               # tau-b 0 with its bootstrap interval
    assert "1 of 3: A@5 &gt; B@5 on synthetic, B@5 &gt; A@5 on external" in text   # escaped, not raw HTML


def test_report_uses_bootstrap_bounds_and_marks_configs_not_distinguishable(built_marts_with_statistics, tmp_path):
    """The leaderboard mart carries eval.leaderboard's bootstrap bounds beside its closed-form ones; the
    report shows the bootstrap ones and the paired comparison with the best."""
    from finrag_pipeline.core.reporting.report import interval_bounds

    with duckdb.connect(str(built_marts_with_statistics), read_only=True) as con:
        board = load_leaderboard(con)
        boot = con.execute("""select ci_low, ci_high from eval.leaderboard where config_name = 'dense-k5'
            and scope = 'filing' and metric = 'mrr_chunk'""").fetchone()
    row = board[(board["config_name"] == "dense-k5") & (board["scope"] == "filing")]
    low, high = interval_bounds(row, "mrr_chunk")
    assert (low.iloc[0], high.iloc[0]) == pytest.approx(boot)
    assert (row["mrr_chunk_ci_low"].iloc[0], row["mrr_chunk_ci_high"].iloc[0]) != pytest.approx(boot)  # closed form kept
    text = build_report(built_marts_with_statistics, tmp_path / "r.html").read_text()
    assert "not distinguishable from best" in text and "≈ best" in text
    assert "below best: Δ -0.625" in text                                       # dense-k10
    assert "0.375 [0.000, 0.750]" in text                                       # dense-k5 MRR: bootstrap bounds


def test_report_without_external_set_says_how_to_get_one(wh, tmp_path):
    text = build_report(wh, tmp_path / "report.html").read_text()
    assert "No external QA set imported" in text

# ---------------------------------------------------------------------------------------------
# What the report says about itself: how much of each table it shows, what could not be computed,
# what there was nothing to compare with.


def _section(text: str, title: str) -> str:
    start = text.index(f"<h2>{title}")
    return text[start:text.index("</section>", start)]


def test_leaderboard_says_top_n_of_m_and_is_sorted_by_scope_and_k(wh, tmp_path, monkeypatch):
    # 7 rows: filing k=5 (bm25-k5, bm25-k5-w256, dense-k5), filing k=10 (3 configs), corpus k=5 (bm25-k5)
    monkeypatch.setattr(report_module, "LEADERBOARD_ROWS", 1)
    section = _section(build_report(wh, tmp_path / "r.html").read_text(), "Retriever leaderboard")
    assert "Top 3 of 7 rows: the best 1 configurations of each scope and k" in section
    assert '<div class="scroll"><table class="leaderboard">' in section
    body = section[section.index("<tbody>"):section.index("</tbody>")]
    rows = [r.split("</td><td>")[:5] for r in body.split("<tr><td>")[1:]]
    assert [(r[0], r[4]) for r in rows] == [("corpus", "5"), ("filing", "5"), ("filing", "10")]


def test_uncomputed_metrics_show_na_with_the_reason(wh, tmp_path, monkeypatch):
    section = _section(build_report(wh, tmp_path / "r.html").read_text(), "Retriever leaderboard")
    w256 = section[section.index("<td>bm25-k5-w256</td>"):]
    w256 = w256[:w256.index("</tr>")]
    # chunk-level metrics of a chunking variant are not computable; page-level ones are; its rows were
    # written without chance levels (as before they were recorded): both chance columns n/a
    assert w256.count("<td>n/a</td>") == 4 + 2 and "0.750 [" in w256
    assert "n/a: not computed. Chunk-level metrics of a chunking variant" in section
    assert "In a chance column: some question has no recorded chance level" in section
    dense = section[section.index("<td>dense-k5</td>"):]
    assert "<td>0.250 \u00b1 0.627</td>" in dense[:dense.index("</tr>")]   # CHANCE_B1: 3 * sqrt(0.7) / 4


def test_question_types_are_a_heatmap_with_intervals_on_hover(wh, tmp_path):
    text = build_report(wh, tmp_path / "r.html").read_text()
    section = _section(text, "Metrics per question type")
    assert section.count('"hovertemplate":"%{y}\\u003cbr\\u003e%{x}: %{text}') == 2   # one heatmap per scope
    # bm25-k5 on the two factual questions (q2 missed, m1 hit): 0.5 with its Wilson interval
    assert "0.500 [0.095, 0.905], n=2" in section
    assert "(not computable), n=2" in section   # chunk hits of the window-256 variant ("n/a", "/" escaped)


def test_growth_regressions_and_filings_when_there_is_a_single_run(tmp_path_factory, tmp_path):
    def single_run(con):
        con.execute("delete from eval.retrieval_results where run_id in ('A1', 'A4')")  # the earlier runs
        con.execute("insert into core.corpus_versions (corpus_state, filing_ids, n_filings, n_chunks, embedder) "
                    "values ('corpus-2', '[]', 2, 6, 'test')")

    wh = _marted(tmp_path_factory, "single-run", mutate=single_run)
    text = build_report(wh, tmp_path / "r.html").read_text()
    assert 'id="chart-corpus-growth"' not in text
    assert "every run so far saw 2 filing(s)" in _section(text, "Corpus growth")
    assert "No earlier run: every configuration x filing x scope has been evaluated once" in text
    filings = _section(text, "Filings evaluated")
    assert "All 2 filings evaluated" in filings
    assert "<td>AAPL-2022-10K</td><td>Apple Inc.</td><td>2022</td><td>5</td>" in filings.replace("\n", "")
    assert filings.count("<td>current</td>") == 2


def test_worst_questions_show_reference_evidence_and_every_configurations_rank(wh, tmp_path):
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


def test_report_summary_lists_the_best_of_each_scope_and_k(wh):
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


def test_every_table_says_how_many_rows_it_shows_and_scrolls_in_the_page(built_marts_with_statistics, tmp_path):
    import re

    text = build_report(built_marts_with_statistics, tmp_path / "r.html").read_text()
    tables = re.findall(r'<table class="([a-z-]+)"', text)
    assert {"filings", "leaderboard", "answer-quality", "sanity-answers", "worst-questions",
            "external-agreement", "external-agreement-configs"} <= set(tables)
    for css in tables:   # each inside its scrolling block, right after a caption that counts its rows
        block = re.search(rf'<p class="caption">([^<]*)</p><div class="scroll"><table class="{css}">', text)
        assert block and re.search(r"\b(All|Top|The) \d+ (of \d+ )?", block.group(1)), css
    assert "All 1 of 1 row (one per external set x scope)" in text


def test_answer_metrics_not_computed_show_na_with_the_reason(tmp_path_factory, tmp_path):
    def no_judge_for_the_small_model(con):
        con.execute("""update eval.answer_results set faithfulness = null, answer_relevancy = null, judge_reasons = null,
                       notes = '{"faithfulness": "no judge configured", "answer_relevancy": "no judge configured"}'
                       where model = 'qwen-0.5b'""")

    wh = _marted(tmp_path_factory, "no-judge", mutate=no_judge_for_the_small_model)
    section = _section(build_report(wh, tmp_path / "r.html").read_text(), "Answer quality")
    small = section[section.index("<td>qwen-0.5b</td>"):]
    small = small[:small.index("</tr>")]
    assert small.count("<td>n/a: no judge configured</td>") == 2      # faithfulness and answer_relevancy
    large = section[section.index("<td>qwen-1.5b</td>"):]
    assert "no judge configured" not in large[:large.index("</tr>")]
    assert "n/a: no answer of that row could be scored on the metric" in section
    assert 'All 3 of 3 model x prompt x temperature rows' in section and '<div class="scroll"><table class="answer-quality">' in section


def test_regressions_say_how_many_of_the_flagged_changes_they_show(built_marts_with_statistics, tmp_path,
                                                                  monkeypatch):
    monkeypatch.setattr(report_module, "REGRESSION_ROWS", 3)
    with duckdb.connect(str(built_marts_with_statistics), read_only=True) as con:
        flagged = con.execute("select direction from marts.mart_regressions where outside_interval").fetchall()
    section = _section(build_report(built_marts_with_statistics, tmp_path / "r.html").read_text(), "Regressions")
    assert len(flagged) > 3
    assert f"Top 3 of {len(flagged)} flagged change(s) (regressions first" in section
    body = section[section.index("<tbody>"):section.index("</tbody>")]
    assert body.count("<tr>") == 3
    if ("regression",) in flagged:   # a regression is never hidden behind improvements
        assert "<td>regression</td>" in body


def test_the_web_explorer_serves_the_report_at_the_linked_path(tmp_path):
    """eval_report links http://127.0.0.1:8765/finrag_report.html; `finrag serve` (default port 8765 too)
    answers it, so the link works whichever of the two servers runs."""
    from starlette.testclient import TestClient

    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.reporting.serve import REPORT_FILE, report_url
    from finrag_pipeline.web.app import create_app

    paths = FinragPaths.from_env(str(tmp_path / "home")).ensure()
    assert report_url().endswith("/" + REPORT_FILE)
    with TestClient(create_app(str(paths.home))) as client:
        missing = client.get(f"/{REPORT_FILE}")
        assert missing.status_code == 404 and "finrag report" in missing.text
        (paths.reports_dir / REPORT_FILE).write_text("<html>the report</html>")
        served = client.get(f"/{REPORT_FILE}")
        assert served.status_code == 200 and served.text == "<html>the report</html>"
        assert served.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("within, note, expected", [
    (True, None, "ok"), (False, None, "FAIL"), (None, None, "-"),
    (float("nan"), None, "-"),            # a NULL read back through pandas is NaN: never a pass
    (float("nan"), float("nan"), "-"),
    (None, "n/a: 1 of 4 questions ...", "n/a: 1 of 4 questions ..."),
])
def test_a_sanity_verdict_never_passes_an_undecided_row(within, note, expected):
    from finrag_pipeline.core.reporting.report import _check

    assert _check(within, note) == expected
