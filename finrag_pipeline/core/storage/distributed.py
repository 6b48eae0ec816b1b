"""Distributed mode's side of the storage seam (core/storage/seam.py): the object store for every kind of data.

Callers never build it themselves: ``seam.storage_for(paths)`` returns it when deployment.yaml gives distributed
mode an object store, and a ``LocalStorage`` otherwise; both have the same methods.

Workers:   ``local_filing(source_path, sha256)``, ``open_lance(embedder)``, ``write_bm25(fid, chunks)`` (the
           filing's shard), ``remove_bm25(fid)``, ``results()`` (a ``replace_rows`` writer).
Registration: ``upload_filing(stored_path)`` before the filing is written to ``core.filings``.
Publishers (ONE step each): ``publish_bm25()``, ``publish_results(warehouse)``.
Searchers: ``open_bm25()`` (the published snapshot, cached locally), ``open_lance(embedder)``.
Local caches live under ``FINRAG_HOME/cache/object_store``. Key layout: docs/DEPLOYMENT.md, "Storage layout".
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finrag_pipeline.core.models import Chunk
from finrag_pipeline.core.object_store_config import ObjectStoreConfig
from finrag_pipeline.core.paths import FinragPaths, contained
from finrag_pipeline.core.storage import bm25_shards
from finrag_pipeline.core.storage.embedding_cache import ObjectStoreEmbeddingCache
from finrag_pipeline.core.storage.errors import FilingBytesMismatch
from finrag_pipeline.core.storage.interface import BM25Written
from finrag_pipeline.core.storage.object_store import ObjectStore
from finrag_pipeline.core.storage.results import PartitionResults, ResultsPublishReport, publish_results

FILINGS = "filings"
LANCEDB = "lancedb"


@functools.cache
def _store(config: ObjectStoreConfig) -> ObjectStore:
    return ObjectStore(config)  # one boto3 client per process and configuration


@dataclass(frozen=True)
class DistributedStorage:
    store: ObjectStore
    paths: FinragPaths
    kind: str = "object_store"
    filings_on_local_disk: bool = False   # the bytes live on the object store; workers fetch them

    @classmethod
    def over(cls, config: ObjectStoreConfig, paths: FinragPaths) -> DistributedStorage:
        """The object store ``config`` for this FINRAG_HOME (one client per process and configuration)."""
        return cls(_store(config), paths)

    @property
    def cache_dir(self) -> Path:
        return self.paths.cache_dir / "object_store"

    # ---- filing bytes -----------------------------------------------------------------------

    def upload_filing(self, stored_path: str | os.PathLike) -> str:
        """Upload a registered filing (and its sidecar) under its stored name; returns the key.

        The stored name carries the content hash (``<filing_id>-<sha[:12]>.<ext>``): written once.
        """
        stored = Path(stored_path)
        key = f"{FILINGS}/{stored.name}"
        sidecar = stored.with_name(stored.name + ".yaml")
        if sidecar.exists():  # first, so a worker that sees the filing also sees its sidecar
            self.store.put_file(f"{key}.yaml", sidecar)
        if not self.store.exists(key):
            self.store.put_file(key, stored)
        return key

    def local_filing(self, source_path: str | os.PathLike, content_sha256: str) -> Path:
        """A local copy of a registered filing: ``source_path`` itself when present (the registering
        machine, a shared filesystem), else downloaded once into this machine's filing store and checked
        against ``content_sha256``."""
        source = Path(source_path)
        if source.is_file():
            return source
        target = contained(self.paths.filings_store / source.name, self.paths.filings_store)
        if not target.is_file():
            key = f"{FILINGS}/{source.name}"
            if self.store.exists(f"{key}.yaml"):
                self.store.get_file(f"{key}.yaml", target.with_name(target.name + ".yaml"))
            tmp = self.store.get_file(key, target.with_name(f".{target.name}.fetch"))
            digest = hashlib.sha256(tmp.read_bytes()).hexdigest()
            if digest != content_sha256:
                tmp.unlink(missing_ok=True)
                raise FilingBytesMismatch(f"{key} hashes to {digest[:16]}..., registered as {content_sha256[:16]}...")
            os.replace(tmp, target)
        return target

    # ---- LanceDB + embedding cache ------------------------------------------------------------

    @property
    def lancedb_uri(self) -> str:
        return self.store.config.uri(LANCEDB)

    def embedding_cache(self) -> ObjectStoreEmbeddingCache:
        return ObjectStoreEmbeddingCache(self.cache_dir / "embeddings.sqlite", self.store)

    def open_lance(self, embedder: Any, **kwargs: Any):
        """The LanceDB table on the object store (``s3://.../lancedb``) at its latest version, embedding cache
        on the store too; kept per process (and embedder) when opened with the defaults."""
        if kwargs:
            return self._new_lance(embedder, **kwargs)
        index = _lance_of(self, embedder)
        index.table.checkout_latest()
        return index

    def _new_lance(self, embedder: Any, **kwargs: Any):
        from finrag_pipeline.core.indexing.lance_index import LanceIndex

        kwargs.setdefault("cache", self.embedding_cache())
        return LanceIndex(self.lancedb_uri, embedder, storage_options=self.store.config.lance_storage_options(),
                          **kwargs)

    # ---- BM25 ---------------------------------------------------------------------------------

    def write_bm25(self, filing_id: str, chunks: Iterable[Chunk]) -> BM25Written:
        """The filing's own shard; searches see it once ``publish_bm25`` (corpus_state) merges the shards."""
        ref = bm25_shards.write_filing_shard(self.store, filing_id, chunks)
        return BM25Written(ref.n_docs, {"shard": ref.shard_key})

    def remove_bm25(self, filing_id: str) -> None:
        bm25_shards.remove_filing_shard(self.store, filing_id)

    def bm25_filing_ids(self) -> list[str]:
        """Filings with a current shard (written, published or not)."""
        return sorted(bm25_shards.current_heads(self.store))

    def bm25_counts(self, filing_ids: Iterable[str]) -> dict[str, int]:
        """Documents in each filing's current shard (0: none written): what its worker indexed."""
        heads = bm25_shards.current_heads(self.store)
        return {fid: heads[fid].n_docs if fid in heads else 0 for fid in filing_ids}

    def lance_counts(self, filing_ids: Iterable[str]) -> dict[str, int]:
        """Rows per filing in the LanceDB table on the store, read without loading the embedding model."""
        from finrag_pipeline.core.indexing.lance_index import lance_row_counts

        return lance_row_counts(self.lancedb_uri, list(filing_ids),
                                storage_options=self.store.config.lance_storage_options())

    def publish_bm25(self) -> str:
        """Merge the current shards into the snapshot searches open (the single publisher: corpus_state)."""
        published = bm25_shards.publish_bm25_snapshot(self.store, self.cache_dir / "bm25_publisher")
        return (f"BM25 snapshot {published.snapshot_id}: {len(published.filings)} filings, {published.n_docs} "
                f"documents ({'published' if published.changed else 'unchanged'})")

    def open_bm25(self):
        """The published BM25 snapshot as a TantivyIndex; before the first publish, an empty index (a search
        finds nothing, as nothing is published)."""
        index = bm25_shards.open_published_bm25(self.store, self.cache_dir / "bm25_snapshots")
        if index is None:
            from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

            index = TantivyIndex(self.cache_dir / "bm25_snapshots" / "empty")
        return index

    # ---- warehouse results ----------------------------------------------------------------------

    def results(self) -> PartitionResults:
        return PartitionResults(self.store)

    def partition_warehouse(self, filing_id: str):
        """A Warehouse for one filing's steps: per-filing ingest rows to the store, read back before publication."""
        from finrag_pipeline.core.storage.partition_warehouse import PartitionWarehouse

        return PartitionWarehouse(self.paths.warehouse, self.results(), filing_id)

    def publish_results(self, warehouse: Any) -> ResultsPublishReport:
        return publish_results(self.store, warehouse)


@functools.cache
def _lance_of(storage: DistributedStorage, embedder: Any):
    return storage._new_lance(embedder)
