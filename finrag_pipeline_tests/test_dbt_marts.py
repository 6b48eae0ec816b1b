"""`dbt build` of dbt_metrics/ over a synthetic warehouse, and the marts' numbers checked by hand.

The rows and the expected numbers are described in _synthetic_warehouse.py.
"""

from __future__ import annotations

import math
import shutil

import duckdb
import pytest
from _synthetic_warehouse import STATS, build_synthetic_warehouse, run_dbt_build

from finrag_pipeline.defs.marts.project import dbt_executable

pytestmark = pytest.mark.skipif(
    shutil.which(dbt_executable()) is None, reason="dbt is not installed in this environment"
)

Z = 1.96


def wilson(p: float, n: int) -> tuple[float, float]:
    centre = p + Z**2 / (2 * n)
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
    denom = 1 + Z**2 / n
    return max(0.0, (centre - half) / denom), min(1.0, (centre + half) / denom)


@pytest.fixture(scope="module")
def marts(tmp_path_factory):
    """Build the warehouse, run dbt build once, and hand the tests a read-only connection."""
    tmp = tmp_path_factory.mktemp("marts")
    wh_path = tmp / "warehouse.duckdb"
    build_synthetic_warehouse(wh_path, with_statistics=True)   # + eval.leaderboard / eval.comparisons
    result = run_dbt_build(wh_path, tmp)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "ERROR=0" in result.stdout and "WARN=0" in result.stdout
    con = duckdb.connect(str(wh_path), read_only=True)
    yield con
    con.close()


def one(con, sql, *params):
    rows = con.execute(sql, list(params)).fetchall()
    assert len(rows) == 1, rows
    return rows[0]


def test_leaderboard_counts_failed_questions_as_zero(marts):
    n_q, n_ok, n_failed, n_nr, coverage, hit, lo, hi, mrr = one(marts, """
        select n_questions, n_ok, n_failed, n_no_relevant, coverage, hit_chunk_mean, hit_chunk_ci_low,
               hit_chunk_ci_high, mrr_chunk_mean
        from marts.mart_retriever_leaderboard where config_name = 'dense-k5' and scope = 'filing'""")
    assert (n_q, n_ok, n_failed, n_nr) == (5, 3, 1, 1)
    assert coverage == pytest.approx(0.75)
    assert hit == pytest.approx(0.5)             # [1, 0, 1, 0(error)]; no_relevant left out
    assert (lo, hi) == pytest.approx(wilson(0.5, 4))
    assert mrr == pytest.approx(0.375)           # [1, 0, 0.5, 0(error)]


def test_leaderboard_mrr_normal_interval_and_latency(marts):
    lo, hi, p50, p95 = one(marts, """
        select mrr_chunk_ci_low, mrr_chunk_ci_high, latency_p50_ms, latency_p95_ms
        from marts.mart_retriever_leaderboard where config_name = 'dense-k5'""")
    values = [1, 0, 0.5, 0]
    mean = sum(values) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    assert lo == pytest.approx(max(0.0, mean - Z * sd / 2))
    assert hi == pytest.approx(min(1.0, mean + Z * sd / 2))
    # Failures have no latency; the no_relevant question ran: [10, 20, 30, 12].
    assert p50 == pytest.approx(16.0)
    assert p95 == pytest.approx(28.5)


def test_leaderboard_uses_only_the_newest_run_per_filing(marts):
    n_filings, n_q, hit, rank = one(marts, """
        select n_filings, n_questions, hit_chunk_mean, rank_in_scope_k
        from marts.mart_retriever_leaderboard where config_name = 'bm25-k5' and scope = 'filing'""")
    # AAPL's newer run A2 [1, 0, 1, err] replaces A1 [1, 1, 1, 1]; MSFT A3 [1, 1].
    assert (n_filings, n_q) == (2, 6)
    assert hit == pytest.approx(4 / 6)
    assert rank == 1
    # 4 configs at k=5 + the three k=10 configs of the paired-comparison case.
    assert marts.execute("select count(*) from marts.mart_retriever_leaderboard").fetchone()[0] == 7


def test_chunking_variant_without_chunk_level_scores(marts):
    hit_chunk, hit_page, chunk_cov, page_cov, rank = one(marts, """
        select hit_chunk_mean, hit_page_mean, chunk_metrics_coverage, page_metrics_coverage, rank_in_scope_k
        from marts.mart_retriever_leaderboard where config_name = 'bm25-k5-w256'""")
    assert hit_chunk is None and chunk_cov == 0.0      # not computable is not 0
    assert hit_page == pytest.approx(0.75) and page_cov == 1.0
    assert rank >= 1


