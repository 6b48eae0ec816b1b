"""Retrieval over indexed 10-K chunks. Pure core: no Dagster imports.

    from finrag_pipeline.core.retrieval import RetrievalResources, build_named_retrievers
    res = RetrievalResources(tantivy=..., lance=..., embedder=..., chunk_store=..., catalog=...)
    retrievers = build_named_retrievers(res, ["bm25", "hybrid_rrf"], overrides={"*": {"k": 5}})
    hits = retrievers["hybrid_rrf"].search("Apple total net sales fiscal 2022", k=5)
    result = retrievers["hybrid_rrf"].retrieve(question, 5, SearchFilters(filing_ids=("AAPL-2022-10K",)))
    result.timings_ms  # {"bm25": .., "embed": .., "dense": .., "rrf": .., "total": ..}
"""

from finrag_pipeline.core.retrieval.base import RetrievalResult, Retriever, Run, Timings
from finrag_pipeline.core.retrieval.config import (
    RerankerConfig,
    RetrieverConfig,
    RetrieversFile,
    load_retrievers,
    load_retrievers_file,
    parse_retriever_config,
)
from finrag_pipeline.core.retrieval.fusion import (
    normalize_scores,
    reciprocal_rank_fusion,
    weighted_score_fusion,
)
from finrag_pipeline.core.retrieval.registry import (
    RERANKERS,
    RETRIEVERS,
    build_named_retrievers,
    build_reranker,
    build_retriever,
    register_reranker,
    register_retriever,
)
from finrag_pipeline.core.retrieval.resources import ChunkStore, RetrievalResources

__all__ = [
    "RERANKERS", "RETRIEVERS", "ChunkStore", "RerankerConfig", "RetrievalResources", "RetrievalResult", "Retriever",
    "RetrieverConfig", "RetrieversFile", "Run", "Timings", "build_named_retrievers", "build_reranker", "build_retriever",
    "load_retrievers", "load_retrievers_file", "normalize_scores", "parse_retriever_config", "reciprocal_rank_fusion",
    "register_reranker", "register_retriever", "weighted_score_fusion",
]
