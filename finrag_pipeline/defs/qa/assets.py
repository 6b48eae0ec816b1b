"""QA sets: questions with known evidence, generated from each filing (model-free by default)."""


import time
from collections import Counter

import dagster as dg

from finrag_pipeline.core.catalog import load_filing
from finrag_pipeline.core.config import config_fingerprint
from finrag_pipeline.core.qa.config import load_qa_config
from finrag_pipeline.core.qa.generate import generate_qa_set
from finrag_pipeline.core.qa.leakage import annotate_leakage
from finrag_pipeline.core.qa.review import apply_recorded_reviews
from finrag_pipeline.core.records import load_chunks, load_facts, load_pages, load_table_rows
from finrag_pipeline.core.warehouse import rows_of
from finrag_pipeline.defs.automation.conditions import REGENERATE_QA
from finrag_pipeline.defs.metadata import row_counts
from finrag_pipeline.defs.partitions import filings_partitions
from finrag_pipeline.defs.resources import EmbedderResource, FinragResource


class QARunConfig(dg.Config):
    """Launchpad overrides of assets_config/qa.yaml."""

    generators: list[str] | None = None
    seed: int | None = None


@dg.asset(
    partitions_def=filings_partitions, group_name="qa", kinds={"duckdb"},
    deps=["chunks", "table_rows", "xbrl_facts", "pages"],
    code_version=config_fingerprint("qa.yaml", "models.yaml"),
    automation_condition=REGENERATE_QA,
    description="Synthetic questions with known evidence (required groups of alternative chunk/page "
                "places) from the filing's XBRL facts and table rows, through the filters (figures in "
                "evidence, near-duplicates, passage-dependent, self-answering). Table qa.items.",
)
def qa_set(context: dg.AssetExecutionContext, config: QARunConfig, finrag: FinragResource,
           embedder: EmbedderResource) -> dg.MaterializeResult:
    fid = context.partition_key
    wh = finrag.partition_warehouse(fid)
    overrides = {k: v for k, v in (("generators", config.generators), ("seed", config.seed)) if v is not None}
    t0 = time.perf_counter()
    pages, chunks = load_pages(wh, fid), load_chunks(wh, fid)
    reviews = wh.query_df("SELECT qa_id, decision, after FROM qa.reviews ORDER BY reviewed_at").to_dict("records")
    with finrag.configured():  # qa.yaml, lexicon.yaml, phrasing.yaml of the resource's config dir
        qa_config = load_qa_config(overrides)
        result = generate_qa_set(load_filing(wh, fid), pages, load_table_rows(wh, fid), load_facts(wh, fid),
                                 chunks, qa_config, embedder=embedder.get(finrag.config_dir).encode)
        items = annotate_leakage(apply_recorded_reviews(result.items, reviews), chunks, pages,
                                 settings=qa_config.leakage)
    # Imported sets (FinanceBench, JSONL, CSV) share the table: replace only what generators wrote.
    wh.replace_rows("qa.items", rows_of(items), where={"filing_id": fid, "source": "generated"})
    wh.replace_rows("qa.generation_log", result.log_rows(fid), where={"filing_id": fid})
    by_type = Counter(i.question_type for i in result.items)
    dropped = [e for e in result.log if e["stage"] not in ("generate", "llm_generate", "final")]
    return dg.MaterializeResult(metadata={
        **row_counts(wh, "qa.items", fid),
        "questions": len(items), "reviewed": sum(bool(i.metadata.get("reviewed")) for i in items),
        "by_type": dg.MetadataValue.json(dict(sorted(by_type.items()))),
        "filters": dg.MetadataValue.md(
            "| stage | reason | count |\n|---|---|---|\n"
            + "\n".join(f"| {e['stage']} | {e['reason']} | {e['count']} |" for e in dropped)),
        "sample": dg.MetadataValue.md("\n".join(
            f"- *{i.question_type}*: {i.question} → **{i.reference_answer}**" for i in result.items[:8])),
        "seconds": round(time.perf_counter() - t0, 2),
    })
