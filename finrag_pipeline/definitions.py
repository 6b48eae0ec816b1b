"""The Dagster code location: ``dagster dev -w workspace.yaml`` (or ``make ui``) loads ``defs``."""

import dagster as dg

from finrag_pipeline.defs.automation.jobs import corpus_job, evaluate_filing_job, ingest_filing_job, marts_job
from finrag_pipeline.defs.automation.schedules import edgar_poller, nightly_reevaluation
from finrag_pipeline.defs.automation.sensors import QUARANTINE_ASSET, automation_sensor, inbox_sensor
from finrag_pipeline.defs.evaluation import assets as evaluation_assets
from finrag_pipeline.defs.index import assets as index_assets
from finrag_pipeline.defs.ingest import assets as ingest_assets
from finrag_pipeline.defs.ingest import checks as ingest_checks
from finrag_pipeline.defs.marts import assets as marts_assets
from finrag_pipeline.defs.qa import assets as qa_assets
from finrag_pipeline.defs.resources import EmbedderResource, FinragResource

quarantine_spec = dg.AssetSpec(
    QUARANTINE_ASSET, group_name="ingest",
    description="Files the inbox sensor could not accept (not a filing, corrupt, scanned, empty, unsupported). "
                "Each observation names the file and the reason; the file sits in the quarantine folder.",
)

ALL_ASSETS = [
    *dg.load_assets_from_modules([ingest_assets, index_assets, qa_assets, evaluation_assets, marts_assets]),
    quarantine_spec,
]

defs = dg.Definitions(
    assets=ALL_ASSETS,
    asset_checks=dg.load_asset_checks_from_modules([ingest_checks]),
    jobs=[ingest_filing_job, evaluate_filing_job, corpus_job, marts_job],
    sensors=[inbox_sensor, automation_sensor, edgar_poller],
    schedules=[nightly_reevaluation],
    resources={
        "finrag": FinragResource(),
        "embedder": EmbedderResource(),
        "dbt": marts_assets.dbt_resource,
    },
)
