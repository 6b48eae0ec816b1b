"""Embedding ahead of the vector index: filings' leaf texts encoded into the embedding cache on one
background thread while the caller does other work.

Why: on a 2-core machine the ingest alternates single-threaded Python (parse, checks, chunking, QA
generation) with MiniLM embedding, which PyTorch runs on both cores with the GIL released. Encoding the
previous filing while the next one is parsed fills the core the Python steps leave idle. The
``vector_index`` step then finds every vector in the cache and only writes LanceDB.

Results are unchanged: the thread hands ``encode`` exactly the texts ``LanceIndex.upsert_filing`` would
(the cache's ``missing`` list, filings in submission order), through the same ``encode_st`` path on a
private copy of the same model (``batch_copy``), so the vectors are the same bit for bit. A prefetch is
only a head start: when it fails, or the embedder has no ``batch_copy``, or so few texts are missing that
the embedder would take its query path, nothing is cached and ``vector_index`` encodes as before.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache


@dataclass(frozen=True)
class PrefetchOutcome:
    key: str
    encoded: int            # texts encoded and cached by the background thread
    seconds: float
    skipped: str = ""       # why nothing was encoded ahead (the vector_index step encodes), "" otherwise
    error: str = ""         # the exception, when the prefetch failed (the vector_index step encodes)


class EmbeddingPrefetcher:
    """One background thread encoding submitted text lists, in submission order, into ``cache``.

    ``embedder`` is the one the vector index uses; the thread works on its ``batch_copy()``. Use as a
    context manager: leaving it waits for the thread (pending submissions are cancelled on an error).
    """

    def __init__(self, embedder, cache: EmbeddingCache | None):
        self.embedder, self.cache = embedder, cache
        make_copy = getattr(embedder, "batch_copy", None)
        self.disabled = ("no embedding cache" if cache is None
                         else "" if make_copy is not None else f"{type(embedder).__name__} has no batch_copy()")
        self._worker_embedder = None
        self._make_copy = make_copy
        self._min_texts = int(getattr(embedder, "direct_batch", 0)) + 1  # fewer: the embedder's query path
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedding-prefetch")
        self._futures: dict[str, Future[PrefetchOutcome]] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> EmbeddingPrefetcher:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(cancel=exc_type is not None)

    def close(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=True, cancel_futures=cancel)

    def submit(self, key: str, texts: Sequence[str]) -> None:
        """Encode ``texts`` (one filing's leaf texts, in the order ``vector_index`` embeds them) ahead."""
        with self._lock:
            if key in self._futures:
                raise ValueError(f"prefetch {key!r} submitted twice")
            self._futures[key] = self._pool.submit(self._run, key, list(texts))

    def wait(self, key: str) -> PrefetchOutcome:
        """Block until ``key``'s prefetch is done; its outcome (never raises for a failed prefetch)."""
        with self._lock:
            future = self._futures.get(key)
        if future is None:
            return PrefetchOutcome(key, 0, 0.0, skipped="not submitted")
        return future.result()

    def _run(self, key: str, texts: list[str]) -> PrefetchOutcome:
        t0 = time.perf_counter()
        if self.disabled:
            return PrefetchOutcome(key, 0, 0.0, skipped=self.disabled)
        try:
            missing = self.cache.missing(self.embedder.name, texts)
            if len(missing) < self._min_texts:
                return PrefetchOutcome(key, 0, time.perf_counter() - t0,
                                       skipped=f"{len(missing)} texts to encode: left to vector_index")
            if self._worker_embedder is None:
                self._worker_embedder = self._make_copy()
            vectors = self._worker_embedder.encode(list(missing.values()))
            self.cache.put_many(self.embedder.name, dict(zip(missing.keys(), vectors, strict=True)))
            return PrefetchOutcome(key, len(missing), time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 - a head start only: vector_index encodes and reports errors
            return PrefetchOutcome(key, 0, time.perf_counter() - t0, error=f"{type(exc).__name__}: {exc}")
