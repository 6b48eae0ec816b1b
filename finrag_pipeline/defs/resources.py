"""Dagster resources: where finrag lives (FINRAG_HOME), the warehouse, the indexes and the embedder.

Opened indexes and loaded models are cached per process, so the assets of one run share them.
"""

from collections.abc import Mapping
from functools import cache
from typing import Any

import dagster as dg
from pydantic import Field

from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.session import FinragSession
from finrag_pipeline.core.warehouse import Warehouse


class EmbedderResource(dg.ConfigurableResource):
    """The embedding model behind the vector index; any sentence-transformers or FlagEmbedding path works."""

    name: str = Field(default="", description="a named embedder of assets_config/embedder.yaml; empty = its default")
    model_path: str = Field(default="", description="override: a local sentence-transformers / FlagEmbedding model folder")
    kind: str = Field(default="", description="override: sentence_transformers | flag_embedding")

    def get(self, config_dir: str = ""):
        """The embedder; ``config_dir`` (FinragResource.config_dir) is where embedder.yaml is read."""
        return _embedder(self.name, self.model_path, self.kind, config_dir)

    def resolved_config(self, config_dir: str = ""):
        """The EmbedderConfig `get` builds."""
        return embedder_config(self.name, self.model_path, self.kind, config_dir)


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

    def storage(self):
        """Where filings, indexes and result rows live: local folders, or distributed mode's object store
        (core/storage/seam.py decides once, from deployment.yaml)."""
        from finrag_pipeline.core.storage.seam import storage_for

        return storage_for(self.paths, self.config_dir or None)

    def partition_warehouse(self, filing_id: str) -> Warehouse:
        """The warehouse for the steps of one filing (distributed mode: rows to the object store, read back
        from there; core/storage/partition_warehouse.py)."""
        return self.storage().partition_warehouse(filing_id)

    def configured(self):
        """A context in which assets_config files are read from ``config_dir`` first (empty: no change)."""
        from finrag_pipeline.core.config import using_config_dir

        return using_config_dir(self.config_dir or None)

    def tantivy(self):
        """The BM25 index searches read, at its latest commit or published snapshot."""
        return self.storage().open_bm25()

    def lance(self, embedder):
        return self.storage().open_lance(embedder)

    def publish_distributed_results(self) -> None:
        """Result rows workers left on the object store into the warehouse (the single publisher; idempotent,
        so every consumer may call it first). Local mode has none."""
        self.storage().publish_results(self.warehouse)

    def local_filing(self, meta) -> str:
        """The filing's bytes on this machine (fetched from the object store in distributed mode)."""
        return str(self.storage().local_filing(meta.source_path, meta.content_sha256))


def code_location_resources(home: str | None = None) -> dict[str, dg.ConfigurableResource]:
    """The finrag and embedder resources of the code location (definitions.py); the CLI builds the same
    (with its --home), so a command and an asset run see one FINRAG_HOME, config directory and embedder."""
    return {"finrag": FinragResource(home=str(home) if home else ""), "embedder": EmbedderResource()}


def session_from_resources(finrag: FinragResource, embedder: EmbedderResource,
                           retriever_overrides: Mapping[str, Any] | None = None) -> FinragSession:
    """The one wiring of a FinragSession in the Dagster layer (and in the CLI, which builds the same
    resources): FINRAG_HOME and the config directory of ``finrag``, the embedder of ``embedder`` (the
    one the vector index was built with; loaded only when a retriever embeds a query)."""
    config_dir = finrag.config_dir or None

    def embed():
        return embedder.get(finrag.config_dir)

    result_writer = finrag.storage().results()
    if result_writer is None:
        # rows go straight into the warehouse: one session is shared by the evaluation runs of a process
        # while the corpus and config are unchanged
        return FinragSession.shared(finrag.paths, embed, config_dir, retriever_overrides=retriever_overrides,
                                    embedder_key=embedder.model_dump_json())
    # result rows go to their writer (the object store) for the single publisher (publish_distributed_results)
    return FinragSession.from_parts(finrag.paths, embed, config_dir, retriever_overrides=retriever_overrides,
                                    result_writer=result_writer)


@cache
def _embedder(name: str, model_path: str, kind: str, config_dir: str = ""):
    return embedder_config(name, model_path, kind, config_dir).build()


def embedder_config(name: str = "", model_path: str = "", kind: str = "", config_dir: str = ""):
    """The EmbedderConfig an EmbedderResource with these fields builds from (picklable: what parallel
    evaluation workers build their own embedder with)."""
    from finrag_pipeline.core.config import using_config_dir
    from finrag_pipeline.core.indexing.embedder import EmbedderConfig, load_embedder_config

    with using_config_dir(config_dir or None):
        config = load_embedder_config(name or None)
    overrides = {k: v for k, v in (("model_path", model_path), ("kind", kind)) if v}
    return EmbedderConfig(**{**config.model_dump(), **overrides}) if overrides else config
