"""Chunking variants as partitions: each (filing, chunking variant) chunked and indexed in its own partition,
so the UI shows per filing x chunking what was built and evaluation never builds indexes itself.

The default chunking stays the filings-partitioned ``chunks`` / ``bm25_index`` / ``vector_index`` (the QA
evidence cites its chunk ids). The chunking dimension holds the other variants of ingest.yaml
(defs/partitions.py); with none there, :data:`VARIANT_ASSETS` is empty and the job is absent.
"""

import json
import time

import dagster as dg

from finrag_pipeline.core.chunking.config import load_chunking_config
from finrag_pipeline.core.ingest.limits import load_ingest_limits
from finrag_pipeline.core.ingest_pipeline import filing_embedding_inputs
from finrag_pipeline.core.models import stable_id
from finrag_pipeline.core.variants import (
    VARIANT_CHUNKS_TABLE,
    chunk_filing_variant,
    lancedb_dir,
    load_variant_chunks,
    open_lance,
    open_tantivy,
    tantivy_dir,
    write_variant_chunks,
)
from finrag_pipeline.defs.automation.conditions import BUILD_VARIANT
from finrag_pipeline.defs.automation.jobs import pool_tags
from finrag_pipeline.defs.metadata import row_counts
from finrag_pipeline.defs.partitions import (
    CHUNKING_DIMENSION,
    CHUNKING_VARIANTS,
    FILING_DIMENSION,
    evaluated_variants,
    filing_x_chunking_partitions,
    on_filing_dimension,
)
from finrag_pipeline.defs.resources import EmbedderResource, FinragResource

GROUP = "variants"
# (filing, variant) partitions of variant_chunks depend on the filing's parse, whatever the variant.
_ON_FILING = on_filing_dimension()


def _filing_and_variant(context: dg.AssetExecutionContext) -> tuple[str, str]:
    keys = context.partition_key.keys_by_dimension
    return keys[FILING_DIMENSION], keys[CHUNKING_DIMENSION]


def variants_code_version(variants: list[str]) -> str:
    """A variant's partitions rebuild when any variant's settings change (one code version per asset, not
    per partition); the default chunking's settings are not part of it."""
    return stable_id(json.dumps({v: load_chunking_config(v).fingerprint() for v in variants}, sort_keys=True),
                     length=12)


