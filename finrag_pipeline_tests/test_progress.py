"""Progress of long work: core tasks report monotone counts ending at their total; the CLI draws bars only on a
terminal; the Dagster layer turns the same events into a few log lines."""

from __future__ import annotations

import io
import re
from collections import defaultdict

import pytest

from finrag_pipeline.cli_progress import terminal_progress
from finrag_pipeline.core.progress import ProgressEvent, reporting_to, task
from finrag_pipeline.defs.progress import LogProgress, format_event


class Recorder:
    def __init__(self):
        self.events: list[ProgressEvent] = []

    def __call__(self, event: ProgressEvent) -> None:
        self.events.append(event)

    def by_name(self) -> dict[str, list[ProgressEvent]]:
        out = defaultdict(list)
        for e in self.events:
            out[e.name].append(e)
        return out


def assert_monotone_to_total(events: list[ProgressEvent]) -> None:
    counts = [e.done for e in events]
    assert counts == sorted(counts), counts
    assert events[-1].finished and sum(e.finished for e in events) == 1
    assert events[0].done == 0
    if events[-1].total is not None:
        assert counts[-1] == events[-1].total and max(counts) <= events[-1].total


def test_task_counts_are_monotone_and_reach_the_sinks_in_context_only():
    rec = Recorder()
    with task("outside", 3):
        pass  # no sink: nothing recorded, nothing raised
    with reporting_to(rec), task("work", 3, "items") as work:
        work.advance(2, "first two")
        work.update(1)  # a smaller count is ignored: counts never go back
        work.advance(1)
    assert [(e.done, e.detail, e.finished) for e in rec.events] == [
        (0, "", False), (2, "first two", False), (2, "first two", False), (3, "first two", False),
        (3, "first two", True)]
    assert {e.name for e in rec.events} == {"work"}


@pytest.mark.slow
def test_parse_and_embed_of_a_real_filing_report_progress(tmp_path):
    """NVIDIA FY2025 10-K (data/sample_filings): parse steps, then 260 real leaf chunks embedded by MiniLM
    into an empty cache (slices of PROGRESS_BATCH = 256), then the same texts again from the cache."""
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.indexing.embedder import load_embedder_config
    from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache
    from finrag_pipeline.core.indexing.lance_index import PROGRESS_BATCH, LanceIndex
    from finrag_pipeline.core.ingest.parse import parse_filing
    from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR

    rec = Recorder()
    with reporting_to(rec):
        parsed = parse_filing(SAMPLE_FILINGS_DIR / "nvda-10-k-2025-02-26.html")
    parse_events = rec.by_name()["parse nvda-10-k-2025-02-26.html"]
    assert_monotone_to_total(parse_events)
    steps = [k for k in parsed.timings if k != "total"]
    assert parse_events[-1].done == len(steps) and {e.detail for e in parse_events} >= set(steps)

    leaves = [c for c in chunk_filing(parsed.meta, parsed.pages, parsed.table_rows) if c.is_leaf][:260]
    embedder = load_embedder_config().build()
    cache = EmbeddingCache(tmp_path / "cache.sqlite")  # empty: every text is encoded the first time
    index = LanceIndex(tmp_path / "lance", embedder, cache=cache, exact_scan_max_rows=0)
    rec = Recorder()
    with reporting_to(rec):
        assert index.upsert_filing(parsed.meta.filing_id, leaves) == 260
    events = rec.by_name()["embed NVDA-2025-10K"]
    assert_monotone_to_total(events)
    unique = len({c.text for c in leaves})
    encoding = [e.done for e in events if e.detail == "encoding"]
    assert index.last_encoded == unique and encoding[0] == 260 - unique + min(PROGRESS_BATCH, unique)
    assert encoding[-1] == 260 and events[-1].unit == "chunks" and events[-1].total == 260

    rec = Recorder()
    with reporting_to(rec):  # again: every vector from the cache
        index.upsert_filing(parsed.meta.filing_id, leaves)
    events = rec.by_name()["embed NVDA-2025-10K"]
    assert_monotone_to_total(events)
    assert index.last_encoded == 0 and not [e for e in events if e.detail == "encoding"]


