"""The one seam between local and distributed storage.

Every caller asks :func:`storage_for` once, where its resources are built, and then calls the same methods
whichever mode is configured: :class:`LocalStorage` keeps everything under FINRAG_HOME (one Tantivy index,
one LanceDB folder, the warehouse written in place); ``distributed.DistributedStorage`` keeps filing bytes,
BM25 shards, LanceDB and result rows on the object store (docs/DEPLOYMENT.md, "Storage layout"). No caller
branches on the mode: what differs lives behind these methods.

    storage = storage_for(paths)
    written = storage.write_bm25(filing_id, leaves)      # local: the shared index; distributed: the filing's shard
    index = storage.open_bm25()                          # what searches read, at its latest commit/snapshot
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finrag_pipeline.core.models import Chunk
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.storage.interface import BM25Written, Storage


@dataclass(frozen=True)
class LocalStorage:
    """Local mode: everything under FINRAG_HOME, the warehouse written in place."""

    paths: FinragPaths
    kind: str = "local"
    filings_on_local_disk: bool = True

    # ---- filing bytes: already kept in FINRAG_HOME/filings by the catalog ------------------------

    def upload_filing(self, stored_path: str | os.PathLike) -> str | None:
        return None

    def local_filing(self, source_path: str | os.PathLike, content_sha256: str) -> Path:
        return Path(source_path)

    # ---- warehouse rows: written straight into warehouse.duckdb ----------------------------------

    def partition_warehouse(self, filing_id: str) -> Any:
        from finrag_pipeline.core.warehouse import Warehouse

        return Warehouse(self.paths.warehouse)

    def results(self) -> None:
        """No separate result writer: evaluations write the warehouse themselves."""
        return None

    def publish_results(self, warehouse: Any) -> None:
        return None

    # ---- BM25: one Tantivy index for the corpus ---------------------------------------------------

    def write_bm25(self, filing_id: str, chunks: Iterable[Chunk]) -> BM25Written:
        index = self.open_bm25()
        n = index.upsert_filing(filing_id, chunks)
        return BM25Written(n, {"rows_all_filings": index.count(), "documents_in_index": index.count(),
                               "path": str(self.paths.tantivy_dir)})

    def remove_bm25(self, filing_id: str) -> None:
        self.open_bm25().delete_filing(filing_id)

    def bm25_filing_ids(self) -> list[str]:
        return sorted(self.open_bm25().filing_ids())

    def publish_bm25(self) -> None:
        """Nothing to publish: a commit of the one index is what searches read."""
        return None

    def open_bm25(self) -> Any:
        """The process's Tantivy index at its latest commit (another process may have committed since)."""
        index = _tantivy(str(self.paths.tantivy_dir))
        index.index.reload()
        return index

    def bm25_counts(self, filing_ids: Iterable[str]) -> dict[str, int]:
        """Documents per filing, read from the index folder (0 everywhere before the first commit)."""
        from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

        ids = list(filing_ids)
        folder = Path(self.paths.tantivy_dir)
        if not folder.is_dir() or not any(folder.iterdir()):
            return dict.fromkeys(ids, 0)
        index = TantivyIndex(folder)
        return {fid: index.count(fid) for fid in ids}

    # ---- vectors: one LanceDB folder -------------------------------------------------------------

    def open_lance(self, embedder: Any, **kwargs: Any) -> Any:
        """The process's LanceDB table at its latest version."""
        index = _lance(str(self.paths.lancedb_dir), embedder, tuple(sorted(kwargs.items())))
        index.table.checkout_latest()
        return index

    def lance_counts(self, filing_ids: Iterable[str]) -> dict[str, int]:
        """Rows per filing in the vector table, read without loading the embedding model."""
        from finrag_pipeline.core.indexing.lance_index import lance_row_counts

        ids = list(filing_ids)
        if not Path(self.paths.lancedb_dir).is_dir():
            return dict.fromkeys(ids, 0)
        return lance_row_counts(str(self.paths.lancedb_dir), ids)


def storage_for(paths: FinragPaths, config_dir: str | os.PathLike | None = None) -> Storage:
    """The storage the deployment configures (assets_config/deployment.yaml, FINRAG_DEPLOYMENT): the object
    store of distributed mode when it has one, else local folders. The one place the mode is decided."""
    from finrag_pipeline.core.storage.mode import object_store_config

    config = object_store_config(config_dir)
    if config is None:
        return LocalStorage(paths)
    from finrag_pipeline.core.storage.distributed import DistributedStorage

    return DistributedStorage.over(config, paths)


# Opened indexes are kept per process: the assets of one run and the sessions of one CLI command share them.
@functools.cache
def _tantivy(path: str) -> Any:
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

    return TantivyIndex(path)


@functools.cache
def _lance(path: str, embedder: Any, options: tuple[tuple[str, Any], ...]) -> Any:
    from finrag_pipeline.core.indexing.lance_index import LanceIndex

    return LanceIndex(path, embedder, **dict(options))
