"""The inbox sensor on hostile files, against a real (ephemeral) Dagster instance: every entry gets one
status with its reason and remedy, symlinks are never followed, odd names are quarantined (never silently
skipped), only valid filing ids become partitions, and nothing is written outside FINRAG_HOME."""

from __future__ import annotations

import shutil

import pytest
from _hostile import PDF_EXCERPT, copy_inputs, hold_lock

from finrag_pipeline.core.ingest.errors import STATUS_REMEDIES
from finrag_pipeline.core.ingest.registry import validate_filing_id
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse

pytestmark = pytest.mark.integration


def _tick_until_empty(instance, paths, cursor=None):
    from _dagster_driver import tick_inbox_sensor

    from finrag_pipeline.core.inbox import pending_files

    events, requests, partitions = [], [], []
    for _ in range(6):
        result = tick_inbox_sensor(instance, cursor)
        cursor = result.cursor
        events += result.asset_events or []
        requests += result.run_requests or []
        partitions += [k for r in result.dynamic_partitions_requests or [] for k in r.partition_keys]
        if not pending_files(paths.inbox):
            break
    return {e.metadata["file"].value: e.metadata["status"].value for e in events}, requests, partitions, cursor


def test_the_inbox_sensor_gives_every_hostile_entry_its_status(sandbox, hostile_files):
    import dagster as dg

    paths = FinragPaths.from_env(str(sandbox.home)).ensure()
    wh = Warehouse(paths.warehouse)
    copy_inputs(hostile_files, paths.inbox)
    real = sandbox.src / "apple.pdf"           # a real filing outside the inbox, reached by a symlink
    shutil.copy(PDF_EXCERPT, real)
    (paths.inbox / "link.pdf").symlink_to(real)
    (paths.inbox / "escape-dir.pdf").symlink_to(sandbox.outside, target_is_directory=True)
    shutil.copy(PDF_EXCERPT, paths.inbox / "..htm")
    sandbox.freeze()
    instance = dg.DagsterInstance.ephemeral()

    statuses, requests, partitions, cursor = _tick_until_empty(instance, paths)
    expected = {n: s for n, s in hostile_files[1].items() if s != "registered"}
    expected |= {"link.pdf": "unsafe_path", "escape-dir.pdf": "unsafe_path", "..htm": "unsafe_path"}
    assert statuses == expected
    # only the filing whose ticker fell back to its company name became a partition
    assert [r.partition_key for r in requests] == partitions == ["APPLE-INC-2025-10K"]
    assert all(validate_filing_id(k) for k in partitions)
    assert not any(paths.inbox.iterdir())                     # nothing left behind, nothing skipped
    # links were moved as links (never read, never followed); their targets are untouched
    assert (paths.quarantine / "link.pdf").is_symlink() and real.read_bytes() == PDF_EXCERPT.read_bytes()
    assert (paths.quarantine / "escape-dir.pdf").is_symlink()
    assert (paths.quarantine / "dot-htm").exists()            # "..htm" under a plain name
    for name, status in expected.items():
        stored = "dot-htm" if name == "..htm" else name
        reason = (paths.quarantine / f"{stored}.reason.txt").read_text()
        assert f"status: {status}\n" in reason and f"remedy: {STATUS_REMEDIES[status]}\n" in reason
    assert (paths.quarantine / "escape.htm.yaml").exists()    # the sidecar went with its file
    log = wh.query_df("SELECT original_name, status FROM core.ingest_log")
    assert dict(zip(log["original_name"], log["status"], strict=True)) == expected | {"ticker_dashes.htm": "registered"}
    sandbox.assert_nothing_outside()

    # The same files again (a re-upload): statuses are remembered, nothing is parsed twice.
    files = [n for n in expected if n in hostile_files[1]]
    copy_inputs(hostile_files, paths.inbox, files)
    again, requests, _, _ = _tick_until_empty(instance, paths, cursor)
    assert again == {n: expected[n] for n in files}
    assert requests == []
    repeated = wh.query_df("SELECT message FROM core.ingest_log WHERE stage = 'register' "
                           "AND original_name = 'scanned.pdf' ORDER BY logged_at")["message"].tolist()
    assert len(repeated) == 2 and "not retried" in repeated[1]
    sandbox.assert_nothing_outside()


def test_a_held_warehouse_makes_the_sensor_wait_not_fail(sandbox, hostile_files, monkeypatch):
    import dagster as dg
    from _dagster_driver import tick_inbox_sensor

    paths = FinragPaths.from_env(str(sandbox.home)).ensure()
    wh = Warehouse(paths.warehouse)
    wh.execute("SELECT 1")
    copy_inputs(hostile_files, paths.inbox, ["scanned.pdf"])
    monkeypatch.setenv("FINRAG_LOCK_WAIT_SECONDS", "1")
    instance = dg.DagsterInstance.ephemeral()
    reader = hold_lock(paths.warehouse, "ro")
    try:
        blocked = tick_inbox_sensor(instance)
    finally:
        reader.kill()
        reader.wait()
    assert blocked.run_requests == [] and not blocked.asset_events
    assert f"locked by PID {reader.pid}" in blocked.skip_reason.skip_message
    assert (paths.inbox / "scanned.pdf").exists()                       # still waiting, not lost
    after = tick_inbox_sensor(instance, blocked.cursor)
    assert [e.metadata["status"].value for e in after.asset_events] == ["needs_ocr"]
