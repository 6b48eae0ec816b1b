"""Indexes: each filing's leaf chunks into Tantivy (BM25) and LanceDB (vectors); the corpus they form."""

import json
import time

import dagster as dg

from finrag_pipeline.core.catalog import active_filings
from finrag_pipeline.core.ingest_pipeline import filing_embedding_inputs
from finrag_pipeline.core.models import stable_id
from finrag_pipeline.core.records import load_chunks
from finrag_pipeline.core.variants import drop_filings_not_in
from finrag_pipeline.defs.automation.conditions import CORPUS_CHANGED
from finrag_pipeline.defs.partitions import CHUNKING_VARIANTS, filings_partitions
from finrag_pipeline.defs.progress import logged_progress
from finrag_pipeline.defs.resources import EmbedderResource, FinragResource

GROUP = "index"


@dg.asset(
    partitions_def=filings_partitions, group_name=GROUP, deps=["chunks"], kinds={"tantivy"},
    description="The filing's leaf chunks in the Tantivy BM25 index (words stemmed, financial tokens such "
                "as $4.2B, FY2024, 10-K kept whole). Replaced in one commit: a dying run leaves the old state.",
)
def bm25_index(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
    fid = context.partition_key
    leaves = load_chunks(finrag.partition_warehouse(fid), fid, leaves_only=True)
    t0 = time.perf_counter()
    # local: the corpus index; distributed: the filing's shard, which corpus_state publishes
    written = finrag.storage().write_bm25(fid, leaves)
    return dg.MaterializeResult(metadata={
        "dagster/row_count": dg.MetadataValue.int(written.n_docs), "documents": written.n_docs,
        **written.metadata, "seconds": round(time.perf_counter() - t0, 2)})


@dg.asset(
    partitions_def=filings_partitions, group_name=GROUP, deps=["chunks"], kinds={"lancedb"},
    description="The filing's leaf chunks embedded (MiniLM by default; the embedder is a resource) in "
                "LanceDB. Only this filing is embedded; unchanged texts come from the embedding cache.",
)
def vector_index(context: dg.AssetExecutionContext, finrag: FinragResource,
                 embedder: EmbedderResource) -> dg.MaterializeResult:
    fid = context.partition_key
    leaves = load_chunks(finrag.partition_warehouse(fid), fid, leaves_only=True)
    t0 = time.perf_counter()
    index = finrag.lance(embedder.get(finrag.config_dir))
    with finrag.configured():  # embedder.yaml `inputs` of the resource's config dir
        inputs = filing_embedding_inputs(finrag.partition_warehouse(fid), fid, leaves)
    with logged_progress(context):  # embedding: chunks/s in the step's log
        n = index.upsert_filing(fid, leaves, show_progress=False, embed_inputs=inputs)
    seconds = time.perf_counter() - t0
    return dg.MaterializeResult(metadata={
        "dagster/row_count": dg.MetadataValue.int(n), "rows_all_filings": dg.MetadataValue.int(index.count()),
        "rows": n, "newly_embedded": index.last_encoded, "rows_in_index": index.count(),
        "embedder": index.embedder.name, "seconds": round(seconds, 2),
        "inputs_shortened": len(inputs),
        "chunks_per_second": round(index.last_encoded / seconds, 1) if seconds and index.last_encoded else 0.0,
    })


@dg.asset(
    group_name=GROUP, deps=["bm25_index", "vector_index"], kinds={"duckdb"},
    automation_condition=CORPUS_CHANGED,
    description="The searchable corpus as a whole: which filings are in both indexes, and a hash of that "
                "state. Filings removed from the catalog are dropped from both indexes (and the chunking variants' chunks and indexes) here. Whole-corpus "
                "evaluations depend on it, so a new or removed filing re-evaluates every QA set.",
)
def corpus_state(context: dg.AssetExecutionContext, finrag: FinragResource,
                 embedder: EmbedderResource) -> dg.MaterializeResult:
    finrag.publish_distributed_results()  # distributed: ingest rows on the object store into DuckDB first
    wh = finrag.warehouse
    active = set(active_filings(wh))
    storage = finrag.storage()
    vectors = finrag.lance(embedder.get(finrag.config_dir))
    for stale in sorted((set(storage.bm25_filing_ids()) | set(vectors.filing_ids())) - active):
        context.log.info(f"removing {stale} from both indexes (no longer in the catalog)")
        storage.remove_bm25(stale)
        vectors.delete_filing(stale)
    published = storage.publish_bm25()  # distributed: the single BM25 publisher merges the shards
    if published:
        context.log.info(published)
    bm25 = storage.open_bm25()
    for fid, variant in drop_filings_not_in(finrag.paths, wh, active, CHUNKING_VARIANTS):
        context.log.info(f"removing {fid} from chunking variant {variant} (no longer in the catalog)")
    indexed = sorted(active & set(bm25.filing_ids()) & set(vectors.filing_ids()))
    counts = {fid: bm25.count(fid) for fid in indexed}
    state = stable_id(json.dumps(counts, sort_keys=True), vectors.embedder.name)
    wh.replace_rows("core.corpus_versions", [{
        "corpus_state": state, "filing_ids": json.dumps(indexed), "n_filings": len(indexed),
        "n_chunks": sum(counts.values()), "embedder": vectors.embedder.name}], where={"corpus_state": state})
    return dg.MaterializeResult(metadata={
        "dagster/row_count": dg.MetadataValue.int(len(indexed)),  # one row per filing in the corpus
        "corpus_state": state, "filings": len(indexed), "chunks": sum(counts.values()),
        "per_filing": dg.MetadataValue.json(counts),
    })