def test_breakdowns_by_question_type_company_and_year(marts):
    by_type = dict(marts.execute("""
        select question_type, hit_chunk_mean from marts.mart_metrics_by_question_type
        where config_name = 'dense-k5'""").fetchall())
    assert by_type.pop("unanswerable") is None      # only a no_relevant question: no mean
    assert by_type == pytest.approx({"numerical": 1.0, "factual": 0.0, "comparative": 0.0})
    by_company = {r[0]: r[1:] for r in marts.execute("""
        select company, tickers, n_questions, hit_chunk_mean from marts.mart_metrics_by_company
        where config_name = 'bm25-k5' and scope = 'filing'""").fetchall()}
    assert by_company["Apple Inc."] == ("AAPL", 4, pytest.approx(0.5))
    assert by_company["Microsoft Corporation"] == ("MSFT", 2, pytest.approx(1.0))
    year, n_q, hit = one(marts, """
        select fiscal_year, n_questions, hit_chunk_mean from marts.mart_metrics_by_fiscal_year
        where config_name = 'bm25-k5' and scope = 'filing'""")
    assert (year, n_q, hit) == (2022, 6, pytest.approx(4 / 6))


def test_breakdown_by_question_kind_folds_the_types(marts):
    # the four answerable dense-k5 rows all ask for figures: hit_chunk [1, 0, 1, error] -> metric 0.5;
    # the unanswerable one is no_relevant: no mean
    by_kind = dict(marts.execute("""
        select question_kind, hit_chunk_mean from marts.mart_metrics_by_question_kind
        where config_name = 'dense-k5'""").fetchall())
    assert by_kind.pop("unanswerable") is None
    assert by_kind == pytest.approx({"metric": 0.5})


def test_corpus_growth_curve(marts):
    rows = marts.execute("""
        select n_filings_in_corpus, n_filings_evaluated, n_questions, hit_chunk_mean,
               hit_chunk_delta_vs_smallest
        from marts.mart_corpus_growth where config_name = 'bm25-k5' order by n_filings_in_corpus
    """).fetchall()
    assert rows == [(1, 1, 4, 1.0, 0.0), (2, 2, 6, 0.5, -0.5)]


def test_regressions_flag_a_drop_outside_the_previous_interval(marts):
    latest, prev, delta, lo, outside, direction, n_paired, run_ids = one(marts, """
        select latest_mean, previous_mean, delta, previous_ci_low, outside_interval, direction,
               n_paired, latest_run_id || '<' || previous_run_id
        from marts.mart_regressions
        where config_name = 'bm25-k5' and filing_id = 'AAPL-2022-10K' and scope = 'filing'
          and metric = 'hit_chunk'""")
    assert (latest, prev, delta) == pytest.approx((0.5, 1.0, -0.5))
    assert lo == pytest.approx(wilson(1.0, 4)[0])   # 0.51: 0.5 falls below it
    assert outside and direction == "regression"
    assert n_paired == 4 and run_ids == "A2<A1"
    # A configuration or filing with a single run has nothing to compare against.
    assert marts.execute("""select count(*) from marts.mart_regressions
        where config_name <> 'bm25-k5' or filing_id = 'MSFT-2022-10K'""").fetchone()[0] == 0


def test_question_difficulty_lists_the_worst_questions_first(marts):
    worst = marts.execute("""
        select qa_id from marts.mart_question_difficulty
        where scope = 'filing' and worst_rank = 1 order by qa_id""").fetchall()
    assert worst == [("q2",), ("q4",)]   # missed (or failed) by both configurations


