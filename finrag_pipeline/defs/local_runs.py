"""Run the asset graph in this process against a Dagster instance: what `finrag demo`, `finrag ingest`
and the end-to-end tests do. Every run is recorded in the instance, so `make ui` shows it.

Each run is a run of one of the code location's jobs, created with the same remote origin the webserver
gives a run it launches (repository ``__repository__`` in location ``finrag_pipeline`` of workspace.yaml):
the UI's job pages list runs by the ``.dagster/repository`` tag that origin adds, and the Overview
timeline places runs by it. A run without it (plain ``execute_in_process``) is invisible there.
Every run is also tagged with what started it (``finrag/trigger``) and the filing (``finrag/filing``).
"""

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import dagster as dg

# Kept private import (1 of 3, docs/BENCHMARKS.md "Private Dagster APIs"): a run executed in this process gets
# the remote origin of the workspace.yaml code location, as a run launched from the UI has. Without it the
# run is missing from its job's page and the Overview timeline (which place runs by that origin) and the UI
# cannot re-execute it (dagster-io/dagster#17707, #19458). Dagster has no public way to give an in-process
# run an origin; the classes are serdes-stable (stored in every run). test_dagster_private_api.py fails when
# they or create_run_for_job's ``remote_job_origin`` parameter change.
from dagster._core.remote_origin import (
    LoadableTargetOrigin,
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)

from finrag_pipeline.core.catalog import Registration, active_filings, register_file
from finrag_pipeline.core.ingest_pipeline import ParseAhead, load_pipeline_config, use_worker
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.progress import task
from finrag_pipeline.core.warehouse import Warehouse
from finrag_pipeline.defs.executors import is_distributed_executor
from finrag_pipeline.defs.partitions import FILINGS_PARTITIONS_NAME, evaluated_variants
from finrag_pipeline.defs.run_health import PID_TAG, fail_dead_runs, incomplete_filings, process_token

# What executing a job returns: in this process (local mode), or through the job's executor (distributed)
RunResult = dg.ExecuteInProcessResult | dg.JobExecutionResult

SUPPORTED_SUFFIXES = (".pdf", ".htm", ".html", ".xhtml")
TRIGGER_TAG = "finrag/trigger"
FILING_TAG = "finrag/filing"
TRIGGERS = ("demo", "cli", "inbox", "automation", "schedule")
REPOSITORY_NAME = "__repository__"  # what dg.Definitions are called inside a code location
IMPLICIT_ASSET_JOB = "__ASSET_JOB"   # the job the automation daemon launches asset runs of


def run_tags(trigger: str, filing_id: str | None = None) -> dict[str, str]:
    """The tags every finrag run carries: what started it, and the filing (partition) when there is one."""
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown trigger {trigger!r}; one of {TRIGGERS}")
    return {TRIGGER_TAG: trigger, **({FILING_TAG: filing_id} if filing_id else {})}


def filing_of_partition(partition_key: str | None) -> str | None:
    """The filing of a partition key: the key itself, or the filing dimension of "chunking|filing"."""
    from finrag_pipeline.defs.partitions import FILING_DIMENSION, filing_x_chunking_partitions

    if partition_key and "|" in partition_key and filing_x_chunking_partitions is not None:
        return filing_x_chunking_partitions.get_partition_key_from_str(partition_key).keys_by_dimension[FILING_DIMENSION]
    return partition_key


@cache
def code_location() -> tuple[str, str]:
    """(location name, module) of the code location in workspace.yaml: the one `dagster dev` loads."""
    from finrag_pipeline.core.config import read_yaml
    from finrag_pipeline.core.paths import REPO_ROOT

    entry = read_yaml(REPO_ROOT / "workspace.yaml")["load_from"][0]["python_module"]
    if isinstance(entry, str):  # `python_module: pkg.mod`: the location is named after the module
        return entry, entry
    return entry.get("location_name") or entry["module_name"], entry["module_name"]


