"""Ingest as a pipeline: the next filing is parsed in a second process while this one is embedded.

Parsing is single-threaded Python; embedding runs ONNX Runtime on the process's cores. On a machine with
two cores, one of them idle, a worker process parses (and chunks) filing i+1 while the main process embeds
and indexes filing i. Results come back in input order and are the same records the sequential path
makes (same function, same bytes; ``test_ingest_pipeline.py``).

Two users, one mechanism (:class:`WorkAhead`):

* ``finrag ingest`` (``defs/local_runs.run_pipeline``) runs one Dagster ``ingest_filing`` job per filing;
  :class:`ParseAhead` parses the next filing in the worker, and the ``parsed_filing`` asset takes that result
  (:func:`parse_filing_ahead`) instead of parsing again. A run the daemon starts finds nothing ahead and
  parses as before.
* :func:`ingest_files` (``benchmarks/ingest.py``): parse, chunk, embed and index a list of files into a
  Tantivy and a LanceDB index, the worker preparing filing i+1 (parse, chunk, embedding inputs) while the
  main process embeds filing i.

Settings: ``pipeline`` of assets_config/ingest.yaml (:class:`PipelineConfig`).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from finrag_pipeline.core.config import config_path, read_yaml

T = TypeVar("T")
R = TypeVar("R")
log = logging.getLogger(__name__)


class PipelineConfig(BaseModel):
    """``pipeline`` of ingest.yaml. ``parse_ahead``: auto = a worker process when the machine has two
    cores or more and one of them is idle (1-minute load average below cores - 1); on / off force it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    parse_ahead: Literal["auto", "on", "off"] = "auto"
    lookahead: int = Field(1, ge=1, le=4, description="filings prepared ahead of the one being embedded")


def load_pipeline_config(path: Path | None = None) -> PipelineConfig:
    return PipelineConfig(**(read_yaml(path or config_path("ingest.yaml")).get("pipeline") or {}))


def second_core_idle() -> bool:
    """Two cores or more, and the 1-minute load leaves one of them free."""
    cores = os.cpu_count() or 1
    return cores >= 2 and os.getloadavg()[0] < cores - 1


def use_worker(config: PipelineConfig | None = None, n_items: int = 2) -> bool:
    """Whether a worker process prepares items ahead (never for a single item: nothing to overlap)."""
    config = config or load_pipeline_config()
    if n_items < 2 or config.parse_ahead == "off":
        return False
    return config.parse_ahead == "on" or second_core_idle()