def test_answer_quality_with_coverage_and_states(marts):
    rows = {r[0]: r[1:] for r in marts.execute("""
        select model, n_answers, n_errors, correctness_mean, correctness_coverage,
               faithfulness_mean, response_state_distribution, state_correct_mean, non_committal_mean,
               abstention_correct_mean, block_citation_precision_mean, is_sanity, n_unanswerable
        from marts.mart_answer_quality""").fetchall()}
    n, n_err, fig, fig_cov, faith, dist, correct, non_committal, abstention, block, sanity, n_un = rows["qwen-0.5b"]
    assert (n, n_err) == (4, 1)
    assert fig == pytest.approx(1 / 3)     # [1, 0, error->0]; the abstention's NULL is not applicable
    assert fig_cov == pytest.approx(0.75)
    assert non_committal == pytest.approx(0.5)   # [0, 1]: the failure is not counted as committal
    assert abstention == pytest.approx(1.0) and n_un == 1
    assert block == pytest.approx(0.5)           # [1, 0.5, error->0]
    assert sanity is False and rows["sanity_echo"][10] is True
    assert rows["sanity_echo"][2] == pytest.approx(0.0) and rows["sanity_echo"][7] == pytest.approx(1.0)
    assert faith == pytest.approx((0.9 + 0.5 + 0) / 3)
    assert '"abstained":0.25' in dist and '"backend_error":0.25' in dist
    assert correct == pytest.approx(0.75)
    assert rows["qwen-1.5b"][2] == pytest.approx(1.0)
    shares = dict(marts.execute("""select response_state, share from marts.mart_answer_response_states
        where model = 'qwen-0.5b'""").fetchall())
    assert shares == pytest.approx({"answered": 0.5, "abstained": 0.25, "backend_error": 0.25})


def test_leaderboard_carries_bootstrap_bounds_from_eval_leaderboard(marts):
    """Bootstrap bounds come from eval.leaderboard; the closed-form columns stay as they were."""
    hit, wilson_lo, boot_lo, boot_hi, n_boot = one(marts, """
        select hit_chunk_mean, hit_chunk_ci_low, hit_chunk_boot_ci_low, hit_chunk_boot_ci_high, boot_n_resamples
        from marts.mart_retriever_leaderboard where config_name = 'dense-k5' and scope = 'filing'""")
    assert hit == pytest.approx(0.5) and wilson_lo == pytest.approx(wilson(0.5, 4)[0])
    assert n_boot == STATS.n_boot
    assert 0.0 <= boot_lo <= 0.5 <= boot_hi <= 1.0
    # The mart joins exactly what the core wrote (same grain, same metric).
    src = one(marts, """select ci_low, ci_high from eval.leaderboard where kind = 'retrieval'
        and config_name = 'dense-k5' and scope = 'filing' and metric = 'hit_chunk'""")
    assert (boot_lo, boot_hi) == pytest.approx(src)
    # Constant values: a degenerate bootstrap interval [1, 1]; not computable: NULL, not 0.
    assert one(marts, """select ndcg_page_boot_ci_low, ndcg_page_boot_ci_high from marts.mart_retriever_leaderboard
        where config_name = 'bm25-k10'""") == (1.0, 1.0)
    assert one(marts, """select hit_chunk_boot_ci_low from marts.mart_retriever_leaderboard
        where config_name = 'bm25-k5-w256'""") == (None,)


def test_leaderboard_paired_comparison_with_the_best(marts):
    rows = {r[0]: r[1:] for r in marts.execute("""
        select config_name, best_config_name, is_best, delta_vs_best, delta_vs_best_ci_low, delta_vs_best_ci_high,
               p_value_vs_best, n_pairs_vs_best, distinguishable_from_best, compared_on_metric
        from marts.mart_retriever_leaderboard where scope = 'filing' and k = 10""").fetchall()}
    # bm25-k10 and hybrid-k10 tie on page nDCG and hit: the smaller name is the best.
    assert rows["bm25-k10"][:2] == ("bm25-k10", True)
    assert rows["bm25-k10"][2:] == (0.0, 0.0, 0.0, 1.0, 20, False, "ndcg_page")
    # Identical per-question results: difference 0, p = 1, not distinguishable.
    assert rows["hybrid-k10"] == ("bm25-k10", False, 0.0, 0.0, 0.0, 1.0, 20, False, "ndcg_page")
    # Strictly worse on every one of the 20 questions: d = [-0.5, -0.75] * 10.
    best, is_best, delta, lo, hi, p, n, dist, _ = rows["dense-k10"]
    assert (best, is_best, n, dist) == ("bm25-k10", False, 20, True)
    assert delta == pytest.approx(-0.625)
    assert -0.75 <= lo <= delta <= hi < 0          # bootstrap means of values in {-0.5, -0.75}
    assert p == pytest.approx(1 / (1 + STATS.n_perm))
    # k=5 filing group: the chunking variant wins on page nDCG; the others are not distinguishable
    # from it on 4 questions.
    k5 = dict(marts.execute("""select config_name, distinguishable_from_best from marts.mart_retriever_leaderboard
        where scope = 'filing' and k = 5""").fetchall())
    assert k5 == {"bm25-k5-w256": False, "bm25-k5": False, "dense-k5": False}


