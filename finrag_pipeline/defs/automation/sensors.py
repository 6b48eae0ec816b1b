"""Sensors: the inbox (a new 10-K lands -> it is registered and ingested) and declarative automation."""

import dagster as dg

from finrag_pipeline.core.catalog import Registration, active_filings
from finrag_pipeline.core.edgar import load_automation_config
from finrag_pipeline.core.inbox import InboxCursor, pending_files, process_inbox_file
from finrag_pipeline.core.warehouse import WarehouseBusy
from finrag_pipeline.defs.automation.conditions import EVALUATIONS, MART_ASSETS
from finrag_pipeline.defs.automation.jobs import POOL_TAG, ingest_filing_job, pool_tags
from finrag_pipeline.defs.partitions import filings_partitions
from finrag_pipeline.defs.resources import FinragResource
from finrag_pipeline.defs.run_health import fail_dead_runs, repair_requests

QUARANTINE_ASSET = dg.AssetKey("inbox_quarantine")
MAX_FILES_PER_TICK = 10  # a tick must finish well within Dagster's sensor timeout
# Sensor intervals are the latency of each hop of a wave (drop -> ingest -> corpus_state -> evaluations ->
# marts): 10 s each instead of 30 s / 15 s. An idle tick is a folder listing (inbox) or one evaluation of the
# automation conditions (under a second on the demo's graph).
INBOX_INTERVAL_SECONDS = 10


@dg.sensor(
    job=ingest_filing_job, minimum_interval_seconds=INBOX_INTERVAL_SECONDS, default_status=dg.DefaultSensorStatus.RUNNING,
    description="Watches the inbox folder (assets_config/automation.yaml, default FINRAG_HOME/inbox) every "
                f"{INBOX_INTERVAL_SECONDS} s. A new file is registered (deduplicated by content hash), its partition added and the "
                "ingest_filing job requested (tagged finrag/trigger=inbox); a file that cannot be a filing goes "
                "to quarantine with its reason (observed on inbox_quarantine). Each tick says what it did: "
                "registered, duplicates, quarantined with reasons. It also fails runs whose process died and "
                "re-runs (once per version) a filing such a run left half-indexed. What follows is automation "
                "(finrag_automation and its evaluation and marts siblings): corpus_state, every filing's "
                "evaluation, then the marts and the report, once.",
)
def inbox_sensor(context: dg.SensorEvaluationContext, finrag: FinragResource) -> dg.SensorResult:
    paths = finrag.paths
    automation = load_automation_config()
    inbox = automation.inbox.path or paths.inbox
    quarantine = automation.inbox.quarantine or paths.quarantine
    cursor = InboxCursor.from_json(context.cursor)
    new_partitions: list[str] = []
    run_requests: list[dg.RunRequest] = []
    outcomes: list[tuple[str, Registration]] = []

    busy: str | None = None
    for path in pending_files(inbox)[:MAX_FILES_PER_TICK]:
        try:
            reg = process_inbox_file(path, paths, finrag.warehouse, quarantine)
        except WarehouseBusy as exc:  # someone holds the warehouse: the files wait for the next tick
            busy = str(exc)
            context.log.warning(busy)
            break
        cursor.handled[reg.sha256 or path.name] = reg.status
        outcomes.append((path.name, reg))
        context.log.info(f"{path.name}: {reg.status} ({reg.message})")
        if reg.ok:
            new_partitions.append(reg.filing_id)
            # The run key makes a re-request after a crash between registration and cursor update a no-op.
            run_requests.append(dg.RunRequest(partition_key=reg.filing_id,
                                              run_key=f"{reg.filing_id}:{reg.sha256[:16]}",
                                              tags={"finrag/source_file": path.name,
                                                    "finrag/trigger": "inbox", "finrag/filing": reg.filing_id}))

    # A run whose process died (kill -9) is failed, and a filing it left half-indexed is re-run once.
    for run_id, why in fail_dead_runs(context.instance):
        context.log.warning(f"run {run_id[:8]} marked failed: {why}")
    if busy is None:
        try:
            run_requests += _repairs(context, paths, finrag.warehouse, new_partitions)
        except WarehouseBusy as exc:
            busy = str(exc)
            context.log.warning(busy)

    summary = tick_summary(outcomes)
    if outcomes:
        context.log.info(summary)
    held = sum(1 for p in quarantine.glob("*") if p.is_file() and not p.name.endswith(".reason.txt"))
    events = [dg.AssetObservation(asset_key=QUARANTINE_ASSET, metadata={
        "file": name, "status": reg.status, "reason": reg.message, "tick": dg.MetadataValue.text(summary),
        "dagster/row_count": dg.MetadataValue.int(held),  # files held in quarantine
        "folder": dg.MetadataValue.path(str(quarantine))})
        for name, reg in outcomes if not reg.ok and reg.status != "duplicate"]
    return dg.SensorResult(
        run_requests=run_requests,
        dynamic_partitions_requests=[filings_partitions.build_add_request(new_partitions)] if new_partitions else [],
        asset_events=events,
        cursor=cursor.to_json(),
        # A tick that only quarantined or deduplicated files says so instead of looking idle.
        skip_reason=None if run_requests else dg.SkipReason(busy or (summary if outcomes else f"nothing new in {inbox}")),
    )


