"""Embedders and the two indexes (tantivy BM25, LanceDB vectors). Pure core: no Dagster imports.

Names are imported lazily: ``import lancedb`` costs seconds, and a process that only needs BM25
(or a Dagster code location being loaded) should not pay for it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Embedder": "embedder", "EmbedderConfig": "embedder", "FlagEmbedder": "embedder",
    "SentenceTransformerEmbedder": "embedder", "load_embedder_config": "embedder",
    "embedder_configs": "embedder",
    "EmbeddingCache": "embedding_cache",
    "financial_terms": "financial_tokens",
    "LanceIndex": "lance_index", "filters_to_sql": "lance_index",
    "BM25_B": "tantivy_index", "BM25_K1": "tantivy_index", "IndexBusy": "tantivy_index",
    "TantivyIndex": "tantivy_index", "fin_tokens_for_bm25": "tantivy_index",
    "tokenize_for_bm25": "tantivy_index",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