def test_external_agreement_mart(marts):
    row = one(marts, """
        select external_set, scope, k, metric, n_configs, kendall_tau_b, spearman_rho, verdict, n_flipped_pairs,
               flipped_pairs, best_synthetic, best_external, best_differs
        from marts.mart_external_agreement""")
    assert row[:5] == ("analyst_questions", "filing", 5, "all_evidence_hit", 3)
    assert row[5] == pytest.approx(0.0) and row[6] == pytest.approx(0.0)   # hand computation in _synthetic_warehouse
    assert row[7] == "not distinguishable from no agreement"
    assert row[8] == 1 and "A@5 > B@5 on synthetic" in row[9]
    assert row[10:] == ("A@5", "B@5", True)
    ranks = dict(((c, (s, e)) for c, s, e in marts.execute("""
        select config_name, synthetic_rank, external_rank from marts.mart_external_agreement_configs""").fetchall()))
    assert ranks == {"A@5": (1.0, 2.5), "B@5": (2.0, 1.0), "C@5": (3.0, 2.5)}


def test_metrics_by_leakage_band(marts):
    by_band = {r[0]: r[1:] for r in marts.execute("""
        select leakage_band, n_questions, all_evidence_hit_mean, leakage_score_mean
        from marts.mart_metrics_by_leakage_band
        where config_name = 'dense-k5' and scope = 'filing' and question_set = 'synthetic'""").fetchall()}
    assert by_band["high"] == (2, pytest.approx(0.5), pytest.approx(0.55))   # q1 hit, q4 error (0)
    assert by_band["low"] == (1, pytest.approx(0.0), pytest.approx(0.1))
    assert by_band["medium"] == (1, pytest.approx(1.0), pytest.approx(0.3))
    assert by_band["n/a"][0] == 1 and by_band["n/a"][1] is None               # q5: no relevant evidence


def test_metrics_by_question_set(marts):
    n_q, hit, n_filings = one(marts, """
        select n_questions, all_evidence_hit_mean, n_filings from marts.mart_metrics_by_question_set
        where config_name = 'bm25-k5' and scope = 'filing' and question_set = 'synthetic'""")
    assert (n_q, n_filings) == (6, 2) and hit == pytest.approx(4 / 6)   # as the leaderboard: no external set here


def test_company_resolution_mart(marts):
    rows = marts.execute("""
        select config_name, scope, question_set, n_questions, n_exact, n_covers, n_wrong, n_unresolved,
               resolution_accuracy, exact_rate
        from marts.mart_company_resolution""").fetchall()
    assert rows == [("bm25-k5", "corpus", "synthetic", 6, 3, 1, 1, 1, pytest.approx(4 / 6), pytest.approx(3 / 6))]


def test_corpus_cost_mart_pairs_the_same_questions(marts):
    n, filing, corpus, cost = one(marts, """
        select n_paired, all_evidence_hit_filing, all_evidence_hit_corpus, all_evidence_hit_cost
        from marts.mart_corpus_cost where config_name = 'bm25-k5' and question_set = 'synthetic'""")
    assert n == 6
    assert (filing, corpus, cost) == (pytest.approx(4 / 6), pytest.approx(3 / 6), pytest.approx(-1 / 6))
    # configurations evaluated in one scope only have no paired questions, hence no row
    assert marts.execute("select count(*) from marts.mart_corpus_cost where config_name = 'dense-k5'"
                         ).fetchone()[0] == 0


