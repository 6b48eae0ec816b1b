"""`finrag ingest` (run_pipeline, what the CLI runs) on a folder of hostile files plus one good filing:
the bad files get their statuses and never stop the good one, which ends complete (index counts equal
its leaf chunks); a second run re-parses nothing and re-ingests nothing."""

from __future__ import annotations

import shutil

import pytest
from _hostile import PDF_EXCERPT, assert_no_duplicate_rows, copy_inputs

from finrag_pipeline.core.completion import check_filings
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.storage.seam import LocalStorage
from finrag_pipeline.core.warehouse import Warehouse

pytestmark = pytest.mark.integration


@pytest.mark.slow  # embeds and indexes the good filing
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
    done = check_filings(wh, LocalStorage(paths), ["AAPL-2022-10K"])["AAPL-2022-10K"]
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


@pytest.mark.slow  # ~10 s, but the first Dagster run of a session pays ~50 s of imports
def test_a_filing_rejected_after_registration_is_quarantined_and_not_retried(sandbox, monkeypatch, tmp_path):
    """A filing that registers but fails a later stage (here: more leaf chunks than limits.max_leaf_chunks)
    is quarantined with its remedy, taken out of the active catalog, and not re-run by the next ingest."""
    import dagster as dg
    import yaml

    from finrag_pipeline.core.catalog import active_filings
    from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR
    from finrag_pipeline.definitions import defs
    from finrag_pipeline.defs.local_runs import run_pipeline

    config = tmp_path / "config"
    shutil.copytree(ASSETS_CONFIG_DIR, config)
    data = yaml.safe_load((config / "ingest.yaml").read_text())
    data["limits"]["max_leaf_chunks"] = 5
    (config / "ingest.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("FINRAG_CONFIG_DIR", str(config))
    shutil.copy(PDF_EXCERPT, sandbox.src / "apple.pdf")
    sandbox.freeze()
    paths = FinragPaths.from_env(str(sandbox.home)).ensure()
    wh = Warehouse(paths.warehouse)
    instance = dg.DagsterInstance.ephemeral()

    first = run_pipeline([sandbox.src], paths, instance, defs, evaluate=False, build_marts=False,
                         progress=lambda _m: None)
    assert [r.status for r in first.registrations] == ["registered"]
    assert "[too_large]" in first.failed["AAPL-2022-10K"] and "over limits.max_leaf_chunks 5" in first.failed["AAPL-2022-10K"]
    reason = (paths.quarantine / "AAPL-2022-10K.reason.txt").read_text()
    assert "status: too_large" in reason and "remedy: raise the limit" in reason
    assert active_filings(wh) == []                                    # never counted as ingested
    assert any(p.suffix == ".pdf" for p in paths.filings_store.iterdir())        # bytes kept for a retry

    second = run_pipeline([sandbox.src], paths, instance, defs, evaluate=False, build_marts=False,
                          progress=lambda _m: None)
    reg = second.registrations[0]
    assert (reg.status, reg.retried) == ("too_large", False) and second.failed == {}
    assert len([r for r in instance.get_runs() if r.job_name == "ingest_filing"]) == 1
    sandbox.assert_nothing_outside()
