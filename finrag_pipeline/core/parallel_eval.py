"""Filings evaluated in parallel: workers compute each filing's rows, one process writes them.

DuckDB has one writer. The workers (processes, or threads: ``assets_config/evaluation_workers.yaml``)
only read (QA items, chunks, indexes) and compute a filing's evaluation rows with the same
``FinragSession.compute_retrieval`` / ``compute_answers`` a serial run calls; :func:`prepare_evaluations`
gathers them in the calling process, which keeps them until the filing's own evaluation run asks
(``FinragSession.evaluate_*`` takes them with :func:`take_prepared` and writes them with the usual
idempotent replace by run id). The rows are therefore the rows a serial run writes: same run ids, same
metric values (``test_parallel_eval.py``); only timestamps and latencies are new measurements.

Rows are handed over only while they are still valid: same FINRAG_HOME, filing, matrix and inputs
(``FinragSession.inputs_fingerprint``: data, retrieval/answer YAMLs, retriever overrides, before and after
the worker computed them); anything else is computed again by the run itself.

Latency stays each configuration's own: a worker evaluates a filing's whole matrix in one process,
configuration after configuration, so a search is timed alone in its worker (shared dense work is counted
at its measured cost, ``RetrievalResources.shared_search``). Worker processes split the cores between
them (BLAS, torch and the query encoder's threads = cores // workers), so up to one worker per core no
search waits for another worker's threads; more workers than cores, or a busy machine, lengthen every
latency alike.

Progress: worker processes send their core progress events through a queue; the calling process relays
them to its own sinks (terminal bars, Dagster log lines), one bar per filing and configuration.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import os
import queue as queue_module
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from finrag_pipeline.core import progress
from finrag_pipeline.core.evaluation.prepared import PreparedEvaluation, matrix_key

CONFIG_FILE = "evaluation_workers.yaml"
_log = logging.getLogger(__name__)
KINDS = ("retrieval", "answers")


class ParallelEvalConfig(BaseModel):
    """``workers``: filings evaluated at once (None: one per core, never more than the filings; 1: serial).
    ``executor``: worker processes (each loads its own indexes and model) or threads of this process."""

    model_config = ConfigDict(extra="forbid")

    workers: int | None = Field(None, ge=1)
    executor: Literal["processes", "threads"] = "processes"


def load_parallel_config(overrides: dict[str, Any] | None = None) -> ParallelEvalConfig:
    from finrag_pipeline.core.config import config_path, load_model

    if not config_path(CONFIG_FILE).exists():
        return ParallelEvalConfig.model_validate(overrides or {})
    return load_model(ParallelEvalConfig, CONFIG_FILE, overrides)


def worker_count(config: ParallelEvalConfig, n_filings: int, cores: int | None = None) -> int:
    """How many filings to evaluate at once: the configured number, or one per core; at most one per filing."""
    wanted = config.workers or cores or os.cpu_count() or 1
    return max(1, min(wanted, n_filings))


@dataclass(frozen=True)
class SessionRecipe:
    """What a worker needs to open the same session as the caller (picklable): FINRAG_HOME, the config
    directory, the embedder's config (an EmbedderConfig) and the retriever overrides."""

    home: str
    config_dir: str | None
    embedder_config: Any
    retriever_overrides: tuple[tuple[str, Any], ...] = ()


# ---------------------------------------------------------------------------------------------
# Workers

_WORKER = threading.local()


def _build_embedder(embedder_config: Any, query_threads: int | None) -> Any:
    if query_threads is not None and hasattr(embedder_config, "query_threads"):
        embedder_config = embedder_config.model_copy(update={"query_threads": query_threads})
    return embedder_config.build()


def _init_worker(recipe: SessionRecipe, events: Any, threads: int | None) -> None:
    """A worker's session (built once per worker) and, in a worker process, its share of the cores and the
    queue its progress events go to."""
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.session import FinragSession

    if threads is not None:  # a process of its own: its share of the cores
        with contextlib.suppress(Exception):
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=threads)
        with contextlib.suppress(Exception):
            import torch

            torch.set_num_threads(threads)
    def embedder():  # a factory (a plain function): the model loads when a retriever first embeds
        return _build_embedder(recipe.embedder_config, threads)

    _WORKER.session = FinragSession.from_parts(FinragPaths.from_env(recipe.home), embedder, recipe.config_dir,
                                               retriever_overrides=dict(recipe.retriever_overrides))
    _WORKER.events = events


