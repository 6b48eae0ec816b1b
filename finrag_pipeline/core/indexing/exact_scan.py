"""Exact dense search over an in-memory copy of a LanceDB table: one matrix product per query.

Below ``exact_scan_max_rows`` (assets_config/dense_search.yaml) a brute-force scan of the normalised
float32 matrix is both exact and faster than LanceDB's IVF search (100k x 384: a few ms against
~20 ms), so :class:`~finrag_pipeline.core.indexing.lance_index.LanceIndex` answers from it and keeps
the ANN path for larger tables. The copy is tied to the table version it was read at: the index
reloads it when the version changes (its own writes, or ``checkout_latest`` after another process
wrote). Prefilters are numpy masks over the filter columns, built from ``SearchFilters.clauses`` (the
same description ``filters_to_sql`` turns into SQL), so both paths select the same rows.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from finrag_pipeline.core.models import FILTER_FIELDS, SearchFilters

CONFIG_FILE = "dense_search.yaml"


class DenseSearchConfig(BaseModel):
    """``exact_scan_max_rows``: tables up to this many rows are searched by an exact in-memory scan
    (memory: rows x dim x 4 bytes, ~150 MB at 100k x 384); None or 0 turns the scan off.
    ``scan_threads``: BLAS threads for one scan (None: the BLAS library's default).
    ``shared_search_depth``: in an evaluation session, the dense search shared by its retrievers fetches at
    least this many rows per question and filter (RetrievalResources.shared_search)."""

    model_config = ConfigDict(extra="forbid")

    exact_scan_max_rows: int | None = Field(200_000, ge=0)
    scan_threads: int | None = Field(1, gt=0)
    shared_search_depth: int = Field(50, ge=0)


@functools.cache
def _blas_controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def blas_threads(n: int | None) -> contextlib.AbstractContextManager:
    """At most ``n`` BLAS threads inside the block (None: no limit); ~15 us per use."""
    return contextlib.nullcontext() if n is None else _blas_controller().limit(limits=n, user_api="blas")


def load_dense_search_config(overrides: dict[str, Any] | None = None) -> DenseSearchConfig:
    from finrag_pipeline.core.config import config_path, load_model

    if not config_path(CONFIG_FILE).exists():
        return DenseSearchConfig.model_validate(overrides or {})
    return load_model(DenseSearchConfig, CONFIG_FILE, overrides)


FILTER_COLUMNS = tuple(column for _, column, _ in FILTER_FIELDS)


class ExactScan:
    """Chunk ids, unit-normalised vectors and the filter columns of one table version."""

    def __init__(self, version: int, chunk_ids: list[str], matrix: np.ndarray, columns: dict[str, list[Any]],
                 threads: int | None = None):
        self.version = version
        # A matrix-vector product is memory-bound: a second thread adds little, and when the other core is
        # busy (parallel evaluations, other runs) the call waits a whole scheduler slice for it (measured:
        # 6.8k rows, 4.7 ms with one thread vs 30 ms with two on a loaded 2-core machine).
        self.threads = threads
        self.chunk_ids = np.asarray(chunk_ids, dtype=object)
        self.matrix = matrix
        # Each filter column as integer codes plus its value -> code map: a mask is then np.isin on
        # small ints (~0.2 ms at 100k rows) instead of comparisons of Python strings.
        self._codes: dict[str, np.ndarray] = {}
        self._vocab: dict[str, dict[Any, int]] = {}
        for column in FILTER_COLUMNS:
            vocab: dict[Any, int] = {}
            codes = np.fromiter((-1 if v is None else vocab.setdefault(v, len(vocab)) for v in columns[column]),
                                dtype=np.int32, count=len(chunk_ids))
            self._codes[column], self._vocab[column] = codes, vocab

    @classmethod
    def load(cls, table: Any, threads: int | None = None) -> ExactScan:
        """Read ``table`` (a LanceDB table: chunk_id, vector and the filter columns) at its current version."""
        version = table.version
        data: pa.Table = table.search().select(["chunk_id", "vector", *FILTER_COLUMNS]).limit(None).to_arrow()
        vectors = data["vector"].combine_chunks()
        dim = vectors.type.list_size
        matrix = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(-1, dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        return cls(version, data["chunk_id"].to_pylist(), matrix,
                   {c: data[c].to_pylist() for c in FILTER_COLUMNS}, threads)

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def mask(self, filters: SearchFilters | None) -> np.ndarray | None:
        """Rows that ``filters`` selects (None: all rows)."""
        if filters is None:
            return None
        mask: np.ndarray | None = None
        for column, allowed in filters.clauses():
            vocab = self._vocab[column]
            codes = [vocab[v] for v in allowed if v in vocab]
            selected = np.isin(self._codes[column], np.asarray(codes, dtype=np.int32))
            mask = selected if mask is None else mask & selected
        return mask

    def top_k(self, vector: np.ndarray, k: int, filters: SearchFilters | None = None) -> list[tuple[str, float]]:
        """``(chunk_id, cosine)`` of the ``k`` best rows, best first, ties by chunk_id (as LanceIndex.search)."""
        if k <= 0 or len(self) == 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query))
        if norm > 0:
            query = query / norm
        mask = self.mask(filters)
        rows = None if mask is None else np.flatnonzero(mask)
        if rows is not None and len(rows) == 0:
            return []
        with blas_threads(self.threads):
            if rows is None:
                sims = self.matrix @ query
            elif len(rows) < len(self) // 2:  # a narrow scope: multiply only its rows
                sims = self.matrix[rows] @ query
            else:  # a wide one: the full product is cheaper than the gather
                sims = (self.matrix @ query)[rows]
        if k < len(sims):
            kth = np.partition(sims, len(sims) - k)[len(sims) - k]
            candidates = np.flatnonzero(sims >= kth)  # every row tied with the k-th, so ties break by id
        else:
            candidates = np.arange(len(sims))
        ids = self.chunk_ids[candidates if rows is None else rows[candidates]]
        scores = sims[candidates]
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], ids[i]))[:k]
        return [(str(ids[i]), float(scores[i])) for i in order]