def test_chance_levels_mart_averages_the_recorded_chance_of_the_measured_questions(marts):
    """dense-k5 / filing (CHANCE_B1): chance [0.1, 0.2, 0.3, 0.4] over the 4 questions with a hit value
    (the failed q4 keeps its chance; the no_relevant q5 is left out) -> 0.25, band 3 SE."""
    rows = {r[0]: r[1:] for r in marts.execute("""
        select metric, n_questions, n_with_chance, mean, chance_level, chance_band, above_chance,
               within_chance_band, chance_note
        from marts.mart_chance_levels where config_name = 'dense-k5' and scope = 'filing'""").fetchall()}
    assert set(rows) == {"hit_chunk", "hit_page", "all_evidence_hit"}
    band = 3 * math.sqrt(0.1 * 0.9 + 0.2 * 0.8 + 0.3 * 0.7 + 0.4 * 0.6) / 4
    for metric in ("hit_chunk", "hit_page"):
        n, n_chance, mean, chance, got_band, above, within, note = rows[metric]
        assert (n, n_chance) == (4, 4) and note is None
        assert (mean, chance, got_band) == (pytest.approx(0.5), pytest.approx(0.25), pytest.approx(band))
        assert above == pytest.approx(0.25) and within is True       # |0.25| <= 0.627 + 0.02
    # one question's all-evidence chance was not computable: n/a with the reason, never a mean over 3
    n, n_chance, mean, chance, got_band, above, within, note = rows["all_evidence_hit"]
    assert (n, n_chance, chance, got_band, above, within) == (4, 3, None, None, None, None)
    assert note.startswith("n/a: 1 of 4 questions have no computable chance level")


def test_chance_levels_of_rows_evaluated_before_they_were_recorded_are_na(marts):
    chance, note = one(marts, """
        select chance_level, chance_note from marts.mart_chance_levels
        where config_name = 'bm25-k5' and scope = 'filing' and metric = 'hit_page'""")
    assert chance is None
    assert note == ("n/a: 6 of 6 questions were evaluated before chance levels were recorded "
                    "(re-evaluate to record them)")
    # a chunking variant has no chunk-level score, hence no chunk-level chance row at all
    assert marts.execute("select metric from marts.mart_chance_levels where config_name = 'bm25-k5-w256' "
                         "order by metric").fetchall() == [("all_evidence_hit",), ("hit_page",)]


def test_leaderboard_carries_the_chance_columns(marts):
    hit, chance, band, ae_chance, chunk_chance = one(marts, """
        select hit_page_mean, hit_page_chance, hit_page_chance_band, all_evidence_hit_chance, hit_chunk_chance
        from marts.mart_retriever_leaderboard where config_name = 'dense-k5' and scope = 'filing'""")
    assert (hit, chance, chunk_chance) == (pytest.approx(0.5), pytest.approx(0.25), pytest.approx(0.25))
    assert band == pytest.approx(3 * math.sqrt(0.7) / 4) and ae_chance is None
    assert one(marts, """select hit_page_chance from marts.mart_retriever_leaderboard
                         where config_name = 'bm25-k5' and scope = 'filing'""") == (None,)


def test_sanity_answers_mart_reads_the_registry_limit(marts):
    from finrag_pipeline.core.scoring.metric_registry import SANITY_LIMITS

    limit, within, correctness = one(marts, """
        select max_correctness, within_limit, correctness from marts.mart_sanity_answers
        where model = 'sanity_echo'""")
    assert limit == pytest.approx(SANITY_LIMITS.max_correctness) and correctness == 0.0 and within is True


def test_every_column_of_every_model_has_a_type_and_description(marts):
    """What the Dagster UI shows for each dbt model (defs/marts/columns.py over the built relations)."""
    import json
    from pathlib import Path

    from finrag_pipeline.defs.marts.columns import column_schema

    db_path = marts.execute("select path from duckdb_databases() where database_name = current_database()").fetchone()[0]
    manifest = json.loads((Path(db_path).parent / "dbt_target" / "manifest.json").read_text())
    models = {(n["schema"], n.get("alias") or n["name"]): n for n in manifest["nodes"].values()
              if n["resource_type"] == "model"}
    catalog: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for schema, table, column, dtype in marts.execute(
            "select table_schema, table_name, column_name, data_type from information_schema.columns "
            "where table_schema in ('marts', 'staging') order by table_schema, table_name, ordinal_position").fetchall():
        catalog.setdefault((schema, table), []).append((column, dtype))
    assert set(catalog) == set(models) and len(models) >= 20
    undescribed = [(table, c.name) for (_schema, table), cols in catalog.items()
                   for c in column_schema(cols, models[(_schema, table)].get("columns", {})).columns
                   if not (c.description and c.type)]
    assert undescribed == [], undescribed
    sanity = dict((c.name, c.description) for c in column_schema(
        catalog[("marts", "mart_sanity_answers")], models[("marts", "mart_sanity_answers")]["columns"]).columns)
    assert sanity["correctness"].startswith("mean correctness on the answerable questions")  # the yml wins
