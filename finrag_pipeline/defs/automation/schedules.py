"""Schedules: a nightly full re-evaluation, and the EDGAR poller (off by default)."""

from pathlib import Path

import dagster as dg

from finrag_pipeline.core.catalog import active_filings
from finrag_pipeline.core.edgar import EdgarCursor, load_automation_config, poll_edgar, resolve_inbox
from finrag_pipeline.defs.automation.jobs import evaluate_filing_job
from finrag_pipeline.defs.resources import FinragResource

_AUTOMATION = load_automation_config()


@dg.schedule(
    job=evaluate_filing_job, cron_schedule=_AUTOMATION.schedules.nightly_reeval_cron,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Re-evaluates every filing's QA set whatever changed, one run per filing.",
)
def nightly_reevaluation(context: dg.ScheduleEvaluationContext, finrag: FinragResource):
    date = context.scheduled_execution_time.strftime("%Y-%m-%d")
    filings = active_filings(finrag.warehouse)
    if not filings:
        return dg.SkipReason("no filings registered yet")
    return [dg.RunRequest(partition_key=fid, run_key=f"nightly:{date}:{fid}",
                          tags={"finrag/trigger": "schedule", "finrag/filing": fid}) for fid in filings]


@dg.sensor(
    minimum_interval_seconds=6 * 3600, default_status=dg.DefaultSensorStatus.STOPPED,
    description="EDGAR poller, every 6 hours when switched on: checks the watchlist (edgar.tickers) for new "
                "10-Ks through SEC's submissions API and downloads the primary documents into the inbox, "
                "where the inbox sensor takes over. Needs edgar.enabled and a User-Agent with a contact "
                "email in assets_config/automation.yaml. The cursor remembers accession numbers seen.",
)
def edgar_poller(context: dg.SensorEvaluationContext, finrag: FinragResource):
    config = load_automation_config()
    if not config.edgar.enabled:
        return dg.SkipReason("edgar.enabled is false in assets_config/automation.yaml")
    result = poll_edgar(config.edgar, EdgarCursor.from_json(context.cursor),
                        inbox=resolve_inbox(config, finrag.paths))
    context.update_cursor(result.cursor.to_json())
    for err in result.errors:
        context.log.warning(err)
    names = ", ".join(Path(d.path).name for d in result.downloaded) or "nothing new"
    return dg.SkipReason(f"EDGAR: downloaded {names} ({result.n_requests} requests); the inbox sensor ingests them")
