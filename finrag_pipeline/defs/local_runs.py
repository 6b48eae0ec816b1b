"""Run the asset graph in this process against a Dagster instance: what `finrag demo`, `finrag ingest`
and the end-to-end tests do. Every run is recorded in the instance, so `make ui` shows it."""

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from finrag_pipeline.core.catalog import Registration, active_filings, register_file
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse
from finrag_pipeline.defs.partitions import FILINGS_PARTITIONS_NAME

SUPPORTED_SUFFIXES = (".pdf", ".htm", ".html", ".xhtml")


@dataclass
class PipelineReport:
    registrations: list[Registration] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)          # filing id -> error
    seconds: dict[str, float] = field(default_factory=dict)       # stage -> seconds
    checks: list[tuple[str, str, str | None, bool]] = field(default_factory=list)  # asset, check, partition, passed

    @property
    def failed_checks(self) -> list[tuple[str, str, str | None, bool]]:
        return [c for c in self.checks if not c[3]]


def get_instance(paths: FinragPaths) -> dg.DagsterInstance:
    """The persistent instance under FINRAG_HOME/dagster_home (the one `make ui` opens)."""
    paths.dagster_home.mkdir(parents=True, exist_ok=True)
    return dg.DagsterInstance.from_config(str(paths.dagster_home))


def collect_files(inputs: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            files += sorted(p for p in item.iterdir() if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES)
        else:
            files.append(item)
    return files


def _execute(defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, report: PipelineReport,
             partition_key: str | None = None) -> dg.ExecuteInProcessResult:
    job = defs.resolve_job_def(job_name)
    result = job.execute_in_process(instance=instance, partition_key=partition_key, raise_on_error=False)
    for ev in result.get_asset_check_evaluations():
        report.checks.append((ev.asset_key.to_user_string(), ev.check_name, partition_key, ev.passed))
    return result


def run_pipeline(files: Iterable[str | Path], paths: FinragPaths, instance: dg.DagsterInstance,
                 defs: dg.Definitions, *, evaluate: bool = True, build_marts: bool = True,
                 progress: Callable[[str], None] = print) -> PipelineReport:
    """Register ``files``, ingest every new or changed filing, refresh the corpus, evaluate, build marts."""
    report = PipelineReport()
    wh = Warehouse(paths.warehouse)
    t0 = time.perf_counter()
    for path in collect_files(files):
        reg = register_file(path, paths, wh)
        report.registrations.append(reg)
        progress(f"  {path.name}: {reg.status}" + (f" -> {reg.filing_id}" if reg.filing_id else "")
                 + ("" if reg.ok or reg.status == "duplicate" else f" ({reg.message})"))
    report.seconds["register"] = time.perf_counter() - t0

    known = set(instance.get_dynamic_partitions(FILINGS_PARTITIONS_NAME))
    active = active_filings(wh)
    instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, [f for f in active if f not in known])
    changed = {r.filing_id for r in report.registrations if r.ok}
    to_ingest = [f for f in active if f in changed or not _materialized(instance, "qa_set", f)]

    t0 = time.perf_counter()
    for i, fid in enumerate(to_ingest, 1):
        progress(f"[{i}/{len(to_ingest)}] ingest {fid}: parse, chunk, index, QA")
        result = _execute(defs, "ingest_filing", instance, report, fid)
        if not result.success:
            report.failed[fid] = _first_error(result)
            progress(f"  failed: {report.failed[fid]}")
    report.seconds["ingest"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    _execute(defs, "refresh_corpus_state", instance, report)
    report.seconds["corpus_state"] = time.perf_counter() - t0
    if evaluate:
        t0 = time.perf_counter()
        ready = [f for f in active_filings(wh) if f not in report.failed]
        for i, fid in enumerate(ready, 1):
            progress(f"[{i}/{len(ready)}] evaluate {fid}")
            result = _execute(defs, "evaluate_filing", instance, report, fid)
            if not result.success:
                report.failed[fid] = _first_error(result)
        report.seconds["evaluate"] = time.perf_counter() - t0
    if build_marts:
        t0 = time.perf_counter()
        progress("building dbt marts, the analysts' snapshot and the report")
        result = _execute(defs, "build_marts", instance, report)
        if not result.success:
            report.failed["marts"] = _first_error(result)
        report.seconds["marts"] = time.perf_counter() - t0
    return report


def _materialized(instance: dg.DagsterInstance, asset: str, partition: str) -> bool:
    return bool(instance.get_materialized_partitions(dg.AssetKey(asset)) & {partition})


def _first_error(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_failure and event.step_failure_data and event.step_failure_data.error:
            return f"{event.step_key}: {event.step_failure_data.error.message.strip()[:300]}"
    return "run failed"