def build_variant_assets(partitions_def: dg.MultiPartitionsDefinition, code_version: str,
                         automation_condition: dg.AutomationCondition | None = BUILD_VARIANT,
                         ) -> list[dg.AssetsDefinition]:
    """The three variant assets over ``partitions_def`` (filing x chunking): the code location's use
    :data:`VARIANT_ASSETS`; tests build them over other variant sets."""
    common = {"partitions_def": partitions_def, "group_name": GROUP,
              "automation_condition": automation_condition, "code_version": code_version}

    @dg.asset(
        deps=[dg.AssetDep("pages", partition_mapping=_ON_FILING), dg.AssetDep("table_rows", partition_mapping=_ON_FILING)],
        kinds={"duckdb"}, **common,
        description="The filing's pages and table rows cut by one non-default chunking variant of "
                    "assets_config/ingest.yaml (chunking.variants). Table core.variant_chunks "
                    "(rows per chunking x filing_id, with the settings' fingerprint).",
    )
    def variant_chunks(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        fid, variant = _filing_and_variant(context)
        wh = finrag.warehouse
        with finrag.configured():
            config = load_chunking_config(variant)
            limit = load_ingest_limits().max_leaf_chunks
        t0 = time.perf_counter()
        chunks = chunk_filing_variant(wh, fid, config)
        n_leaves = sum(c.is_leaf for c in chunks)
        if n_leaves > limit:  # the variant is refused; the filing itself stays (its default chunks passed)
            raise dg.Failure(description=f"{fid} x {variant}: {n_leaves:,} leaf chunks, over limits.max_leaf_chunks "
                                         f"{limit:,} (assets_config/ingest.yaml)")
        write_variant_chunks(wh, fid, config, chunks)
        return dg.MaterializeResult(metadata={
            **row_counts(wh, VARIANT_CHUNKS_TABLE, fid, where=f"chunking = '{variant}'"),
            "chunks": len(chunks), "leaves": n_leaves, "chunking": variant,
            "chunking_fingerprint": config.fingerprint(), "chunk_size": config.chunk_size,
            "overlap": config.overlap, "seconds": round(time.perf_counter() - t0, 2),
        })

    @dg.asset(
        deps=[variant_chunks], kinds={"tantivy"}, **common,
        description="The variant's leaf chunks of the filing in the variant's own Tantivy BM25 index "
                    "(FINRAG_HOME/indexes/variants/<variant>/tantivy), replaced in one commit.",
    )
    def variant_bm25_index(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        fid, variant = _filing_and_variant(context)
        leaves = load_variant_chunks(finrag.warehouse, variant, fid, leaves_only=True)
        t0 = time.perf_counter()
        index = open_tantivy(finrag.paths, variant)
        n = index.upsert_filing(fid, leaves)
        return dg.MaterializeResult(metadata={
            "dagster/row_count": dg.MetadataValue.int(n), "rows_all_filings": dg.MetadataValue.int(index.count()),
            "documents": n, "chunking": variant, "seconds": round(time.perf_counter() - t0, 2),
            "path": dg.MetadataValue.path(str(tantivy_dir(finrag.paths, variant))),
        })

    @dg.asset(
        deps=[variant_chunks], kinds={"lancedb"}, **common,
        description="The variant's leaf chunks of the filing embedded (the embedder resource) in the variant's "
                    "own LanceDB table (FINRAG_HOME/indexes/variants/<variant>/lancedb); texts the default "
                    "chunking shares (table rows) come from the embedding cache.",
    )
    def variant_vector_index(context: dg.AssetExecutionContext, finrag: FinragResource,
                             embedder: EmbedderResource) -> dg.MaterializeResult:
        fid, variant = _filing_and_variant(context)
        leaves = load_variant_chunks(finrag.warehouse, variant, fid, leaves_only=True)
        t0 = time.perf_counter()
        index = open_lance(finrag.paths, variant, embedder.get(finrag.config_dir))
        with finrag.configured():  # embedder.yaml `inputs`, as the default vector_index
            inputs = filing_embedding_inputs(finrag.warehouse, fid, leaves)
        n = index.upsert_filing(fid, leaves, show_progress=False, embed_inputs=inputs)
        return dg.MaterializeResult(metadata={
            "dagster/row_count": dg.MetadataValue.int(n), "rows_all_filings": dg.MetadataValue.int(index.count()),
            "rows": n, "newly_embedded": index.last_encoded, "embedder": index.embedder.name, "chunking": variant,
            "seconds": round(time.perf_counter() - t0, 2),
            "path": dg.MetadataValue.path(str(lancedb_dir(finrag.paths, variant))),
        })

    return [variant_chunks, variant_bm25_index, variant_vector_index]


# Automation builds variant partitions only while eval_matrix.yaml evaluates a variant (then every variant of
# the dimension: one automation condition per asset, not per partition); otherwise they are built on demand.
VARIANT_ASSETS: list[dg.AssetsDefinition] = (
    build_variant_assets(filing_x_chunking_partitions, variants_code_version(CHUNKING_VARIANTS),
                         automation_condition=BUILD_VARIANT if evaluated_variants() else None)
    if filing_x_chunking_partitions else [])
VARIANT_INDEX_KEYS = [dg.AssetKey("variant_bm25_index"), dg.AssetKey("variant_vector_index")] if VARIANT_ASSETS else []

VARIANTS_JOB_NAME = "build_chunking_variants"
variants_job = dg.define_asset_job(
    VARIANTS_JOB_NAME, selection=dg.AssetSelection.groups(GROUP), partitions_def=filing_x_chunking_partitions,
    tags=pool_tags("ingest"),
    description="One (filing, chunking variant) partition: re-chunk with the variant's settings and index it "
                "(BM25 and vectors). Started by `finrag variants build` and by `finrag eval --chunking` for "
                "the partitions an evaluation needs; automation runs the same assets for new filings/variants.",
) if VARIANT_ASSETS else None
