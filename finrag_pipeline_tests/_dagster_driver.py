"""What the Dagster daemon does, driven by hand in this process: for tests and benchmarks only (the product
runs them through the daemon). Moved out of defs/local_runs.py, which keeps what the CLI runs.

- one evaluation of the inbox sensor, and executing its requests;
- automation ticks until nothing is requested (declarative automation, evaluated here);
- a failed run re-executed from its failed steps, as the daemon's run retries do.
"""

import dagster as dg

from finrag_pipeline.defs.local_runs import IMPLICIT_ASSET_JOB, TRIGGER_TAG, execute_job, first_error


def tick_inbox_sensor(instance: dg.DagsterInstance, cursor: str | None = None) -> dg.SensorResult:
    """One evaluation of the inbox sensor, as the daemon would run it."""
    from finrag_pipeline.defs.automation.sensors import inbox_sensor
    from finrag_pipeline.defs.resources import FinragResource

    context = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"finrag": FinragResource()})
    return inbox_sensor(context)


def execute_sensor_result(defs: dg.Definitions, instance: dg.DagsterInstance, result: dg.SensorResult,
                          job_name: str = "ingest_filing") -> list:
    """Add the partitions a sensor asked for and run its requests in this process, as the daemon would
    (the requests carry the sensor's trigger tag)."""
    for request in result.dynamic_partitions_requests or []:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    return [execute_job(defs, job_name, instance, trigger=r.tags.get(TRIGGER_TAG, "inbox"),
                        partition_key=r.partition_key, tags=r.tags) for r in result.run_requests]


def run_automation_until_quiet(defs: dg.Definitions, instance: dg.DagsterInstance, cursor=None,
                               max_ticks: int = 8) -> tuple[list[tuple[str, str | None]], object]:
    """Evaluate the automation conditions and execute what they request, tick after tick, until nothing is
    requested. Returns the (asset, partition) pairs that ran and the automation cursor."""
    requested: list[tuple[str, str | None]] = []
    for _ in range(max_ticks):
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        cursor = result.cursor
        if not result.total_requested:
            return requested, cursor
        requested += execute_requested(defs, instance, result)
    raise RuntimeError(f"automation still requesting runs after {max_ticks} ticks: {requested[-10:]}")


def execute_requested(defs: dg.Definitions, instance: dg.DagsterInstance,
                      result: dg.EvaluateAutomationConditionsResult) -> list[tuple[str, str | None]]:
    """Run what one automation tick requested, upstream first: consecutive assets (in topological order)
    that share partitioning run together, one run per partition key, as the daemon's run grouping would:
    runs of the implicit asset job, tagged ``finrag/trigger=automation``."""
    graph = defs.resolve_asset_graph()
    order = [k for k in graph.toposorted_asset_keys if result.get_num_requested(k)]
    # one run holds assets of one partitioning (none, filings, filing x chunking)
    groups: list[tuple[object, list[dg.AssetKey]]] = []
    for key in order:
        partitions_def = graph.get(key).partitions_def
        if groups and groups[-1][0] == partitions_def:
            groups[-1][1].append(key)
        else:
            groups.append((partitions_def, [key]))
    ran: list[tuple[str, str | None]] = []
    for partitions_def, keys in groups:
        partitioned = partitions_def is not None
        partition_keys = sorted(set().union(*(result.get_requested_partitions(k) for k in keys))) if partitioned else [None]
        for pk in partition_keys:
            selection = [k for k in keys if pk is None or pk in result.get_requested_partitions(k)]
            run = execute_job(defs, IMPLICIT_ASSET_JOB, instance, trigger="automation", partition_key=pk,
                              asset_selection=selection, recon_job=code_location_recon_job(IMPLICIT_ASSET_JOB))
            if not run.success:
                raise RuntimeError(f"automation run failed: {[k.to_user_string() for k in selection]} {pk}: "
                                   f"{first_error(run)}")
            ran += [(k.to_user_string(), pk) for k in selection]
    return ran


def code_location_recon_job(job_name: str):
    """A pointer to any job of the code location's ``defs``, the implicit asset job included, for Celery
    workers. Dagster's internal ReconstructableRepository (fine in test code): the product's public pointer
    (local_runs.reconstructable_job) cannot name the implicit asset job, whose runs the daemon launches."""
    from dagster._core.definitions.reconstruct import ReconstructableRepository

    from finrag_pipeline.core.paths import REPO_ROOT
    from finrag_pipeline.defs.local_runs import code_location

    repository = ReconstructableRepository.for_module(code_location()[1], "defs", working_directory=str(REPO_ROOT))
    return repository.get_reconstructable_job(job_name)


RETRY_NUMBER_TAG = "dagster/retry_number"  # the tag the daemon's run retries set (dagster/_core/storage/tags.py)


def retry_failed_run(defs: dg.Definitions, instance: dg.DagsterInstance, run_id: str):
    """Re-execute a failed run from its failed steps, as the daemon's run retries do (instance setting
    ``run_retries``): the steps that succeeded are not run again; the new run carries the retry tags."""
    from finrag_pipeline.defs.local_runs import remote_job_origin, runs_created_with_origin

    failed = instance.get_run_by_id(run_id)
    if failed is None:
        raise ValueError(f"no run {run_id}")
    retry_number = int(failed.tags.get(RETRY_NUMBER_TAG, "0")) + 1
    options = dg.ReexecutionOptions.from_failure(run_id, instance)
    # the parent's own tags (trigger, filing) and its partition: a re-execution does not inherit them, and
    # a partitioned asset step of a run without dagster/partition cannot run
    inherited = {k: v for k, v in failed.tags.items() if not k.startswith("dagster/") or k == "dagster/partition"}
    with runs_created_with_origin(instance, remote_job_origin(failed.job_name)):
        return dg.execute_job(code_location_recon_job(failed.job_name), instance, reexecution_options=options,
                              tags={**inherited, RETRY_NUMBER_TAG: str(retry_number)})