def _evaluate_filing(recipe: SessionRecipe, filing_id: str, kinds: Sequence[str], matrix_json: str,
                     worker_threads: int | None) -> list[PreparedEvaluation]:
    """One filing's rows of each kind, in this worker's session."""
    from finrag_pipeline.core.evaluation.runner import EvalMatrix

    if getattr(_WORKER, "session", None) is None:  # a thread worker: its own session on first use
        _init_worker(recipe, None, worker_threads)
    session = _WORKER.session
    matrix = EvalMatrix.model_validate_json(matrix_json)
    sink = _QueueSink(_WORKER.events) if _WORKER.events is not None else None
    name = f"pid {os.getpid()}" if sink is not None else f"thread {threading.get_ident()}"
    out = []
    with progress.reporting_to(sink):
        for kind in kinds:
            before = session.inputs_fingerprint()
            t0 = time.perf_counter()
            compute = session.compute_retrieval if kind == "retrieval" else session.compute_answers
            runs, rows = compute(filing_id, matrix)
            seconds = time.perf_counter() - t0
            after = session.inputs_fingerprint()
            out.append(PreparedEvaluation(kind, filing_id, matrix_key(matrix), before if before == after else "",
                                          runs, rows, seconds, name))
    return out


class _QueueSink:
    """A worker process's progress events, sent to the calling process (which relays them)."""

    def __init__(self, events: Any):
        self.events, self.origin = events, os.getpid()

    def __call__(self, event: progress.ProgressEvent) -> None:
        with contextlib.suppress(Exception):  # progress must never fail an evaluation
            self.events.put((self.origin, event))


@contextlib.contextmanager
def _relaying(events: Any) -> Any:
    """Relay worker events from ``events`` to this context's sinks until the block ends."""
    stop = threading.Event()

    def drain() -> None:
        while True:
            try:
                origin, event = events.get(timeout=0.1)
            except queue_module.Empty:
                if stop.is_set():
                    return
                continue
            except (EOFError, OSError):
                return
            progress.relay(event, origin=f"pid {origin}")

    thread = threading.Thread(target=contextvars.copy_context().run, args=(drain,), daemon=True,
                              name="finrag-eval-progress")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def prepare_evaluations(recipe: SessionRecipe, filing_ids: Sequence[str], matrix: Any, *,
                        kinds: Sequence[str] = KINDS, workers: int = 2,
                        executor: Literal["processes", "threads"] = "processes",
                        on_filing_done: Callable[[str], None] | None = None) -> list[PreparedEvaluation]:
    """Compute every filing's evaluation rows of ``kinds`` with ``workers`` workers; nothing is written.
    A filing whose worker failed is left out (its run computes it and reports the error as usual)."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown evaluation kind(s) {unknown}; known: {list(KINDS)}")
    cores = os.cpu_count() or 1
    matrix_json = matrix.model_dump_json()
    out: list[PreparedEvaluation] = []
    pool: Executor
    if executor == "threads":
        pool = ThreadPoolExecutor(workers, thread_name_prefix="finrag-eval")
        events = None
        submit = functools.partial(_submit_in_context, pool)
        threads = None  # one process: the threads share its BLAS / torch settings
    else:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")  # never fork a process that runs threads (progress, Dagster)
        events = ctx.Queue()
        threads = max(1, cores // workers)
        pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                                   initargs=(recipe, events, threads))
        submit = pool.submit
    relay = _relaying(events) if events is not None else contextlib.nullcontext()
    # the pool shuts down first (its processes flush their queued events as they exit), then the relay drains
    with relay, pool:
        futures = {submit(_evaluate_filing, recipe, fid, tuple(kinds), matrix_json, threads): fid
                   for fid in filing_ids}
        for future in as_completed(futures):
            fid = futures[future]
            try:
                out.extend(future.result())
            except Exception as exc:  # noqa: BLE001 - the filing's own run computes it again and reports the error
                _log.warning("parallel evaluation of %s failed (%s: %s); its run evaluates it", fid,
                             type(exc).__name__, exc)
            if on_filing_done is not None:
                on_filing_done(fid)
    return out


def _submit_in_context(pool: ThreadPoolExecutor, fn: Callable, *args: Any) -> Any:
    """Submit with the caller's context (its progress sinks) copied into the worker thread."""
    return pool.submit(contextvars.copy_context().run, fn, *args)
