"""Sensors: the inbox (a new 10-K lands -> it is registered and ingested) and declarative automation."""

import dagster as dg

from finrag_pipeline.core.catalog import active_filings
from finrag_pipeline.core.edgar import load_automation_config
from finrag_pipeline.core.inbox import InboxCursor, pending_files, process_inbox_file
from finrag_pipeline.core.warehouse import WarehouseBusy
from finrag_pipeline.defs.automation.jobs import ingest_filing_job
from finrag_pipeline.defs.partitions import filings_partitions
from finrag_pipeline.defs.resources import FinragResource
from finrag_pipeline.defs.run_health import fail_dead_runs, repair_requests

QUARANTINE_ASSET = dg.AssetKey("inbox_quarantine")
MAX_FILES_PER_TICK = 10  # a tick must finish well within Dagster's sensor timeout


@dg.sensor(
    job=ingest_filing_job, minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches the inbox folder (assets_config/automation.yaml, default FINRAG_HOME/inbox). A new "
                "file is registered (deduplicated by content hash), its partition added and the ingest job "
                "requested; a file that cannot be a filing goes to quarantine with its reason. It also fails runs "
                "whose process died and re-runs (once per version) a filing such a run left half-indexed.",
)
def inbox_sensor(context: dg.SensorEvaluationContext, finrag: FinragResource) -> dg.SensorResult:
    paths = finrag.paths
    automation = load_automation_config()
    inbox = automation.inbox.path or paths.inbox
    quarantine = automation.inbox.quarantine or paths.quarantine
    cursor = InboxCursor.from_json(context.cursor)
    new_partitions: list[str] = []
    run_requests: list[dg.RunRequest] = []
    events: list[dg.AssetObservation] = []

    busy: str | None = None
    for path in pending_files(inbox)[:MAX_FILES_PER_TICK]:
        try:
            reg = process_inbox_file(path, paths, finrag.warehouse, quarantine)
        except WarehouseBusy as exc:  # someone holds the warehouse: the files wait for the next tick
            busy = str(exc)
            context.log.warning(busy)
            break
        cursor.handled[reg.sha256 or path.name] = reg.status
        context.log.info(f"{path.name}: {reg.status} ({reg.message})")
        if reg.ok:
            new_partitions.append(reg.filing_id)
            # The run key makes a re-request after a crash between registration and cursor update a no-op.
            run_requests.append(dg.RunRequest(partition_key=reg.filing_id,
                                              run_key=f"{reg.filing_id}:{reg.sha256[:16]}",
                                              tags={"finrag/source_file": path.name}))
        elif reg.status != "duplicate":
            events.append(dg.AssetObservation(asset_key=QUARANTINE_ASSET, metadata={
                "file": path.name, "status": reg.status, "reason": reg.message,
                "folder": dg.MetadataValue.path(str(quarantine))}))

    # A run whose process died (kill -9) is failed, and a filing it left half-indexed is re-run once.
    for run_id, why in fail_dead_runs(context.instance):
        context.log.warning(f"run {run_id[:8]} marked failed: {why}")
    if busy is None:
        try:
            run_requests += _repairs(context, paths, finrag.warehouse, new_partitions)
        except WarehouseBusy as exc:
            busy = str(exc)
            context.log.warning(busy)

    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=[filings_partitions.build_add_request(new_partitions)] if new_partitions else [],
        asset_events=events,
        cursor=cursor.to_json(),
        skip_reason=None if run_requests or events else dg.SkipReason(busy or f"nothing new in {inbox}"),
    )


def _repairs(context: dg.SensorEvaluationContext, paths, wh, skip: list[str]) -> list[dg.RunRequest]:
    active = [f for f in active_filings(wh) if f not in skip]
    shas = dict(wh.query_df("SELECT filing_id, content_sha256 FROM core.filings").itertuples(index=False))
    requests = []
    for fid, run_key, why in repair_requests(context.instance, paths, wh, active, shas):
        context.log.warning(f"{fid} is not completely ingested ({why}): requesting a repair run")
        requests.append(dg.RunRequest(partition_key=fid, run_key=run_key, tags={"finrag/repair": why[:200]}))
    return requests


automation_sensor = dg.AutomationConditionSensorDefinition(
    "finrag_automation", target=dg.AssetSelection.all(), default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Evaluates the named automation conditions (defs/automation/conditions.py).",
)