def remote_job_origin(job_name: str) -> RemoteJobOrigin:
    """The origin the webserver gives a run of ``job_name`` launched from the workspace.yaml location."""
    from finrag_pipeline.core.paths import REPO_ROOT

    location, module = code_location()
    origin = ManagedGrpcPythonEnvCodeLocationOrigin(
        loadable_target_origin=LoadableTargetOrigin(executable_path=sys.executable, module_name=module,
                                                    working_directory=str(REPO_ROOT)),
        location_name=location)
    return RemoteJobOrigin(repository_origin=RemoteRepositoryOrigin(origin, REPOSITORY_NAME), job_name=job_name)


def repository_label() -> str:
    """The value of the ``.dagster/repository`` tag on every run of the code location."""
    return f"{REPOSITORY_NAME}@{code_location()[0]}"


def code_location_job(job_name: str) -> dg.JobDefinition:
    """The job ``job_name`` of the code location's ``defs``: what another process (a Celery worker) rebuilds
    the job with, through :func:`reconstructable_job`."""
    import importlib

    return importlib.import_module(code_location()[1]).defs.resolve_job_def(job_name)


def reconstructable_job(job_name: str):
    """A pointer to ``job_name`` of the code location that another process (a Celery worker) can load
    (Dagster's public ``build_reconstructable_job``). Not for the implicit asset job: the public pointer
    wraps the job in a repository of its own, where that name is reserved; its runs are the daemon's."""
    from finrag_pipeline.core.paths import REPO_ROOT

    if job_name == IMPLICIT_ASSET_JOB:
        raise ValueError(f"{IMPLICIT_ASSET_JOB} runs are launched by the daemon; in distributed mode execute_job "
                         "needs recon_job for it")
    return dg.build_reconstructable_job(__name__, code_location_job.__name__, reconstructable_args=(job_name,),
                                        reconstructor_working_directory=str(REPO_ROOT))


def execute_job(defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, *, trigger: str,
                partition_key: str | None = None, asset_selection: Iterable[dg.AssetKey] | None = None,
                run_config: Mapping | None = None, tags: Mapping[str, str] | None = None,
                recon_job=None) -> RunResult:
    """Execute a job of the code location, recorded as a run of that job (with its remote origin, as if
    launched from the UI) and tagged with its trigger and filing. This process runs the job's executor:
    in local mode every step runs here; in distributed mode (the Celery executor) each step is sent to the
    workers, which load the job from ``recon_job`` (default :func:`reconstructable_job`), and this process
    waits for them."""
    job = (defs.resolve_implicit_global_asset_job_def() if job_name == IMPLICIT_ASSET_JOB
           else defs.resolve_job_def(job_name))
    all_tags = {**(tags or {}), **run_tags(trigger, filing_of_partition(partition_key))}
    if is_distributed_executor(job.executor_def):
        partition_tags = {"dagster/partition": partition_key} if partition_key else {}
        with runs_created_with_origin(instance, remote_job_origin(job.name)):
            return dg.execute_job(recon_job or reconstructable_job(job.name), instance, run_config=run_config,
                                  tags={**all_tags, **partition_tags},
                                  asset_selection=list(asset_selection) if asset_selection else None)
    with runs_created_with_origin(instance, remote_job_origin(job.name)):
        return job.execute_in_process(run_config=run_config, instance=instance, partition_key=partition_key,
                                      asset_selection=list(asset_selection) if asset_selection else None,
                                      tags=all_tags, raise_on_error=False)


@contextlib.contextmanager
def runs_created_with_origin(instance: dg.DagsterInstance, origin) -> Iterator[None]:
    """``execute_in_process`` and ``execute_job`` have no parameter for the remote origin: hand it to the run
    they create, through the instance's ``create_run_for_job`` (its ``remote_job_origin`` parameter), for
    this instance object and this call only. Why the origin matters: the import of the origin classes above."""
    create = instance.create_run_for_job

    def create_with_origin(*args, **kwargs):
        kwargs["remote_job_origin"] = kwargs.get("remote_job_origin") or origin
        return create(*args, **kwargs)

    instance.create_run_for_job = create_with_origin
    try:
        yield
    finally:
        del instance.create_run_for_job  # back to the class's method


QA_SET_ASSET = dg.AssetKey("qa_set")


