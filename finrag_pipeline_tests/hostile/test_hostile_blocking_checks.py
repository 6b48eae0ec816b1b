"""A filing that registers and then fails a blocking data check (here pages_have_text: 2 of its 10 pages
carry no text, under the check's 90%) is quarantined with its reason. Later ingests of other files, through
the CLI and through the inbox sensor, neither re-run it nor fail because of it (issue 28; issue 10 asked
that a failed filing is not retried on every run)."""

from __future__ import annotations

import shutil

import pytest
from _hostile import PDF_EXCERPT, make_hostile_files

from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]   # embeds and indexes the good filing

BAD_ID = "READABLE-TEXT-CORP-2024-10K"


def _bad_filing(path):
    """A real-looking 10-K of a registrant the company map does not know, 2 of whose 10 pages are blank
    (registration accepts up to half textless pages; pages_have_text wants 90% with text)."""
    cover = ("FORM 10-K\nANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934\n"
             "For the fiscal year ended December 31, 2024\nCommission File Number 001-99999\nReadable Text Corp\n"
             "(Exact name of Registrant as specified in its charter)\nDelaware 12-3456789")
    body = "\n".join(f"Readable Text Corp sells readable text to readers, line {i}." for i in range(30))
    make_hostile_files.text_pdf(path, [cover, *[body] * 7, "", ""])


def _failures(wh):
    return wh.query_df("SELECT filing_id, status, stage, message FROM core.ingest_failures").to_dict("records")


def test_cli_a_filing_failing_a_blocking_check_is_quarantined_and_later_ingests_pass(sandbox):
    from click.testing import CliRunner

    from finrag_pipeline.cli import main
    from finrag_pipeline.core.catalog import active_filings

    _bad_filing(sandbox.src / "readable.pdf")
    shutil.copy(PDF_EXCERPT, sandbox.src / "apple.pdf")
    home = str(sandbox.home)
    first = CliRunner().invoke(main, ["--home", home, "ingest", str(sandbox.src / "readable.pdf"), "--no-eval"])
    assert first.exit_code == 1, first.output          # its own ingest failed: said so
    assert "CHECK FAILED pages.pages_have_text [READABLE-TEXT-CORP-2024-10K]" in first.output
    paths = FinragPaths.from_env(home).ensure()
    wh = Warehouse(paths.warehouse)
    reason = (paths.quarantine / f"{BAD_ID}.reason.txt").read_text()
    assert "status: check_failed" in reason and "blocking check pages_have_text failed" in reason
    assert [(f["filing_id"], f["status"], f["stage"]) for f in _failures(wh)] == [
        (BAD_ID, "check_failed", "check:pages_have_text")]
    assert active_filings(wh) == []

    second = CliRunner().invoke(main, ["--home", home, "ingest", str(sandbox.src / "apple.pdf"), "--no-eval"])
    assert second.exit_code == 0, second.output
    assert BAD_ID not in second.output.split("Filings")[0]   # not re-run, not reported as failed
    assert active_filings(wh) == ["AAPL-2022-10K"]
    third = CliRunner().invoke(main, ["--home", home, "ingest", str(sandbox.src / "readable.pdf"), "--no-eval"])
    assert third.exit_code == 0 and "check_failed" in third.output and "not retried" in third.output


def test_inbox_a_filing_failing_a_blocking_check_is_not_requested_again(sandbox):
    import dagster as dg

    from finrag_pipeline.definitions import defs
    from finrag_pipeline_tests._dagster_driver import execute_sensor_result, tick_inbox_sensor

    paths = FinragPaths.from_env(str(sandbox.home)).ensure()
    wh = Warehouse(paths.warehouse)
    instance = dg.DagsterInstance.ephemeral()
    _bad_filing(paths.inbox / "readable.pdf")
    tick = tick_inbox_sensor(instance)
    assert [r.partition_key for r in tick.run_requests] == [BAD_ID]
    runs = execute_sensor_result(defs, instance, tick)
    assert [r.success for r in runs] == [False]
    assert [(f["filing_id"], f["status"]) for f in _failures(wh)] == [(BAD_ID, "check_failed")]

    shutil.copy(PDF_EXCERPT, paths.inbox / "apple.pdf")
    tick = tick_inbox_sensor(instance, tick.cursor)
    assert [r.partition_key for r in tick.run_requests] == ["AAPL-2022-10K"]   # no repair run of the bad one
    assert [r.success for r in execute_sensor_result(defs, instance, tick)] == [True]
    again = tick_inbox_sensor(instance, tick.cursor)
    assert again.run_requests == [] or [r.partition_key for r in again.run_requests] == []
