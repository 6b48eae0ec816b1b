"""Step-level progress in Dagster: core progress events as ``context.log`` lines.

A long core task (embedding a filing's chunks, evaluating a filing's matrix) logs when it starts, then at
most once per ``every_seconds`` or each ``every_fraction`` of its total, and when it ends, with its rate:
``embed NVDA-2025-10K: 512/841 chunks (61%), 21.3 chunks/s, encoding``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

from finrag_pipeline.core.progress import ProgressEvent, rate, reporting_to


class LogProgress:
    """A core ProgressSink writing to a Dagster logger (``context.log``)."""

    def __init__(self, log: Any, every_seconds: float = 10.0, every_fraction: float = 0.1):
        self.log = log
        self.every_seconds = every_seconds
        self.every_fraction = every_fraction
        self._last: dict[int, tuple[float, int]] = {}  # task -> (time, count) of its last line

    def __call__(self, event: ProgressEvent) -> None:
        now = time.monotonic()
        last = self._last.get(event.task_id)
        if last is not None and not event.finished:
            step = max(1, int((event.total or 0) * self.every_fraction)) if event.total else None
            due = now - last[0] >= self.every_seconds or (step is not None and event.done - last[1] >= step)
            if not due:
                return
        self._last[event.task_id] = (now, event.done)
        if event.finished:
            self._last.pop(event.task_id, None)
        self.log.info(format_event(event, now))


def format_event(event: ProgressEvent, now: float | None = None) -> str:
    share = f" ({100 * event.done / event.total:.0f}%)" if event.total else ""
    total = f"/{event.total}" if event.total is not None else ""
    state = "done, " if event.finished else ""
    detail = f", {event.detail}" if event.detail and not event.finished else ""
    return (f"{event.name}: {state}{event.done}{total} {event.unit}{share}, "
            f"{rate(event, now):.1f} {event.unit}/s{detail}")


@contextlib.contextmanager
def logged_progress(context: Any, **kwargs: Any) -> Iterator[None]:
    """Log the core progress of the block's work to the asset's Dagster log."""
    with reporting_to(LogProgress(context.log, **kwargs)):
        yield