def test_retrieval_and_answer_evaluation_report_per_configuration():
    from test_eval_runner import ITEMS, MATRIX, F, factory

    from finrag_pipeline.core.evaluation.runner import run_answer_eval, run_retrieval_eval

    rec = Recorder()
    matrix = MATRIX.narrow(retrievers=["overlap", "broken"], scopes=["filing", "corpus"])
    with reporting_to(rec):
        run_retrieval_eval(ITEMS, factory, matrix, None, F, "v1")
    events = rec.by_name()[f"evaluate retrieval {F}"]
    assert_monotone_to_total(events)
    assert events[-1].total == 2 * 2 * len(ITEMS) and events[-1].unit == "searches"
    assert {e.detail for e in events} >= {"overlap filing", "overlap corpus", "broken filing", "broken corpus"}

    rec = Recorder()
    answers = MATRIX.narrow(models=["extractive"], retriever="overlap", k=3)
    with reporting_to(rec):
        _runs, rows = run_answer_eval(ITEMS, factory, answers, F, "v1")
    events = rec.by_name()[f"evaluate answers {F}"]
    assert_monotone_to_total(events)
    assert events[-1].total == len(rows) and len({e.detail for e in events if e.detail}) >= 2


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


CONTROL = re.compile(r"\x1b|\r")


def _run_tasks():
    with task("embed TEST-2024-10K", 50, "chunks") as work:
        for _ in range(50):
            work.advance(1, "encoding")


def test_terminal_bars_only_on_a_terminal():
    piped = io.StringIO()
    lines = []
    with terminal_progress(stream=piped, echo=lines.append) as echo:
        echo("[1/1] ingest TEST-2024-10K")
        _run_tasks()
    assert piped.getvalue() == "" and lines == ["[1/1] ingest TEST-2024-10K"]  # no bar, no control characters

    tty = FakeTerminal()
    with terminal_progress(stream=tty) as echo:
        echo("[1/1] ingest TEST-2024-10K")
        _run_tasks()
    drawn = tty.getvalue()
    assert "[1/1] ingest TEST-2024-10K" in drawn and "embed TEST-2024-10K" in drawn and CONTROL.search(drawn)

    with terminal_progress(stream=FakeTerminal(), echo=lines.append, enabled=False) as echo:
        assert echo == lines.append  # --json: never bars


def test_dagster_log_lines_are_throttled_and_end_with_the_total():
    lines: list[str] = []

    class Log:
        def info(self, message):
            lines.append(message)

    with reporting_to(LogProgress(Log(), every_seconds=3600, every_fraction=0.25)):
        _run_tasks()
    counts = [int(re.search(r": (?:done, )?(\d+)/50", line).group(1)) for line in lines]
    assert counts == [0, 12, 24, 36, 48, 50] and lines[-1].startswith("embed TEST-2024-10K: done, 50/50 chunks (100%)")
    assert "chunks/s" in lines[-1]
    event = ProgressEvent(1, "evaluate filings", 3, None, "filings", 0.0, "AAPL-2022-10K")
    assert format_event(event, now=1.5) == "evaluate filings: 3 filings, 2.0 filings/s, AAPL-2022-10K"


def test_progress_lands_in_the_dagster_step_log():
    import dagster as dg

    from finrag_pipeline.defs.progress import logged_progress

    @dg.asset
    def counted(context) -> None:  # (no annotation: this module has postponed annotations)
        with logged_progress(context, every_seconds=3600, every_fraction=0.5):
            _run_tasks()

    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([counted], instance=instance)
    assert result.success
    messages = [r.user_message for r in instance.all_logs(result.run_id) if "embed TEST-2024-10K" in r.user_message]
    assert [int(re.search(r": (?:done, )?(\d+)/50", m).group(1)) for m in messages] == [0, 25, 50, 50]
    assert messages[-1].startswith("embed TEST-2024-10K: done, 50/50 chunks (100%)")
