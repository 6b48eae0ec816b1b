"""`finrag ingest` (run_pipeline, what the CLI runs) on a folder of hostile files plus one good filing:
the bad files get their statuses and never stop the good one, which ends complete (index counts equal
its leaf chunks); a second run re-parses nothing and re-ingests nothing."""

from __future__ import annotations

import shutil

import pytest
from conftest import PDF_EXCERPT, assert_no_duplicate_rows, copy_inputs

from finrag_pipeline.core.completion import check_filings
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_cli_ingest_survives_every_hostile_file_and_repeats_nothing(sandbox, hostile_files):
    import dagster as dg

    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import run_pipeline

    bad = [n for n, s in hostile_files[1].items() if s != "registered"]   # the poison pill no_name.htm among them
    copy_inputs(hostile_files, sandbox.src, bad)
    shutil.copy(PDF_EXCERPT, sandbox.src / "zz_apple.pdf")                  # the good filing comes last
    sandbox.freeze()
    paths = FinragPaths.from_env(str(sandbox.home)).ensure()
    wh = Warehouse(paths.warehouse)
    instance = dg.DagsterInstance.ephemeral()

    report = run_pipeline([sandbox.src], paths, instance, defs, evaluate=False, build_marts=False,
                          progress=lambda _m: None)
    statuses = {r.original_name: r.status for r in report.registrations}
    assert statuses == {n: hostile_files[1][n] for n in bad} | {"zz_apple.pdf": "registered"}
    assert report.failed == {}
    done = check_filings(wh, paths.tantivy_dir, paths.lancedb_dir, ["AAPL-2022-10K"])["AAPL-2022-10K"]
    assert done.complete and done.leaf_chunks > 0
    assert done.tantivy_docs == done.lance_rows == done.leaf_chunks and done.pages == done.expected_pages == 4
    assert_no_duplicate_rows(wh)
    sandbox.assert_nothing_outside()

    runs_before = len(instance.get_runs())
    again = run_pipeline([sandbox.src], paths, instance, defs, evaluate=False, build_marts=False,
                         progress=lambda _m: None)
    assert {r.original_name: r.status for r in again.registrations} == statuses | {"zz_apple.pdf": "duplicate"}
    assert not any(r.retried for r in again.registrations if r.status not in ("duplicate", "registered"))
    ingest_runs = [r for r in instance.get_runs()[: len(instance.get_runs()) - runs_before]
                   if r.job_name == "ingest_filing"]
    assert ingest_runs == [] and again.failed == {}
    assert_no_duplicate_rows(wh)
    sandbox.assert_nothing_outside()
