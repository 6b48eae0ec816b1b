"""Terminal progress bars for the CLI: a :class:`~finrag_pipeline.core.progress.ProgressSink` rendered with rich.

One bar per open core task (embedding a filing, evaluating a filing's matrix, ...) plus the command's own
steps (filings ingested, filings evaluated, marts). Bars are drawn only when stdout is a terminal; piped or
redirected output gets the plain lines alone, without cursor movement or colour codes.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any

from finrag_pipeline.core.progress import ProgressEvent, reporting_to


class TerminalBars:
    """Renders core progress events as rich bars on ``stream``; ``echo`` prints a line above them."""

    def __init__(self, stream: IO[str]):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        # The console keeps the stream it was given: the pipeline redirects sys.stdout to log files while
        # a job runs, and the bars must not follow it there.
        self.console = Console(file=stream)
        self.progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[unit]} {task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
            TextColumn("{task.fields[detail]}"), console=self.console, transient=True,
            redirect_stdout=False, redirect_stderr=False)
        self._ids: dict[int, Any] = {}

    def __call__(self, event: ProgressEvent) -> None:
        from finrag_pipeline.core.progress import rate

        fields = {"unit": event.unit, "detail": event.detail, "rate": f"{rate(event):.1f}/s"}
        bar = self._ids.get(event.task_id)
        if bar is None:
            if event.finished:
                return
            bar = self._ids[event.task_id] = self.progress.add_task(event.name, total=event.total, **fields)
        self.progress.update(bar, completed=event.done, total=event.total, **fields)
        if event.finished:
            self.progress.remove_task(bar)  # the command's own lines say what was done
            del self._ids[event.task_id]

    def echo(self, message: str) -> None:
        self.console.print(message, markup=False, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def terminal_progress(stream: IO[str] | None = None, echo: Callable[[str], None] | None = None,
                      enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """Within the block, core progress shows as bars when ``stream`` (default stdout) is a terminal
    (and ``enabled``: off for --json). Yields the function to print a line with (above the bars;
    ``echo`` or click.echo otherwise)."""
    import click

    stream = stream or sys.stdout
    plain = echo or click.echo
    if not enabled or not (hasattr(stream, "isatty") and stream.isatty()):
        yield plain
        return
    bars = TerminalBars(stream)
    with bars.progress, reporting_to(bars):
        yield bars.echo
