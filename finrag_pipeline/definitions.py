"""The Dagster code location: ``dagster dev -w workspace.yaml`` (or ``make ui``) loads ``defs``."""

import warnings

import dagster as dg

from finrag_pipeline.defs.automation.jobs import corpus_job, evaluate_filing_job, ingest_filing_job, marts_job
from finrag_pipeline.defs.automation.schedules import edgar_poller, nightly_reevaluation
from finrag_pipeline.defs.automation.sensors import AUTOMATION_SENSORS, QUARANTINE_ASSET, inbox_sensor
from finrag_pipeline.defs.catalog_metadata import with_catalog_metadata
from finrag_pipeline.defs.evaluation import assets as evaluation_assets
from finrag_pipeline.defs.evaluation import systems as system_assets
from finrag_pipeline.defs.executors import deployment_executor
from finrag_pipeline.defs.index import assets as index_assets
from finrag_pipeline.defs.index.variants import VARIANT_ASSETS, variants_job
from finrag_pipeline.defs.ingest import assets as ingest_assets
from finrag_pipeline.defs.ingest import checks as ingest_checks
from finrag_pipeline.defs.marts import assets as marts_assets
from finrag_pipeline.defs.qa import assets as qa_assets
from finrag_pipeline.defs.resources import code_location_resources

quarantine_spec = dg.AssetSpec(
    QUARANTINE_ASSET, group_name="ingest", kinds={"file"},
    description="Files the inbox sensor could not accept (not a filing, corrupt, scanned, empty, unsupported). "
                "Each observation (one per file, recorded by the inbox sensor's tick) names the file, its status and "
                "the reason, and the tick's summary; the file sits in the quarantine folder beside a .reason.txt.",
)

# Owners, tags, freshness and the "what triggers what" chain per group; links to the source of each asset
# (code references are a beta API: its warnings say nothing a user can act on).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)
    ALL_ASSETS = dg.with_source_code_references(dg.map_asset_specs(with_catalog_metadata, [
        *dg.load_assets_from_modules([ingest_assets, index_assets, qa_assets, evaluation_assets, system_assets,
                                      marts_assets]),
        *VARIANT_ASSETS,  # filing x chunking; none when ingest.yaml has no variant besides the default
        quarantine_spec,
    ]))

defs = dg.Definitions(
    assets=ALL_ASSETS,
    asset_checks=dg.load_asset_checks_from_modules([ingest_checks, system_assets]),
    jobs=[ingest_filing_job, evaluate_filing_job, corpus_job, marts_job, system_assets.evaluate_system_job,
          *([variants_job] if variants_job else [])],
    sensors=[inbox_sensor, *AUTOMATION_SENSORS, edgar_poller],
    schedules=[nightly_reevaluation],
    # Local: one process per run (a step subprocess per asset re-imports torch and the code location, seconds
    # each; the run queue, not the executor, decides what runs at once). FINRAG_DEPLOYMENT=distributed: every
    # job's steps (the implicit asset job's too) run on Celery workers.
    executor=deployment_executor() or dg.in_process_executor,
    resources={**code_location_resources(), "dbt": marts_assets.dbt_resource},
)
