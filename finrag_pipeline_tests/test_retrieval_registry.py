"""Registry, YAML configurations and overrides, rerankers and multi-query on the fake corpus."""

from __future__ import annotations

import pytest
import yaml
from _retrieval_fakes import ListRetriever, fake_resources, hit

from finrag_pipeline.core.analyst.lexicon import Lexicon
from finrag_pipeline.core.models import SearchFilters
from finrag_pipeline.core.retrieval import (
    RERANKERS,
    RETRIEVERS,
    Retriever,
    build_named_retrievers,
    build_reranker,
    build_retriever,
    load_retrievers,
)
from finrag_pipeline.core.retrieval.config import DEFAULT_RETRIEVERS_PATH
from finrag_pipeline.core.retrieval.multi_query import MultiQueryRetriever
from finrag_pipeline.core.retrieval.rerank import (
    FeatureReranker,
    RerankerUnavailable,
    RerankingRetriever,
    figures_in,
)


class EchoRetriever(Retriever):
    """A custom type built from an import path (no factory edit)."""

    def __init__(self, config, resources):
        self.config = config

    def _retrieve(self, query, k, filters, timings, info):
        return [hit(f"echo{i}", 1.0 / (i + 1)) for i in range(k)]


def test_every_named_config_builds_from_the_yaml_alone():
    named = load_retrievers()
    assert {"bm25", "dense", "hybrid_rrf", "hybrid_weighted", "auto_merging", "multi_query"} <= set(named)
    retrievers = build_named_retrievers(fake_resources())
    assert set(retrievers) == set(named)
    for name, r in retrievers.items():
        if "llm" in name:
            continue  # would load the local GGUF model at the first query
        hits = r.search("Apple total net sales fiscal 2022", 3)
        assert 0 < len(hits) <= 3, name
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1)), name


def test_overrides_nested_dotted_and_star():
    named = load_retrievers(overrides={"*": {"k": 7}, "hybrid_rrf.rrf_k": 5, "dense": {"k": 3},
                                       "retrievers.hybrid_weighted.normalization": "zscore"})
    assert named["bm25"].k == 7 and named["dense"].k == 3
    assert named["hybrid_rrf"].rrf_k == 5 and named["hybrid_rrf"].k == 7
    assert named["hybrid_weighted"].normalization == "zscore"
    with pytest.raises(KeyError, match="unknown retriever .nope.; valid: .*bm25"):
        load_retrievers(overrides={"nope.k": 1})
    with pytest.raises(ValueError):
        load_retrievers(overrides={"bm25.period_mode": "sometimes"})