class WorkAhead(Generic[T, R]):
    """``fn(item)`` for the items after the current one, in ONE worker process; :meth:`result` returns them
    in any order asked, computing in this process what the worker was not given (or failed on: the
    in-process call then raises the real error). ``fn`` must be a module-level function (it is pickled)."""

    def __init__(self, fn: Callable[[T], R], *, worker: bool = True, lookahead: int = 1):
        self.fn, self.lookahead = fn, lookahead
        # spawn: a fresh interpreter, never a fork of a process holding ONNX Runtime / LanceDB threads
        self._pool = (ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
                      if worker else None)
        self._futures: dict[Any, Future] = {}
        self._lock = threading.Lock()
        self.ahead_hits = 0  # results the worker supplied
        self.last_from_worker = False  # whether the last result() came from the worker

    @property
    def has_worker(self) -> bool:
        return self._pool is not None

    def submit(self, key: Any, item: T) -> None:
        """Start ``fn(item)`` in the worker (no-op without one, or when ``key`` is already submitted)."""
        if self._pool is None:
            return
        with self._lock:
            if key not in self._futures:
                self._futures[key] = self._pool.submit(self.fn, item)

    def take(self, key: Any) -> R | None:
        """The worker's result for ``key`` (waiting for it), or None when it was not submitted or failed."""
        with self._lock:
            future = self._futures.pop(key, None)
        if future is None:
            return None
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001 - the caller recomputes in-process and gets the real error
            log.info("work ahead failed for %s (%s: %s); computing it in this process", key, type(exc).__name__, exc)
            return None
        self.ahead_hits += 1
        return result

    def result(self, key: Any, item: T) -> R:
        taken = self.take(key)
        self.last_from_worker = taken is not None
        return taken if taken is not None else self.fn(item)

    def in_order(self, items: Sequence[T], key: Callable[[T], Any] = lambda x: x) -> Iterator[tuple[T, R]]:
        """(item, fn(item)) in order; items i+1 .. i+lookahead are submitted before item i is returned."""
        for i, item in enumerate(items):
            for upcoming in items[i + 1:i + 1 + self.lookahead]:
                self.submit(key(upcoming), upcoming)
            yield item, self.result(key(item), item)

    def close(self) -> None:
        if self._pool is not None:  # waits for a parse in progress only (nothing else is left at the end)
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._futures.clear()

    def __enter__(self) -> WorkAhead[T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---- finrag ingest: the next filing parsed while the current one runs its Dagster job -------------------

def file_key(path: str | os.PathLike) -> tuple[str, int, int]:
    """A file as of now: resolved path, size, modification time (new bytes under one name: a new key)."""
    resolved = Path(path).resolve()
    stat = resolved.stat()
    return str(resolved), stat.st_size, stat.st_mtime_ns


def _parse(path: str) -> Any:
    from finrag_pipeline.core.ingest.parse import parse_filing

    return parse_filing(path)


_ACTIVE: ParseAhead | None = None


class ParseAhead:
    """While it is entered, :func:`parse_filing_ahead` (the ``parsed_filing`` asset) takes filings the worker
    parsed ahead. :meth:`before` is called as filing i starts: it hands filing i+1 .. i+lookahead to the
    worker."""

    def __init__(self, files: Sequence[str | os.PathLike], *, worker: bool, lookahead: int = 1):
        self.files = [str(f) for f in files]
        self.work: WorkAhead[str, Any] = WorkAhead(_parse, worker=worker, lookahead=lookahead)

    def before(self, index: int) -> None:
        for path in self.files[index + 1:index + 1 + self.work.lookahead]:
            try:
                self.work.submit(file_key(path), path)
            except OSError:
                continue  # a file gone: its own job reports it

    def take(self, path: str | os.PathLike) -> Any | None:
        try:
            return self.work.take(file_key(path))
        except OSError:
            return None

    def __enter__(self) -> ParseAhead:
        global _ACTIVE
        _ACTIVE = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _ACTIVE
        _ACTIVE = None
        self.work.close()


def parse_filing_ahead(path: str | os.PathLike) -> Any:
    """``parse_filing(path)``, taken from the worker when :class:`ParseAhead` parsed it already."""
    active = _ACTIVE
    parsed = active.take(path) if active is not None else None
    if parsed is not None:
        return parsed
    from finrag_pipeline.core.ingest.parse import parse_filing

    return parse_filing(path)


def filing_embedding_inputs(warehouse: Any, filing_id: str, leaves: Sequence[Any], config: Any = None) -> dict[str, str]:
    """chunk id -> embedding input, for the ``leaves`` of ``filing_id`` whose input differs from their text
    (what ``LanceIndex.upsert_filing(embed_inputs=...)`` takes); pages and table rows read from ``warehouse``
    only when a setting needs them."""
    from finrag_pipeline.core.chunking.embedding_inputs import embedding_inputs, load_embedding_input_config
    from finrag_pipeline.core.records import load_pages, load_table_rows

    config = config or load_embedding_input_config()
    if config.changes_nothing or not leaves:
        return {}
    pages = load_pages(warehouse, filing_id) if config.boilerplate else []
    rows = load_table_rows(warehouse, filing_id) if config.table_rows == "short" else []
    return {c.chunk_id: text for c, text in zip(leaves, embedding_inputs(leaves, pages, rows, config), strict=True)
            if text != c.text}


# ---- the whole path over files: parse, chunk, embed, index ---------------------------------------------

@dataclass
class PreparedFiling:
    """A filing parsed and chunked, with the text each leaf is embedded as."""

    path: str
    parsed: Any  # ParsedFiling
    chunks: list[Any]
    leaves: list[Any]
    inputs: dict[str, str]
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def filing_id(self) -> str:
        return self.parsed.filing_id


def prepare_filing(path: str) -> PreparedFiling:
    """Parse, chunk (default chunking of ingest.yaml) and the leaves' embedding inputs (embedder.yaml)."""
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.chunking.config import load_chunking_config
    from finrag_pipeline.core.chunking.embedding_inputs import embedding_inputs
    from finrag_pipeline.core.ingest.parse import parse_filing

    t0 = time.perf_counter()
    parsed = parse_filing(path)
    t1 = time.perf_counter()
    chunks = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config())
    leaves = [c for c in chunks if c.is_leaf]
    inputs = dict(zip((c.chunk_id for c in leaves),
                      embedding_inputs(leaves, parsed.pages, parsed.table_rows), strict=True))
    return PreparedFiling(str(path), parsed, chunks, leaves, inputs,
                          {"parse": t1 - t0, "chunk": time.perf_counter() - t1})


@dataclass
class FilingIngested:
    filing_id: str
    pages: int
    leaves: int
    encoded: int
    seconds: dict[str, float]
    prepared_ahead: bool = False  # parsed and chunked by the worker process


def ingest_files(files: Iterable[str | os.PathLike], tantivy: Any, lance: Any, *, worker: bool | None = None,
                 lookahead: int | None = None) -> Iterator[FilingIngested]:
    """Parse, chunk, embed (through ``lance``'s embedding cache) and index ``files`` into ``tantivy`` and
    ``lance``, one filing after the other; with a worker the next filing is prepared while this one embeds.
    ``worker`` None: :func:`use_worker` decides (ingest.yaml ``pipeline``)."""
    files = [str(f) for f in files]
    config = load_pipeline_config()
    worker = use_worker(config, len(files)) if worker is None else worker
    with WorkAhead(prepare_filing, worker=worker, lookahead=lookahead or config.lookahead) as ahead:
        for _, prepared in ahead.in_order(files):  # filing i+1 submitted to the worker before i is returned
            fid = prepared.filing_id
            t0 = time.perf_counter()
            vectors = lance.embed([prepared.inputs[c.chunk_id] for c in prepared.leaves], label=fid)
            encoded = lance.last_encoded
            t1 = time.perf_counter()
            tantivy.upsert_filing(fid, prepared.leaves)
            lance.upsert_filing(fid, prepared.leaves, vectors=vectors)
            yield FilingIngested(fid, prepared.parsed.meta.n_pages, len(prepared.leaves), encoded,
                                 {**prepared.seconds, "embed": t1 - t0, "index": time.perf_counter() - t1},
                                 prepared_ahead=ahead.last_from_worker)
