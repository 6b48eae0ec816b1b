"""The matrix runner with a tiny in-test retriever (a test double of the Retriever contract)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from finrag_pipeline.core.evaluation.answerers import LLMAnswerer
from finrag_pipeline.core.evaluation.runner import (
    SANITY_ANSWERERS,
    EvalMatrix,
    aggregate,
    compare_configs,
    config_hash,
    default_answerer_factory,
    run_answer_eval,
    run_retrieval_eval,
)
from finrag_pipeline.core.models import EvidencePlace, Hit, QAItem, SearchFilters
from finrag_pipeline.core.warehouse import TABLE_DDL, Warehouse

F, G = "AAPL-2022-10K", "MSFT-2022-10K"
CHUNKS = [  # (chunk_id, filing, page_start, page_end, text)
    ("sales", F, 28, 28, "Apple 10-K FY2022 | Total net sales | 2022: 394,328 | 2021: 365,817 | USD millions"),
    ("ni", F, 28, 28, "Apple 10-K FY2022 | Net income | 2022: 99,803 | 2021: 94,680 | USD millions"),
    ("rd", F, 30, 31, "Apple 10-K FY2022 | Research and development | 2022: 26,251 | USD millions"),
    ("risk", F, 10, 10, "Apple 10-K FY2022 risk factors: supply chain, competition and net sales exposure."),
    ("g_sales", G, 40, 40, "Microsoft 10-K FY2022 | Total net sales revenue | 2022: 198,270 | USD millions"),
    ("g_ni", G, 41, 41, "Microsoft 10-K FY2022 | Net income | 2022: 72,738 | USD millions"),
]


class WordOverlapRetriever:
    """Scores a chunk by how many query words it contains; equal scores are common (ties)."""

    def __init__(self, name: str):
        self.name = name

    def search(self, query: str, k: int, filters: SearchFilters | None = None) -> list[Hit]:
        if "boom" in query:
            raise RuntimeError("index unavailable")
        words = set(re.findall(r"[a-z]+", query.lower()))
        hits = []
        for cid, filing, p0, p1, text in CHUNKS:
            if filters and filters.filing_ids and filing not in filters.filing_ids:
                continue
            score = float(len(words & set(re.findall(r"[a-z]+", text.lower()))))
            if self.name == "reverse":
                score = -score
            hits.append(Hit(cid, score, 0, filing, p0, p1, "table_row", text, self.name))
        hits.sort(key=lambda h: h.chunk_id)  # deliberately NOT in score order: the runner sorts
        return hits[:k] if self.name == "truncating" else sorted(hits, key=lambda h: -h.score)[:k]


def factory(name, chunking):
    if name == "broken":
        raise ValueError("no such index")
    return WordOverlapRetriever(name)


def qa(qa_id, question, groups, periods=("FY2022",), figures=(), qtype="numerical"):
    from finrag_pipeline.core.scoring.answer_contract import answer_value

    return QAItem(qa_id=qa_id, filing_id=F, question=question, reference_answer="", question_type=qtype,
                  periods=list(periods), answer_figures=list(figures),
                  answer_values=[answer_value(f["value"], f["unit"], period=f.get("period")) for f in figures],
                  evidence=[[EvidencePlace(c, p, f) for c, p, f in g] for g in groups])


ITEMS = [
    qa("q1", "What were total net sales in fiscal 2022?", [[("sales", 28, F)]],
       figures=[{"value": 394328, "unit": "USD millions", "period": "FY2022"}]),
    qa("q2", "Net income and research and development in 2022?", [[("ni", 28, F)], [("rd", 30, F), (None, 31, F)]],
       qtype="multi-page"),
    qa("q3", "What is the CEO's favourite colour?", [], periods=(), qtype="unanswerable"),
    qa("q4", "boom: what were total net sales in fiscal 2019?", [[("sales", 28, F)]],
       figures=[{"value": 260174, "unit": "USD millions"}]),
]
MATRIX = EvalMatrix.model_validate({"retrieval": {"retrievers": ["overlap", "reverse"], "top_k": [1, 3, 10],
                                                  "scopes": ["filing", "corpus"]},
                                    "stats": {"n_boot": 200, "n_perm": 500}})


def ddl_columns(table):
    return [c.strip().split()[0] for c in TABLE_DDL[table].split(",")]


def test_matrix_yaml_loads_and_narrows():
    m = EvalMatrix.load()
    assert m.retrieval.top_k == [3, 5, 10] and m.retrieval.scopes == ["filing", "corpus"]
    n = m.narrow(retrievers="bm25", top_k=5, scopes=["filing"], models=["extractive", "qwen"],
                 prompt_types=["standard", "few_shot"], n_boot=100, chunking=None)
    assert n.retrieval.retrievers == ["bm25"] and n.retrieval.top_k == [5] and n.stats.n_boot == 100
    assert [c.name for c in n.retrieval_configs()] == ["bm25@5"]
    # extractive ignores prompt/decoding: one config, the LLM gets one per prompt type; the four sanity
    # answerers always run beside them, one config each
    names = [c.name for c in n.answer_configs()]
    assert len(names) == 3 + 4 and sum(name.startswith("sanity_") for name in names) == 4
    with pytest.raises(ValueError):
        m.narrow(nonsense=1)
    with pytest.raises(ValueError):
        m.narrow(scopes=["galaxy"])


def test_config_hash_is_canonical():
    assert config_hash({"a": 1, "b": [1, 2]}) == config_hash({"b": [1, 2], "a": 1})
    cfgs = MATRIX.retrieval_configs({"overlap": {"type": "bm25", "k1": 1.2}})
    cfgs2 = MATRIX.retrieval_configs({"overlap": {"type": "bm25", "k1": 0.9}})
    assert cfgs[0].config_hash != cfgs2[0].config_hash  # retriever definition is part of the hash


def test_rows_match_the_warehouse_tables(tmp_path):
    runs, rows = run_retrieval_eval(ITEMS, factory, MATRIX, None, F, "corpus-v1", n_filings_in_corpus=2)
    assert len(rows) == len(ITEMS) * 2 * 3 * 2  # questions x retrievers x k x scopes
    assert len(runs) == 2 * 3 * 2
    assert list(rows[0]) == ddl_columns("eval.retrieval_results")
    assert list(runs[0]) == ddl_columns("eval.runs")
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.replace_rows("eval.retrieval_results", rows, where={"filing_id": F})
    wh.replace_rows("eval.runs", runs, where={"filing_id": F, "kind": "retrieval"})
    assert wh.query_df("SELECT count(*) n FROM eval.retrieval_results")["n"][0] == len(rows)
    # idempotent: the same partition written again replaces, never duplicates
    wh.replace_rows("eval.retrieval_results", rows, where={"filing_id": F})
    assert wh.query_df("SELECT count(*) n FROM eval.retrieval_results")["n"][0] == len(rows)


def _df(**narrow):
    runs, rows = run_retrieval_eval(ITEMS, factory, MATRIX.narrow(**narrow) if narrow else MATRIX, None, F, "v1")
    return runs, pd.DataFrame(rows)


def test_statuses_and_hand_checked_values():
    _, df = _df()
    by = df.set_index(["config_name", "scope", "qa_id"])
    q1 = by.loc[("overlap@3", "filing", "q1")]
    # query words {what, were, total, net, sales, in, fiscal}: "sales" 3 words, "risk" 2 (net, sales)
    assert q1.status == "ok" and q1.first_relevant_rank_chunk == 1 and q1.hit_chunk == 1.0
    assert q1.precision_chunk == pytest.approx(1 / 3) and q1.recall_page == 1.0
    q3 = by.loc[("overlap@3", "filing", "q3")]
    assert q3.status == "no_relevant" and pd.isna(q3.hit_chunk) and "unanswerable" in q3.notes
    q4 = by.loc[("overlap@3", "filing", "q4")]
    assert q4.status == "error" and q4.hit_chunk == 0.0 and q4.all_evidence_hit == 0.0
    assert "index unavailable" in q4.error
    # q2: two required groups; the second has a page-only alternative -> chunk ids still exist
    q2 = by.loc[("overlap@10", "filing", "q2")]
    assert q2.all_evidence_hit == 1.0 and q2.recall_chunk == 1.0
    # corpus scope sees the distractor filing
    assert by.loc[("overlap@10", "corpus", "q1")].n_retrieved == 6
    assert by.loc[("overlap@10", "filing", "q1")].n_retrieved == 4


def test_metrics_at_each_k_come_from_one_ranking():
    _, df = _df()
    ok = df[(df.status == "ok") & (df.retriever == "overlap")]
    wide = ok.pivot_table(index=["scope", "qa_id"], columns="k", values="recall_page")
    assert (wide[1] <= wide[3]).all() and (wide[3] <= wide[10]).all()


def test_rerun_reproduces_every_metric_exactly():
    runs1, df1 = _df()
    runs2, df2 = _df()
    volatile = ["latency_ms", "evaluated_at"]
    pd.testing.assert_frame_equal(df1.drop(columns=volatile), df2.drop(columns=volatile))
    assert [r["run_id"] for r in runs1] == [r["run_id"] for r in runs2]
    assert {r["code_version"] for r in runs1} and all(r["config_hash"] for r in runs1)


def test_errors_count_as_zero_and_no_relevant_is_reported():
    _, df = _df(retrievers=["overlap"], top_k=[3], scopes=["filing"])
    agg = aggregate(df, by=["config_name"], n_boot=200).set_index("metric")
    hit = agg.loc["hit_chunk"]
    # q1 hit, q2 hit, q4 error (0), q3 excluded: mean 2/3, not 1.0
    assert hit["mean"] == pytest.approx(2 / 3)
    assert (hit.n_rows, hit.n_no_relevant, hit.n_error, hit.n_total, hit.n_scored) == (4, 1, 1, 3, 3)
    assert hit.coverage == 1.0 and hit.ci_low <= hit["mean"] <= hit.ci_high


def test_broken_retriever_config_becomes_error_rows():
    runs, df = _df(retrievers=["broken", "overlap"], top_k=[3], scopes=["filing"])
    broken = df[df.retriever == "broken"]
    assert (broken.status == "error").all() and (broken.hit_page == 0).all()
    assert {r["config_name"]: r["status"] for r in runs} == {"broken@3": "error", "overlap@3": "partial"}


def test_chunking_variant_keeps_page_metrics_and_nulls_chunk_metrics():
    _, df = _df(retrievers=["overlap"], top_k=[3], scopes=["filing"], chunking=[None, "small"])
    small = df[(df.chunking == "small") & (df.status == "ok")]
    assert small.hit_chunk.isna().all() and small.hit_page.notna().all()
    assert small.notes.str.contains("another chunking").all()
    agg = aggregate(df, by=["chunking"], n_boot=100)
    row = agg[(agg.metric == "hit_chunk") & (agg.chunking == "small")].iloc[0]
    assert row.n_scored == 1 and row.coverage == pytest.approx(1 / 3)  # only the error row is scored


def test_paired_comparison_between_configs():
    _, df = _df(top_k=[3], scopes=["filing"])
    same = compare_configs(df, "hit_page", "overlap@3", "overlap@3", n_boot=100, n_perm=200)
    assert same["mean_diff"] == 0 and same["p_value"] == 1.0 and same["n_pairs"] == 3
    diff = compare_configs(df, "mrr_page", "overlap@3", "reverse@3", n_boot=100, n_perm=200)
    assert diff["mean_diff"] < 0


# ---------------------------------------------------------------------------------------------
# answers


def test_answer_eval_failures_and_abstentions_lower_the_mean():
    from finrag_pipeline.core.llm.client import LLMClient

    items = [ITEMS[0], qa("q5", "What were total net sales in fiscal 2019?", [[("sales", 28, F)]],
                          periods=("FY2019",), figures=[{"value": 260174, "unit": "USD millions"}])]
    dead = LLMClient("openai/x", use_cache=False, api_base="http://127.0.0.1:9/v1", api_key="x",
                     max_retries=0, timeout_s=5)

    def answerers(cfg):
        return LLMAnswerer(dead, name=cfg.name) if cfg.model == "dead-model" else default_answerer_factory(cfg)

    matrix = MATRIX.narrow(models=["extractive", "dead-model"], retriever="overlap", k=3)
    runs, rows = run_answer_eval(items, factory, matrix, F, "v1", answerer_factory=answerers)
    assert list(rows[0]) == ddl_columns("eval.answer_results")
    df = pd.DataFrame(rows)
    ex = df[df.model == "extractive"].set_index("qa_id")
    assert ex.loc["q1"].response_state == "answered" and ex.loc["q1"].correctness == 1.0
    assert ex.loc["q1"].grounded == 1.0 and ex.loc["q1"].period_ok == 1.0 and ex.loc["q1"].citation_recall == 1.0
    assert ex.loc["q1"].block_citation_recall == 1.0 and ex.loc["q1"].non_committal == 0.0
    assert ex.loc["q5"].response_state == "insufficient_context" and ex.loc["q5"].correctness == 0.0
    agg = aggregate(df, by=["config_name"], n_boot=100).set_index(["config_name", "metric"])
    ext = agg.loc[("extractive@overlap@3", "correctness")]
    assert ext["mean"] == 0.5 and ext.n_scored == 2          # the abstention lowered the mean
    dead_row = agg.loc[("dead-model/standard/t0/p1@overlap@3", "correctness")]
    assert dead_row["mean"] == 0.0 and dead_row.n_scored == 2 and dead_row.n_error == 2  # errors did not vanish
    # the sanity answerers ran beside them, marked, and earned nothing
    sanity = df[df.is_sanity]
    assert set(sanity.model) == set(SANITY_ANSWERERS) and not df[~df.is_sanity].model.str.startswith("sanity").any()
    assert (sanity.correctness.fillna(0.0) == 0.0).all()
    assert {r["status"] for r in runs} == {"ok", "error"}
    faith = agg.loc[("extractive@overlap@3", "faithfulness")]
    # no judge: NULL with a reason for every answer, the insufficient_context one too (not a 0 that would
    # make a mean of zeros), shown as coverage 0
    assert faith.n_scored == 0 and faith.coverage == 0.0
    assert ex.loc["q5"].faithfulness is None or pd.isna(ex.loc["q5"].faithfulness)
    assert json.loads(ex.loc["q5"].notes)["faithfulness"] == "no judge configured"
    wh_cols = set(ddl_columns("eval.answer_results"))
    assert set(df.columns) == wh_cols


def _chance_pool(chunking, filters):
    """CHUNKS as a chunk store, scoped as sanity_random scopes its draw."""
    from finrag_pipeline.core.models import Chunk
    from finrag_pipeline.core.retrieval.resources import ChunkStore
    from finrag_pipeline.core.retrieval.sanity import candidate_pool

    store = ChunkStore(Chunk(chunk_id=cid, filing_id=f, ticker=None, company="x", fiscal_year=2022, form_type="10-K",
                             section=None, page_start=p0, page_end=p1, chunk_type="table_row", text=text)
                       for cid, f, p0, p1, text in CHUNKS)
    return candidate_pool(store, filters)


def test_rows_record_the_chance_levels_of_each_question_and_k():
    """Filing scope: 4 leaves (sales p28, ni p28, rd p30-31, risk p10). q1: g = 1 (sales), m = 2 (p28 holds
    sales and ni); q2: groups {ni} and {rd}: g = 2, page groups p28 -> {sales, ni}, p30/31 -> {rd}: m = 3,
    all-evidence needs rd and one of sales/ni. Hand-computed from C(N - x, k) / C(N, k)."""
    _, rows = run_retrieval_eval(ITEMS, factory, MATRIX, None, F, "v1", chance_pool=_chance_pool)
    by = pd.DataFrame(rows).set_index(["config_name", "scope", "qa_id"])
    expected = {  # (config, scope, qa_id): (N, g, m, hit_chunk, hit_page, all_evidence_hit)
        ("overlap@1", "filing", "q1"): (4, 1, 2, 1 / 4, 2 / 4, 2 / 4),
        ("overlap@3", "filing", "q1"): (4, 1, 2, 3 / 4, 1.0, 1.0),
        ("overlap@1", "filing", "q2"): (4, 2, 3, 2 / 4, 3 / 4, 0.0),
        ("overlap@3", "filing", "q2"): (4, 2, 3, 1.0, 1.0, 3 / 4),
        ("overlap@10", "filing", "q2"): (4, 2, 3, 1.0, 1.0, 1.0),      # k > N: every leaf drawn
        ("overlap@1", "corpus", "q1"): (6, 1, 2, 1 / 6, 2 / 6, 2 / 6),  # Microsoft's 2 leaves join the pool
        ("reverse@3", "filing", "q2"): (4, 2, 3, 1.0, 1.0, 3 / 4),     # the same for every retriever
        ("overlap@1", "filing", "q4"): (4, 1, 2, 1 / 4, 2 / 4, 2 / 4),  # a failed search keeps its chance
    }
    cols = ["chance_pool_size", "chance_evidence_chunks", "chance_evidence_page_chunks",
            "hit_chunk_chance", "hit_page_chance", "all_evidence_hit_chance"]
    for key, values in expected.items():
        got = tuple(by.loc[key, cols])
        assert got == pytest.approx(values), (key, got)
    assert by.loc[("overlap@1", "filing", "q4"), "status"] == "error"
    # no evidence: no chance level; no pool given: nothing recorded (NULL, never 0)
    assert by.loc[("overlap@3", "filing", "q3"), cols].isna().all()
    _, plain = _df()
    assert plain[cols].isna().all().all()