def _repairs(context: dg.SensorEvaluationContext, paths, wh, skip: list[str]) -> list[dg.RunRequest]:
    active = [f for f in active_filings(wh) if f not in skip]
    shas = dict(wh.query_df("SELECT filing_id, content_sha256 FROM core.filings").itertuples(index=False))
    requests = []
    for fid, run_key, why in repair_requests(context.instance, paths, wh, active, shas):
        context.log.warning(f"{fid} is not completely ingested ({why}): requesting a repair run")
        requests.append(dg.RunRequest(partition_key=fid, run_key=run_key, tags={"finrag/repair": why[:200],
                                                                                  "finrag/trigger": "inbox",
                                                                                  "finrag/filing": fid}))
    return requests


def tick_summary(outcomes: list[tuple[str, Registration]]) -> str:
    """'1 registered (a.pdf -> AAPL-2025-10K); 1 duplicate (c.pdf); 1 quarantined: notes.html [not_a_filing: ...]'."""
    registered = [f"{name} -> {reg.filing_id}" for name, reg in outcomes if reg.ok]
    duplicates = [name for name, reg in outcomes if reg.status == "duplicate"]
    rejected = [f"{name} [{reg.status}: {reg.message}]" for name, reg in outcomes
                if not reg.ok and reg.status != "duplicate"]
    return "; ".join([
        f"{len(registered)} registered" + (f" ({', '.join(registered)})" if registered else ""),
        f"{len(duplicates)} duplicate(s)" + (f" ({', '.join(duplicates)})" if duplicates else ""),
        f"{len(rejected)} quarantined" + (": " + "; ".join(rejected) if rejected else "")])


# Declarative automation, split by run-concurrency pool: an AutomationConditionSensor tags every run it
# launches alike, and the run queue limits runs by tag. The conditions do not depend on the split (see
# conditions.py). Backfills are off: one run per filing, which the queue can hold back and which automation
# sees as in progress while it waits.
_AUTOMATION_INTERVAL_SECONDS = 10
_AUTOMATION_CHAIN = ("a filing's index partitions updated -> corpus_state; corpus_state or a QA set updated (or "
                     "the evaluation config changed) -> retrieval_eval and answer_eval of every filing, once "
                     "corpus_state is up to date; the last evaluation of the wave done -> eval_statistics, the dbt "
                     "marts, analyst_snapshot and eval_report, once, in one run.")


def _automation_sensor(name: str, target: dg.AssetSelection, pool: str, what: str):
    return dg.AutomationConditionSensorDefinition(
        name, target=target, default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=_AUTOMATION_INTERVAL_SECONDS, emit_backfills=False,
        run_tags={"finrag/trigger": "automation", **pool_tags(pool)},
        description=f"Evaluates the named automation conditions (defs/automation/conditions.py) of {what} every "
                    f"{_AUTOMATION_INTERVAL_SECONDS} s and launches what they request, tagged "
                    f"finrag/trigger=automation and {POOL_TAG}={pool} (the run queue's limit for that pool is in "
                    f"assets_config/deployment.yaml). The chain: {_AUTOMATION_CHAIN}",
    )


automation_sensor = _automation_sensor(
    "finrag_automation", dg.AssetSelection.all() - EVALUATIONS - MART_ASSETS, "ingest",
    "corpus_state and the QA sets")
evaluation_automation_sensor = _automation_sensor(
    "finrag_evaluation_automation", EVALUATIONS, "evaluation", "retrieval_eval and answer_eval")
marts_automation_sensor = _automation_sensor(
    "finrag_marts_automation", MART_ASSETS, "warehouse",
    "eval_statistics, the dbt models, analyst_snapshot and eval_report")
AUTOMATION_SENSORS = (automation_sensor, evaluation_automation_sensor, marts_automation_sensor)