def test_yaml_validation_catches_bad_references_and_weights(tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_text(yaml.safe_dump({"retrievers": {"h": {"type": "hybrid_rrf", "bases": ["bm25", "nope"]},
                                                  "bm25": {"type": "bm25"}}}))
    with pytest.raises(ValueError, match="unknown retriever 'nope'"):
        load_retrievers(bad)
    bad.write_text(yaml.safe_dump({"retrievers": {"h": {"type": "hybrid_weighted", "weights": [1.0],
                                                        "bases": [{"type": "bm25"}, {"type": "dense"}]}}}))
    with pytest.raises(ValueError, match="1 weights for 2 bases"):
        load_retrievers(bad)


def test_import_path_type_and_unknown_type():
    r = build_retriever({"type": "test_retrieval_registry:EchoRetriever", "k": 2}, fake_resources())
    assert [h.chunk_id for h in r.search("x", 2)] == ["echo0", "echo1"]
    with pytest.raises(ValueError, match="unknown retriever type"):
        build_retriever({"type": "bm26"}, fake_resources())
    assert {"bm25", "dense", "hybrid_rrf", "hybrid_weighted", "auto_merging", "multi_query"} <= set(RETRIEVERS)
    assert {"features", "cross_encoder", "llm"} <= set(RERANKERS)


def test_inline_bases_and_shared_resources():
    res = fake_resources()
    r = build_retriever({"type": "hybrid_rrf", "bases": [{"type": "bm25"}, "dense"]}, res)
    r.search("Apple total net sales", 3)
    r.search("Apple total net sales", 3)
    assert res.get("embedder").calls == 2 + 0  # corpus encode once + the query once (cached 2nd time)


def test_user_text_never_raises():
    r = build_retriever({"type": "hybrid_rrf"}, fake_resources())
    for q in ['"Item 7" (MD&A): AND OR NOT', "", "   ", "$4.2B -- ~^*", "ÆØÅ 税"]:
        assert isinstance(r.search(q, 5), list)


def test_scope_filters_restrict_every_retriever():
    res = fake_resources()
    scope = SearchFilters(filing_ids=("MSFT-2022-10K",))
    for t in ("bm25", "dense", "hybrid_rrf", "hybrid_weighted", "multi_query", "auto_merging"):
        hits = build_retriever({"type": t}, res).search("total net sales revenue", 10, scope)
        assert hits and {h.filing_id for h in hits} == {"MSFT-2022-10K"}, t
    assert build_retriever({"type": "bm25"}, res).search("net sales", 5, SearchFilters(filing_ids=())) == []


# -- rerankers -----------------------------------------------------------------------------------

def test_figures_in():
    assert figures_in("Did sales reach $394,328 million (up 7.8%) in 2022?") == ["394328", "7.8"]


def test_feature_reranker_prefers_figure_period_and_line_item():
    hits = [
        hit("narrative", 3.0, ctype="prose", fy=2022),
        hit("row2021", 2.0, fy=2021),
        hit("row2022", 1.0, fy=2022),
    ]
    hits[0].text = "Apple net sales grew in 2022 because of iPhone demand"
    hits[1].text = "Total net sales 2021 365,817 2020 274,515"
    hits[2].text = "Total net sales 2022 394,328 2021 365,817"
    rr = FeatureReranker(Lexicon.load_default())
    out = rr.rerank("Were Apple's total net sales 394,328 in fiscal 2022?", hits)
    assert [h.chunk_id for h in out] == ["row2022", "narrative", "row2021"]
    top = out[0].stage_scores
    assert top["feature:figure"] == 1.0 and top["feature:line_item"] == 1.0 and top["feature:table_row"] == 1.0
    assert top["feature:period"] == 1.0
    assert out[0].stage == "rerank:features" and out[0].rank == 1
    # base scores survive in stage_scores; inputs untouched
    assert top["fixed"] == 1.0 and "feature:figure" not in hits[2].stage_scores


def test_feature_reranker_is_neutral_without_signals():
    hits = [hit("a", 3.0, ctype="prose"), hit("b", 1.0, ctype="prose")]
    out = FeatureReranker(Lexicon.load_default()).rerank("who is the chief executive", hits)
    assert [h.chunk_id for h in out] == ["a", "b"]


def test_reranking_stage_from_config_and_depth():
    base = ListRetriever([hit(f"h{i}", 10 - i) for i in range(10)])
    r = RerankingRetriever(base, FeatureReranker(), depth=8)
    result = r.retrieve("q", 3)
    assert base.calls[0][1] == 8 and len(result.hits) == 3 and "rerank:features" in result.timings_ms


def test_cross_encoder_without_weights_fails_clearly(tmp_path):
    with pytest.raises(RerankerUnavailable, match="No cross-encoder weights ship offline"):
        build_reranker({"type": "cross_encoder"}, fake_resources())
    with pytest.raises(RerankerUnavailable, match="does not exist"):
        build_retriever({"type": "bm25", "reranker": {"type": "cross_encoder",
                                                       "model_path": str(tmp_path / "missing")}}, fake_resources())


def test_llm_reranker_uses_any_score_pairs_callable():
    calls = []

    def score_pairs(query, passages):
        calls.append(len(passages))
        return [1.0 if "394,328" in p else 0.0 for p in passages]

    r = build_retriever({"type": "bm25", "reranker": {"type": "llm", "depth": 5}},
                        fake_resources(score_pairs=score_pairs))
    hits = r.search("Apple total net sales 2022", 3)
    assert calls == [5] and hits[0].text.count("394,328") == 1 and hits[0].stage == "rerank:llm"


# -- multi-query ---------------------------------------------------------------------------------

def test_lexicon_expansion():
    lex = Lexicon.load_default()
    qs = lex.expand("What was Apple's capital expenditure in 2022?")
    assert qs[0] == "What was Apple's capital expenditure in 2022?"
    assert any("purchases of property, plant and equipment" in q and "2022" in q for q in qs)
    qs = lex.expand("quick ratio of Apple in fiscal 2022", max_queries=10)
    for comp in ("cash and cash equivalents", "short-term investments", "accounts receivable",
                 "total current liabilities"):
        assert any(q.startswith(comp) and "apple" in q for q in qs), comp


def test_lexicon_user_extension(tmp_path):
    extra = tmp_path / "my.yaml"
    extra.write_text("concepts:\n  capital_expenditure:\n    line_items: [capex spend line]\n"
                     "  burn:\n    aliases: [cash burn]\n    components: [net cash used in operating activities]\n")
    lex = Lexicon.load_default([extra])
    assert "capex spend line" in lex.concepts["capital_expenditure"].line_items
    assert "purchases of property, plant and equipment" in lex.concepts["capital_expenditure"].line_items
    assert lex.expand("cash burn 2023")[1].startswith("net cash used in operating activities")


def test_multi_query_expands_with_lexicon():
    r = build_retriever({"type": "multi_query", "base": {"type": "bm25"}, "top_pages": 1}, fake_resources())
    result = r.retrieve("capital expenditure", 4)
    assert any("purchases of property, plant and equipment" in q for q in result.info["queries"])
    assert result.hits[0].chunk_id == "a22-cf" and result.hits[0].page_start == 31


def test_multi_query_returns_same_page_neighbours_in_reading_order():
    r = build_retriever({"type": "multi_query", "base": {"type": "bm25"}, "top_pages": 1, "neighbour_window": 1},
                        fake_resources())
    hits = r.search("cost", 3)  # only a22-r2 (page 28, position 12) matches
    assert [h.chunk_id for h in hits] == ["a22-r1", "a22-r2", "a22-r3"]
    assert hits[0].stage_scores["neighbour"] == 1.0


def test_multi_query_page_fusion_on_hand_made_rankings():
    class Lex:
        def expand(self, q, n):
            return ["q1", "q2"]

    class Base(Retriever):
        def _retrieve(self, query, k, filters, timings, info):
            if query == "q1":  # pages: P1 (rank 1), P2 (rank 2)
                return [hit("c1", 3, page=1, pos=1), hit("c2", 2, page=2, pos=5), hit("c3", 1, page=1, pos=2)]
            return [hit("c4", 3, page=2, pos=6), hit("c5", 2, page=3, pos=9)]  # P2 (1), P3 (2)

    r = MultiQueryRetriever(Base(), Lex(), chunk_store=None, top_pages=2)
    hits = r.search("x", 10)
    # P2: 1/62 + 1/61 > P1: 1/61 > P3: 1/62; chunks grouped by page in reading order
    assert [h.chunk_id for h in hits] == ["c2", "c4", "c1", "c3", "c5"]
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61)


def test_default_yaml_path_exists():
    assert DEFAULT_RETRIEVERS_PATH.exists()
