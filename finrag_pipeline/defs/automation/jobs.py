"""Jobs: what one new filing needs (ingest_filing) and what a re-evaluation runs (evaluate_filing)."""

import dagster as dg

from finrag_pipeline.defs.partitions import filings_partitions

INGEST_SELECTION = dg.AssetSelection.groups("ingest", "index") - dg.AssetSelection.assets("corpus_state")
ingest_filing_job = dg.define_asset_job(
    "ingest_filing", selection=INGEST_SELECTION | dg.AssetSelection.assets("qa_set"),
    partitions_def=filings_partitions,
    description="One filing end to end up to its QA set: parse, chunk, index, generate questions.",
)

evaluate_filing_job = dg.define_asset_job(
    "evaluate_filing", selection=dg.AssetSelection.assets("retrieval_eval", "answer_eval"),
    partitions_def=filings_partitions,
    description="Retrieval and answer evaluation of one filing's QA set (both scopes).",
)

corpus_job = dg.define_asset_job(
    "refresh_corpus_state", selection=dg.AssetSelection.assets("corpus_state"),
    description="Recompute the corpus state (and drop removed filings from the indexes).",
)

marts_job = dg.define_asset_job(
    "build_marts", selection=dg.AssetSelection.assets("eval_statistics") | dg.AssetSelection.groups("marts"),
    description="Bootstrap leaderboard, dbt marts, the analysts' snapshot and the HTML report.",
)