def report_qa_sets_changed(instance: dg.DagsterInstance, filing_ids: Iterable[str], *, change: str,
                           trigger: str = "cli") -> list[str]:
    """Tell Dagster that these filings' QA sets changed outside a run (`finrag qa import`, `finrag qa
    review`): one runless materialization of each ``qa_set`` partition, so the automation conditions
    (EVALUATE_WHEN_INPUTS_CHANGE) see the update and re-evaluate those filings. Filings that are not
    partitions of the instance (never ingested through it) are skipped; returns the ones reported."""
    run_tags(trigger)  # refuses an unknown trigger
    reported = []
    for fid in sorted(set(filing_ids)):
        if not instance.has_dynamic_partition(FILINGS_PARTITIONS_NAME, fid):
            continue
        instance.report_runless_asset_event(dg.AssetMaterialization(
            asset_key=QA_SET_ASSET, partition=fid, description=f"QA set changed by {change}",
            metadata={"change": change, TRIGGER_TAG: trigger}))
        reported.append(fid)
    return reported


def evaluate_filings(defs: dg.Definitions, instance: dg.DagsterInstance, filing_ids: Iterable[str], *,
                     trigger: str, narrowed: Mapping[str, list] | None = None, answers: bool = True,
                     log_level: str = "WARNING", workers: int | None = None,
                     executor: str | None = None) -> dict[str, dg.ExecuteInProcessResult]:
    """Run the ``evaluate_filing`` job once per filing (retrieval_eval, and answer_eval when ``answers``),
    its matrix narrowed by ``narrowed`` (EvalRunConfig fields: retrievers, top_k, scopes, ...). Filings
    of the warehouse that are not partitions yet are added first.

    With more than one worker (``workers``, else assets_config/evaluation_workers.yaml; local mode only) the
    filings' rows are first computed in parallel (core/parallel_eval.py) and each filing's run then
    writes its rows, so DuckDB keeps one writer and the rows equal a serial run's."""
    fids = list(dict.fromkeys(filing_ids))
    known = set(instance.get_dynamic_partitions(FILINGS_PARTITIONS_NAME))
    instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, [f for f in fids if f not in known])
    assets = ["retrieval_eval", *(["answer_eval"] if answers else [])]
    run_config = {"loggers": {"console": {"config": {"log_level": log_level}}},
                  "ops": {a: {"config": dict(narrowed or {})} for a in assets}}
    home = _prepare_in_parallel(fids, narrowed, assets, workers, executor)
    results = {}
    try:
        with task("evaluate filings", len(fids), "filings") as work:
            for fid in fids:
                work.update(work.done, fid)
                results[fid] = execute_job(defs, "evaluate_filing", instance, trigger=trigger, partition_key=fid,
                                           asset_selection=[dg.AssetKey(a) for a in assets],
                                           run_config=run_config, tags={PID_TAG: process_token()})
                work.advance()
    finally:
        if home is not None:
            from finrag_pipeline.core.evaluation.prepared import discard_prepared

            discard_prepared(home)
    return results


def _prepare_in_parallel(fids: list[str], narrowed: Mapping[str, list] | None, assets: list[str],
                         workers: int | None, executor: str | None) -> str | None:
    """Compute the filings' evaluation rows with parallel workers for the runs to write (the home they were
    computed for), or None when serial: one worker or one filing, or distributed mode (there each filing's
    run already executes on the Celery workers)."""
    from finrag_pipeline.core.config import using_config_dir
    from finrag_pipeline.core.evaluation.prepared import offer_prepared
    from finrag_pipeline.core.parallel_eval import (
        SessionRecipe,
        load_parallel_config,
        prepare_evaluations,
        worker_count,
    )
    from finrag_pipeline.defs.evaluation.assets import EvalRunConfig
    from finrag_pipeline.defs.resources import code_location_resources, session_from_resources

    resources = code_location_resources()
    finrag, embedder = resources["finrag"], resources["embedder"]
    with using_config_dir(finrag.config_dir or None):
        config = load_parallel_config({k: v for k, v in (("workers", workers), ("executor", executor))
                                       if v is not None})
    n = worker_count(config, len(fids))
    if n <= 1:
        return None
    session = session_from_resources(finrag, embedder)
    if session.result_writer is not None:
        return None
    run_config = EvalRunConfig(**dict(narrowed or {}))
    matrix = run_config.matrix(session)  # exactly what the assets will evaluate
    recipe = SessionRecipe(str(session.paths.home), session.config_dir, embedder.resolved_config(finrag.config_dir))
    kinds = ["retrieval" if a == "retrieval_eval" else "answers" for a in assets]
    with task("evaluate filings in parallel", len(fids), "filings") as work:
        work.update(0, f"{n} {config.executor}")
        prepared = prepare_evaluations(recipe, fids, matrix, kinds=kinds, workers=n, executor=config.executor,
                                       on_filing_done=lambda fid: work.advance(1, fid))
    offer_prepared(session.paths.home, prepared)
    return str(session.paths.home)


