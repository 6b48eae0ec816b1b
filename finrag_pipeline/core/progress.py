"""Progress of long work: the core counts, whoever runs it renders.

Core code opens a :func:`task` ("embed NVDA-2025-10K", 841 chunks) and advances it; every
:class:`ProgressSink` installed with :func:`reporting_to` in the current context receives a
:class:`ProgressEvent` per change. The CLI renders them as terminal bars (cli_progress.py, rich), the
Dagster layer as ``context.log`` lines every N items or seconds (defs/progress.py). The core imports
neither. Sinks live in a context variable, not in arguments: a CLI command runs its Dagster jobs in
process, and the bars must see the counts of the assets those jobs execute. With no sink installed a
task costs one tuple lookup per update.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class ProgressEvent:
    """One state of a task. ``done`` never decreases within a task; the last event has ``finished``."""

    task_id: int
    name: str
    done: int
    total: int | None
    unit: str
    started: float  # time.monotonic() at the task's start: rates are done / (now - started)
    detail: str = ""  # what is being worked on now (a configuration, a stage)
    finished: bool = False


class ProgressSink(Protocol):
    def __call__(self, event: ProgressEvent) -> None: ...


_SINKS: ContextVar[tuple[ProgressSink, ...]] = ContextVar("finrag_progress_sinks", default=())
_NEXT_ID = iter(range(1, 1 << 62))


@contextlib.contextmanager
def reporting_to(sink: ProgressSink | None) -> Iterator[None]:
    """Send the progress of the work done inside the block to ``sink`` too (None: no change)."""
    if sink is None:
        yield
        return
    token = _SINKS.set((*_SINKS.get(), sink))
    try:
        yield
    finally:
        _SINKS.reset(token)


class Task:
    """A counted piece of work. Use as a context manager, or call :meth:`close` at the end."""

    def __init__(self, name: str, total: int | None = None, unit: str = "items"):
        self.id = next(_NEXT_ID)
        self.name, self.total, self.unit = name, total, unit
        self.done = 0
        self.detail = ""
        self.started = time.monotonic()
        self.closed = False
        self._emit()

    def advance(self, n: int = 1, detail: str | None = None) -> None:
        self.update(self.done + n, detail)

    def update(self, done: int, detail: str | None = None) -> None:
        """Set the count (a smaller count than before is ignored: counts are monotone)."""
        self.done = max(self.done, int(done))
        if detail is not None:
            self.detail = detail
        self._emit()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._emit()

    def __enter__(self) -> Task:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _emit(self) -> None:
        sinks = _SINKS.get()
        if not sinks:
            return
        event = ProgressEvent(self.id, self.name, self.done, self.total, self.unit, self.started,
                              self.detail, self.closed)
        for sink in sinks:
            sink(event)


def task(name: str, total: int | None = None, unit: str = "items") -> Task:
    """Open a task of ``total`` ``unit`` (None: unknown) under the current sinks."""
    return Task(name, total, unit)


def rate(event: ProgressEvent, now: float | None = None) -> float:
    """Items per second since the task started."""
    elapsed = (time.monotonic() if now is None else now) - event.started
    return event.done / elapsed if elapsed > 0 else 0.0


_RELAYED: dict[tuple[str, int], int] = {}


def relay(event: ProgressEvent, origin: str) -> None:
    """Send an event of a task that runs elsewhere (``origin``: a worker process) to the sinks of the current
    context, under a task id of this process (ids of different processes may collide)."""
    key = (origin, event.task_id)
    task_id = _RELAYED.get(key)
    if task_id is None:
        task_id = _RELAYED[key] = next(_NEXT_ID)
    if event.finished:
        _RELAYED.pop(key, None)
    local = dataclasses.replace(event, task_id=task_id)
    for sink in _SINKS.get():
        sink(local)
