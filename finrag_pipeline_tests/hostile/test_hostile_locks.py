"""Locks: an analyst holding warehouse.duckdb (even read-only) never gets a 40-line traceback out of a
writer; the writer says in one line who holds the lock and how long it waited. `finrag sql --live`
reads a private copy, so it never holds the live file at all."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from _hostile import hold_lock

from finrag_pipeline.core.warehouse import Warehouse, WarehouseBusy, live_copy


@pytest.fixture
def warehouse(tmp_path):
    wh = Warehouse(tmp_path / "warehouse.duckdb")
    wh.replace_rows("core.filings", [{"filing_id": "AAPL-2022-10K", "content_sha256": "ab"}],
                    where={"filing_id": "AAPL-2022-10K"})
    return wh


def test_a_blocked_writer_says_who_holds_the_lock_and_how_long_it_waited(warehouse):
    holder = hold_lock(warehouse.path, "ro")
    try:
        t0 = time.monotonic()
        with pytest.raises(WarehouseBusy) as exc:
            Warehouse(warehouse.path, retry_seconds=1.5).execute("DELETE FROM core.filings")
        waited = time.monotonic() - t0
    finally:
        holder.kill()
        holder.wait()
    message = str(exc.value)
    assert "\n" not in message and "\x00" not in message and len(message) < 400
    assert f"PID {holder.pid}" in message and "python" in message and "waiting" in message
    assert 1.5 <= waited < 10
    assert exc.value.__cause__ is None and exc.value.__suppress_context__  # no chained duckdb traceback
    # once the holder is gone the same write goes through
    warehouse.execute("DELETE FROM core.filings")


def test_live_reads_use_a_copy_and_never_block_a_writer(warehouse):
    writer = hold_lock(warehouse.path, "rw")   # another process is writing: the live file is locked
    try:
        with live_copy(warehouse.path, warehouse.path.parent / "scratch") as con:
            assert con.execute("SELECT filing_id FROM core.filings").fetchall() == [("AAPL-2022-10K",)]
    finally:
        writer.kill()
        writer.wait()
    with live_copy(warehouse.path, warehouse.path.parent / "scratch") as con:   # while a reader holds the copy,
        warehouse.execute("DELETE FROM core.filings")                           # the live file is writable
        assert con.execute("SELECT count(*) FROM core.filings").fetchone() == (1,)
    assert not any((warehouse.path.parent / "scratch").iterdir())               # the copy is gone


def test_sql_live_cli_reads_while_a_writer_holds_the_warehouse(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from finrag_pipeline.cli import main

    home = tmp_path / "home"
    monkeypatch.setenv("FINRAG_HOME", str(home))
    wh = Warehouse(home / "warehouse.duckdb")
    wh.replace_rows("core.filings", [{"filing_id": "AAPL-2022-10K", "content_sha256": "ab"}],
                    where={"filing_id": "AAPL-2022-10K"})
    writer = hold_lock(wh.path, "rw")
    try:
        result = CliRunner().invoke(main, ["sql", "--live", "--json", "SELECT filing_id FROM core.filings"])
    finally:
        writer.kill()
        writer.wait()
    assert result.exit_code == 0, result.output
    assert '"filing_id": "AAPL-2022-10K"' in result.output


def test_cli_refuses_a_filing_id_outside_the_pattern(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from finrag_pipeline.cli import main

    monkeypatch.setenv("FINRAG_HOME", str(tmp_path / "home"))
    for args in (["remove", "../../etc/x"], ["qa", "export", "..", "--out", str(tmp_path / "x.csv")],
                 ["search", "net sales", "--filing", "a/b"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and "is not a valid filing id" in result.output, args
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.slow  # a real `finrag ingest` process: ~20-40 s of imports
def test_cli_ingest_blocked_by_a_reader_says_so_in_one_line(tmp_path):
    import os
    import shutil

    from _hostile import PDF_EXCERPT

    from finrag_pipeline.core.paths import REPO_ROOT

    home = tmp_path / "home"
    wh = Warehouse(home / "warehouse.duckdb")
    wh.execute("SELECT 1")
    shutil.copy(PDF_EXCERPT, tmp_path / "apple.pdf")
    env = dict(os.environ, FINRAG_HOME=str(home), FINRAG_LOCK_WAIT_SECONDS="2",
               PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    reader = hold_lock(wh.path, "ro")          # an analyst's session on the live file
    try:
        proc = subprocess.run([sys.executable, "-m", "finrag_pipeline.cli", "ingest", "--no-eval",
                               str(tmp_path / "apple.pdf")], env=env, capture_output=True, text=True, timeout=600)
    finally:
        reader.kill()
        reader.wait()
    assert proc.returncode == 75, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("finrag: warehouse.duckdb is locked by PID ") and f"PID {reader.pid}" in last
    assert "gave up after waiting 2." in last