def build_variant_partitions(defs: dg.Definitions, instance: dg.DagsterInstance, pairs: Iterable[tuple[str, str]],
                             *, trigger: str, log_level: str = "WARNING") -> dict[tuple[str, str], RunResult]:
    """Run the ``build_chunking_variants`` job once per (filing, variant): the variant's chunks and both of
    its indexes, recorded by Dagster as that partition's materializations (what `finrag variants build` and
    `finrag eval --chunking` do). Filings that are not partitions yet are added first."""
    from finrag_pipeline.core.variants import partition_key
    from finrag_pipeline.defs.index.variants import VARIANTS_JOB_NAME

    pairs = list(dict.fromkeys(pairs))
    if not pairs:
        return {}
    if not any(job.name == VARIANTS_JOB_NAME for job in defs.resolve_all_job_defs()):
        raise ValueError("assets_config/ingest.yaml defines no chunking variant besides the default")
    known = set(instance.get_dynamic_partitions(FILINGS_PARTITIONS_NAME))
    instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, sorted({f for f, _ in pairs} - known))
    run_config = {"loggers": {"console": {"config": {"log_level": log_level}}}}
    return {(fid, variant): execute_job(defs, VARIANTS_JOB_NAME, instance, trigger=trigger,
                                        partition_key=partition_key(fid, variant), run_config=run_config,
                                        tags={PID_TAG: process_token()})
            for fid, variant in pairs}


@dataclass
class PipelineReport:
    registrations: list[Registration] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)          # filing id -> error
    seconds: dict[str, float] = field(default_factory=dict)       # stage -> seconds
    # (asset, check, partition, passed, severity "ERROR" | "WARN")
    checks: list[tuple[str, str, str | None, bool, str]] = field(default_factory=list)

    @property
    def failed_checks(self) -> list[tuple[str, str, str | None, bool, str]]:
        return [c for c in self.checks if not c[3] and c[4] == "ERROR"]

    @property
    def warnings(self) -> list[tuple[str, str, str | None, bool, str]]:
        return [c for c in self.checks if not c[3] and c[4] != "ERROR"]


def get_instance(paths: FinragPaths) -> dg.DagsterInstance:
    """The persistent instance under FINRAG_HOME/dagster_home (the one `make ui` opens)."""
    from finrag_pipeline.core.deployment import load_deployment, write_instance_yaml

    paths.dagster_home.mkdir(parents=True, exist_ok=True)
    # dagster.yaml for the deployment mode (local: SQLite, as FinragPaths.ensure writes it; distributed:
    # Postgres, run queue); a hand-written file is kept
    write_instance_yaml(paths.dagster_home, load_deployment())
    # Automation runs through automation-condition sensors (Dagster's default), so the UI shows no global
    # "Auto-materialize" switch to turn on (test_dagster_ui.py).
    return dg.DagsterInstance.from_config(str(paths.dagster_home))


def collect_files(inputs: Iterable[str | Path]) -> list[Path]:
    files: list[Path] = []
    for item in map(Path, inputs):
        if item.is_dir():
            files += sorted(p for p in item.iterdir() if p.is_file() and p.suffix.lower() in SUPPORTED_SUFFIXES)
        else:
            files.append(item)
    return files


# Jobs whose warnings are routine: dagster-dbt logs one per dbt test it reports as an observation.
_ERRORS_ONLY_JOBS = {"build_marts"}


