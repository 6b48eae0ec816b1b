"""Jobs: what one new filing needs (ingest_filing) and what a re-evaluation runs (evaluate_filing)."""

import dagster as dg

from finrag_pipeline.defs.automation.conditions import MART_ASSETS
from finrag_pipeline.defs.partitions import filings_partitions

# Every run carries the pool it competes in; the run queue limits each pool (assets_config/deployment.yaml
# run_concurrency -> the instance's tag_concurrency_limits).
POOL_TAG = "finrag/pool"
POOLS = ("ingest", "evaluation", "warehouse")


def pool_tags(pool: str) -> dict[str, str]:
    if pool not in POOLS:
        raise ValueError(f"unknown pool {pool!r}; one of {POOLS}")
    return {POOL_TAG: pool}


INGEST_SELECTION = dg.AssetSelection.groups("ingest", "index") - dg.AssetSelection.assets("corpus_state")
ingest_filing_job = dg.define_asset_job(
    "ingest_filing", selection=INGEST_SELECTION | dg.AssetSelection.assets("qa_set"),
    partitions_def=filings_partitions, tags=pool_tags("ingest"),
    description="One filing end to end up to its QA set: parse, chunk, index, generate questions. Started by "
                "the inbox sensor (finrag/trigger=inbox) or `finrag ingest` / `finrag demo` (cli / demo). "
                "Automation then refreshes corpus_state, which re-evaluates every filing.",
)

evaluate_filing_job = dg.define_asset_job(
    "evaluate_filing", selection=dg.AssetSelection.assets("retrieval_eval", "answer_eval"),
    partitions_def=filings_partitions, tags=pool_tags("evaluation"),
    description="Retrieval and answer evaluation of one filing's QA set (both scopes). Started by the nightly "
                "schedule (finrag/trigger=schedule) or the CLI; automation runs the same assets when a QA set "
                "or corpus_state changes, then refreshes the marts and the report.",
)

corpus_job = dg.define_asset_job(
    "refresh_corpus_state", selection=dg.AssetSelection.assets("corpus_state"), tags=pool_tags("ingest"),
    description="Recompute the corpus state (and drop removed filings from the indexes). A new state makes "
                "automation re-evaluate every filing's whole-corpus scope.",
)

marts_job = dg.define_asset_job(
    "build_marts", selection=MART_ASSETS, tags=pool_tags("warehouse"),
    description="Bootstrap leaderboard, dbt marts (tests as checks), the analysts' snapshot and the HTML "
                "report: what automation runs after any evaluation changed, and the CLI after its evaluations.",
)
