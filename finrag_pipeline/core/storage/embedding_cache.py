"""The embedding cache on the object store, behind each worker's local SQLite cache.

``embeddings/<embedder slug>/<sha[:2]>/<text sha256>.f32`` holds one vector as raw little-endian float32.
A text embedded by any worker is found by every other (re-indexing a filing elsewhere, a chunking variant
with identical table rows). Lookups go to the local cache first; misses are fetched in parallel and kept
locally. A vector's key is its text's hash, so concurrent writers of the same text write the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache
from finrag_pipeline.core.storage.object_store import ObjectNotFound, ObjectStore

PREFIX = "embeddings"


def embedder_slug(name: str) -> str:
    """A key-safe folder per embedder name ("sentence-transformers/all-MiniLM-L6-v2" has a '/')."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:60]
    return f"{readable}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def vector_key(embedder: str, sha: str) -> str:
    return f"{PREFIX}/{embedder_slug(embedder)}/{sha[:2]}/{sha}.f32"


class ObjectStoreEmbeddingCache(EmbeddingCache):
    """:class:`EmbeddingCache` (same interface) whose misses go to, and whose writes also go to, the store."""

    def __init__(self, path: str | os.PathLike, store: ObjectStore, *, threads: int = 16):
        super().__init__(path)
        self.store = store
        self.threads = threads

    def get_many(self, embedder: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        found = super().get_many(embedder, shas)
        missing = [s for s in dict.fromkeys(shas) if s not in found]
        if not missing:
            return found

        def fetch(sha: str) -> tuple[str, np.ndarray | None]:
            try:
                return sha, np.frombuffer(self.store.get_bytes(vector_key(embedder, sha)), dtype="<f4").copy()
            except ObjectNotFound:
                return sha, None

        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            remote = {sha: vec for sha, vec in pool.map(fetch, missing) if vec is not None}
        if remote:
            super().put_many(embedder, remote)
            found.update(remote)
        return found

    def put_many(self, embedder: str, items: dict[str, np.ndarray]) -> None:
        super().put_many(embedder, items)

        def upload(item: tuple[str, np.ndarray]) -> None:
            sha, vec = item
            self.store.put_bytes(vector_key(embedder, sha), np.asarray(vec, dtype="<f4").tobytes())

        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            list(pool.map(upload, items.items()))