def _execute(defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, report: PipelineReport,
             partition_key: str | None = None, log_dir: Path | None = None,
             trigger: str = "cli") -> RunResult:
    # The console shows warnings and errors; every event is still in the instance for `make ui`.
    level = "ERROR" if job_name in _ERRORS_ONLY_JOBS else "WARNING"
    quiet = {"loggers": {"console": {"config": {"log_level": level}}}}
    with _stdout_to(log_dir / f"{job_name}.log" if log_dir else None):
        result = execute_job(defs, job_name, instance, trigger=trigger, partition_key=partition_key,
                             run_config=quiet, tags={PID_TAG: process_token()})
    for ev in result.get_asset_check_evaluations():
        report.checks.append((ev.asset_key.to_user_string(), ev.check_name, ev.partition or partition_key, ev.passed,
                              ev.severity.value))
    return result


@contextlib.contextmanager
def _stdout_to(path: Path | None) -> Iterator[None]:
    """Send what a run prints to stdout (dbt's log lines, re-emitted by dagster-dbt) to ``path``, so the
    console keeps the pipeline's own progress; None leaves stdout alone."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as log, contextlib.redirect_stdout(log):
        yield


def run_pipeline(files: Iterable[str | Path], paths: FinragPaths, instance: dg.DagsterInstance,
                 defs: dg.Definitions, *, evaluate: bool = True, build_marts: bool = True,
                 progress: Callable[[str], None] = print,
                 external_sets: Iterable[tuple[str | Path, str]] = (), trigger: str = "cli") -> PipelineReport:
    """Register ``files``, ingest every new or changed filing, refresh the corpus, import the
    ``external_sets`` ((path, format) pairs, as `finrag qa import`), evaluate, build marts.
    ``trigger`` ("demo" or "cli") tags every run."""
    report = PipelineReport()
    wh = Warehouse(paths.warehouse)
    logs = paths.logs_dir
    for run_id, why in fail_dead_runs(instance):
        progress(f"  marked run {run_id[:8]} failed: {why}")
    t0 = time.perf_counter()
    for path in collect_files(files):
        reg = register_file(path, paths, wh)
        report.registrations.append(reg)
        review = reg.meta.review_reasons if reg.ok and reg.meta is not None else []
        progress(f"  {path.name}: {reg.status}" + (f" -> {reg.filing_id}" if reg.filing_id else "")
                 + ("" if reg.ok or reg.status == "duplicate" else f" ({reg.message})")
                 + (f" (in the review queue: {'; '.join(review)})" if review else ""))
    report.seconds["register"] = time.perf_counter() - t0

    known = set(instance.get_dynamic_partitions(FILINGS_PARTITIONS_NAME))
    active = active_filings(wh)
    instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, [f for f in active if f not in known])
    changed = {r.filing_id for r in report.registrations if r.ok}
    unfinished = incomplete_filings(paths, instance, wh, [f for f in active if f not in changed])
    for fid, why in unfinished.items():
        progress(f"  {fid} is not completely ingested ({why}): re-ingesting it")
    to_ingest = [f for f in active if f in changed or f in unfinished]

    t0 = time.perf_counter()
    work = task("ingest filings", len(to_ingest), "filings")  # the stages' own tasks: parse, embed
    with _parse_ahead(paths, wh, to_ingest) as ahead:  # filing i+1 parsed in a worker while filing i runs
        for i, fid in enumerate(to_ingest, 1):
            progress(f"[{i}/{len(to_ingest)}] ingest {fid}: parse, chunk, index, QA")
            work.update(work.done, fid)
            ahead.before(i - 1)
            result = _execute(defs, "ingest_filing", instance, report, fid, logs, trigger)
            work.advance()
            if not result.success:
                report.failed[fid] = first_error(result)
                progress(f"  failed: {report.failed[fid]}")
    work.close()
    for fid, why in incomplete_filings(paths, instance, wh, [f for f in to_ingest if f not in report.failed]).items():
        report.failed[fid] = f"incomplete after ingest: {why}"  # never reported as done
        progress(f"  failed: {fid} {report.failed[fid]}")
    report.seconds["ingest"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    _execute(defs, "refresh_corpus_state", instance, report, log_dir=logs, trigger=trigger)
    report.seconds["corpus_state"] = time.perf_counter() - t0
    external_sets = list(external_sets)
    if external_sets:
        from finrag_pipeline.core.qa.importers import import_external_set

        t0 = time.perf_counter()
        for path, fmt in external_sets:
            imported = import_external_set(wh, path, fmt)
            report_qa_sets_changed(instance, imported.changed_filings, change=f"import of {Path(path).name}",
                                   trigger=trigger)
            skipped = ", ".join(f"{e['reason']} {e['count']}" for e in imported.log if e["reason"] != "imported")
            progress(f"external QA set {Path(path).name}: {len(imported.items)} questions imported"
                     + (f" ({skipped})" if skipped else ""))
        report.seconds["external_qa"] = time.perf_counter() - t0
    if evaluate:
        t0 = time.perf_counter()
        ready = [f for f in active_filings(wh) if f not in report.failed]
        _build_variants_the_matrix_names(defs, instance, paths, wh, ready, report, progress, trigger)
        work = task("evaluate filings", len(ready), "filings")
        for i, fid in enumerate(ready, 1):
            progress(f"[{i}/{len(ready)}] evaluate {fid}")
            work.update(work.done, fid)
            result = _execute(defs, "evaluate_filing", instance, report, fid, logs, trigger)
            work.advance()
            if not result.success:
                report.failed[fid] = first_error(result)
        work.close()
        report.seconds["evaluate"] = time.perf_counter() - t0
    if build_marts:
        t0 = time.perf_counter()
        run_marts_build(defs, instance, paths, report, progress=progress, trigger=trigger)
        report.seconds["marts"] = time.perf_counter() - t0
    return report


def _parse_ahead(paths: FinragPaths, wh: Warehouse, filing_ids: list[str]) -> ParseAhead:
    """The filings' stored files, parsed ahead by a worker process when ingest.yaml's ``pipeline`` allows one
    (local mode only: in distributed mode the bytes live on the object store and workers parse)."""
    from finrag_pipeline.core.catalog import load_filing
    from finrag_pipeline.core.storage.seam import storage_for

    files = [load_filing(wh, fid).source_path for fid in filing_ids]
    worker = use_worker(load_pipeline_config(), len(files)) and storage_for(paths).filings_on_local_disk
    return ParseAhead(files, worker=worker)


def _build_variants_the_matrix_names(defs: dg.Definitions, instance: dg.DagsterInstance, paths: FinragPaths,
                                     wh: Warehouse, filing_ids: list[str], report: PipelineReport,
                                     progress: Callable[[str], None], trigger: str) -> None:
    """Before the evaluations: the (filing, variant) partitions eval_matrix.yaml's chunking variants need and
    lack, built by the build_chunking_variants job (the evaluation itself refuses to run without them)."""
    from finrag_pipeline.core.variants import missing_builds

    named = evaluated_variants()
    missing = sorted(missing_builds(paths, wh, named, filing_ids)) if named else []
    if not missing:
        return
    progress(f"building {len(missing)} chunking-variant partition(s) the evaluation matrix needs")
    for (fid, variant), result in build_variant_partitions(defs, instance, missing, trigger=trigger).items():
        if not result.success:
            report.failed[f"{fid} x {variant}"] = first_error(result)


def run_marts_build(defs: dg.Definitions, instance: dg.DagsterInstance, paths: FinragPaths,
                    report: PipelineReport | None = None, *, progress: Callable[[str], None] = print,
                    trigger: str = "cli") -> PipelineReport:
    """Run the ``build_marts`` job (bootstrap leaderboard, dbt build, the analysts' snapshot, the HTML
    report): what `finrag ingest` / `finrag demo` do after evaluating and `finrag report` does when the
    marts were never built. A failure lands in ``report.failed["marts"]``."""
    report = report if report is not None else PipelineReport()
    logs = paths.logs_dir
    progress(f"building dbt marts, the analysts' snapshot and the report (dbt log: {logs / 'build_marts.log'})")
    with task("build marts", 1, "jobs") as work:  # one dbt job: a bar with its elapsed time
        work.update(0, "bootstrap leaderboard, dbt build, snapshot, report")
        result = _execute(defs, "build_marts", instance, report, log_dir=logs, trigger=trigger)
        work.advance()
    if not result.success:
        report.failed["marts"] = first_error(result)
    return report


def first_error(result: RunResult) -> str:
    for event in result.all_events:
        if event.is_failure and event.step_failure_data and event.step_failure_data.error:
            return f"{event.step_key}: {event.step_failure_data.error.message.strip()[:300]}"
    return "run failed"
