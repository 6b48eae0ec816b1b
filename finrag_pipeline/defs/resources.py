"""Dagster resources: where finrag lives (FINRAG_HOME), the warehouse, the indexes and the embedder.

Opened indexes and loaded models are cached per process, so the assets of one run share them.
"""

from functools import cache

import dagster as dg
from pydantic import Field

from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse


class EmbedderResource(dg.ConfigurableResource):
    """The embedding model behind the vector index; any sentence-transformers or FlagEmbedding path works."""

    name: str = Field(default="", description="a named embedder of assets_config/embedder.yaml; empty = its default")
    model_path: str = Field(default="", description="override: a local sentence-transformers / FlagEmbedding model folder")
    kind: str = Field(default="", description="override: sentence_transformers | flag_embedding")

    def get(self):
        return _embedder(self.name, self.model_path, self.kind)


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

    # The opened index is cached per process; another process (a Celery worker in distributed mode, the
    # CLI) may have committed since, so each request first moves it to the latest commit.
    def tantivy(self):
        index = _tantivy(str(self.paths.tantivy_dir))
        index.index.reload()
        return index

    def lance(self, embedder):
        index = _lance(str(self.paths.lancedb_dir), embedder)
        index.table.checkout_latest()
        return index


@cache
def _embedder(name: str, model_path: str, kind: str):
    from finrag_pipeline.core.indexing.embedder import EmbedderConfig, load_embedder_config

    config = load_embedder_config(name or None)
    overrides = {k: v for k, v in (("model_path", model_path), ("kind", kind)) if v}
    return EmbedderConfig(**{**config.model_dump(), **overrides}).build() if overrides else config.build()


@cache
def _tantivy(path: str):
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

    return TantivyIndex(path)


@cache
def _lance(path: str, embedder):
    from finrag_pipeline.core.indexing.lance_index import LanceIndex

    return LanceIndex(path, embedder)
