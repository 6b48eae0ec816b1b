"""The LLM reranker of retrievers.yaml with the real local 0.5B model's score_pairs (`make install-local-llm`)."""

import os

import pytest

pytestmark = pytest.mark.local_llm

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _excerpt_corpus import (  # noqa: E402
    INCOME_STATEMENT_PAGE,
    RISK_FACTORS_PAGE,
    build_excerpt_home,
)

QUESTION = "What were Apple's total net sales in fiscal 2022?"
DEPTH = 5


def test_llm_reranker_lifts_income_statement_above_risk_factors(local_ready, tmp_path):
    from finrag_pipeline.core.models import SearchFilters
    from finrag_pipeline.core.retrieval.config import load_retrievers
    from finrag_pipeline.core.retrieval.registry import build_retriever
    from finrag_pipeline.core.retrieval.rerank import LLMReranker, RerankingRetriever
    from finrag_pipeline.core.retrieval.resources import RetrievalResources

    corpus = build_excerpt_home(tmp_path / "home")
    resources = RetrievalResources.from_paths(corpus.paths, warehouse=corpus.warehouse)
    assert resources.score_pairs is None  # -> the reranker uses the local GGUF's P(Yes)

    # The reranker exactly as hybrid_rrf_llm configures it, over BM25 (no embedder needed here),
    # with a handful of candidates.
    reranker_cfg = load_retrievers()["hybrid_rrf_llm"].reranker
    assert reranker_cfg is not None and reranker_cfg.type == "llm"
    spec = {"name": "bm25_llm", "type": "bm25",
            "reranker": {**reranker_cfg.model_dump(exclude_none=True), "depth": DEPTH}}
    retriever = build_retriever(spec, resources)
    assert isinstance(retriever, RerankingRetriever) and isinstance(retriever.reranker, LLMReranker)
    assert retriever.reranker.max_passage_chars == reranker_cfg.max_passage_chars

    filters = SearchFilters(filing_ids=(corpus.filing_id,))
    base = build_retriever("bm25", resources).search(QUESTION, DEPTH, filters)
    reranked = retriever.search(QUESTION, DEPTH, filters)

    def show(label, hits):
        print(f"\n{label}")
        for h in hits:
            print(f"  {h.rank} p{h.page_start} {h.chunk_type:<9} {h.score:.4f} {h.text[55:115]!r}")

    show("bm25", base)
    show("bm25 + llm reranker (local 0.5B, P(Yes))", reranked)

    # BM25 alone puts risk-factor prose ("sales outside the U.S.") above the income statement.
    assert base[0].page_start == RISK_FACTORS_PAGE
    assert {h.chunk_id for h in reranked} == {h.chunk_id for h in base}  # a reordering of the same hits
    assert all(h.stage == "rerank:llm" and 0.0 <= h.score <= 1.0 for h in reranked)
    # What the 0.5B model does reliably here: an income-statement chunk comes first, and the
    # "Total net sales" row scores above every risk-factor chunk.
    assert reranked[0].page_start == INCOME_STATEMENT_PAGE
    (net_sales,) = [h for h in reranked if "Total net sales" in h.text and h.chunk_type == "table_row"]
    risk = [h for h in reranked if h.page_start == RISK_FACTORS_PAGE]
    assert risk and all(net_sales.score > h.score for h in risk)


def test_llm_reranker_orders_two_passages_by_what_they_say(local_ready):
    """The default LLMReranker (the local 0.5B model's P(Yes)) on two passages: the one holding the
    asked figure goes above prose that shares the company but not the answer, whatever the base order."""
    from finrag_pipeline.core.models import Hit
    from finrag_pipeline.core.retrieval.rerank import LLMReranker

    hits = [Hit("prose", 0.9, 1, "AAPL-2022-10K", 20, 20, "text",
                "The Company leases office space in Cupertino, California.", "bm25"),
            Hit("row", 0.1, 2, "AAPL-2022-10K", 31, 31, "table_row",
                "Net sales by category: iPhone 205,489; Mac 40,177; iPad 29,292; Wearables 41,241; "
                "Services 78,129. Total net sales 394,328 for 2022.", "bm25")]
    reranked = LLMReranker(model="qwen2.5-0.5b").rerank(QUESTION, hits)
    assert [h.chunk_id for h in reranked] == ["row", "prose"]
    assert all(h.stage == "rerank:llm" and 0.0 < h.score < 1.0 for h in reranked)
