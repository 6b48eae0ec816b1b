"""Embedders and the two indexes (tantivy BM25, LanceDB vectors). Pure core: no Dagster imports."""

from finrag_pipeline.core.indexing.embedder import (
    Embedder,
    EmbedderConfig,
    FlagEmbedder,
    SentenceTransformerEmbedder,
    load_embedder_config,
)
from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache
from finrag_pipeline.core.indexing.financial_terms import financial_terms
from finrag_pipeline.core.indexing.lance_index import LanceIndex, filters_to_sql
from finrag_pipeline.core.indexing.tantivy_index import (
    BM25_B,
    BM25_K1,
    TantivyIndex,
    fin_tokens_for_bm25,
    tokenize_for_bm25,
)

__all__ = [
    "BM25_B", "BM25_K1", "Embedder", "EmbedderConfig", "EmbeddingCache", "FlagEmbedder", "LanceIndex",
    "SentenceTransformerEmbedder", "TantivyIndex", "filters_to_sql", "fin_tokens_for_bm25",
    "financial_terms", "load_embedder_config", "tokenize_for_bm25",
]
