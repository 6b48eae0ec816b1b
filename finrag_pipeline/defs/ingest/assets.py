"""Ingest: a registered filing -> pages, table rows, XBRL facts -> chunks (one partition per filing)."""


import time

import dagster as dg

from finrag_pipeline.core.catalog import (
    ENVIRONMENT_ERRORS,
    Registration,
    load_filing,
    log_ingest,
    reject_filing,
    write_filing,
)
from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.chunking.config import load_chunking_config
from finrag_pipeline.core.ingest.errors import IngestError, remedy
from finrag_pipeline.core.ingest.limits import load_ingest_limits
from finrag_pipeline.core.ingest_pipeline import parse_filing_ahead
from finrag_pipeline.core.records import load_pages, load_table_rows
from finrag_pipeline.core.warehouse import rows_of
from finrag_pipeline.defs.metadata import row_counts
from finrag_pipeline.defs.partitions import filings_partitions
from finrag_pipeline.defs.progress import logged_progress
from finrag_pipeline.defs.resources import FinragResource

GROUP = "ingest"


@dg.asset(
    partitions_def=filings_partitions, group_name=GROUP, kinds={"duckdb"},
    description="The registered filing: identity (content hash), company, ticker, fiscal year and period "
                "end read from the document (dei: facts or the PDF cover page). Table core.filings.",
)
def filings(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
    meta = load_filing(finrag.warehouse, context.partition_key)
    return dg.MaterializeResult(metadata={
        **row_counts(finrag.warehouse, "core.filings", context.partition_key),
        "company": meta.company, "ticker": meta.ticker or "", "fiscal_year": meta.fiscal_year,
        "period_end_date": str(meta.period_end_date), "form_type": meta.form_type,
        "format": meta.source_format, "source": dg.MetadataValue.path(meta.source_path),
        "metadata_source": meta.metadata_source, "sha256": meta.content_sha256,
    })


@dg.multi_asset(
    specs=[
        dg.AssetSpec("pages", deps=["filings"], kinds={"duckdb"}, group_name=GROUP,
                     description="Text per page (physical PDF page, or CSS page break in HTML) with its "
                                 "10-K section. Table core.pages."),
        dg.AssetSpec("table_rows", deps=["filings"], kinds={"duckdb"}, group_name=GROUP,
                     description="One row per table record with headers, column periods, unit, title "
                                 "and page. Table core.table_rows."),
        dg.AssetSpec("xbrl_facts", deps=["filings"], kinds={"duckdb"}, group_name=GROUP,
                     description="Every numeric inline-XBRL fact: concept, value (scale and sign applied), "
                                 "unit, period, dimensions, page. Table core.xbrl_facts."),
    ],
    partitions_def=filings_partitions,
)
def parsed_filing(context: dg.AssetExecutionContext, finrag: FinragResource):
    """Parse once, write three tables. PDF text and word boxes come from pypdfium2 (~25 ms a page); tables
    are rebuilt from word columns only on pages that look like tables (pdfplumber stays an option)."""
    wh = finrag.partition_warehouse(context.partition_key)  # distributed: ingest rows to the object store
    meta = load_filing(wh, context.partition_key)
    try:
        with logged_progress(context):
            # finrag ingest parses the next filing in a worker process while this one runs (ingest_pipeline.py)
            parsed = parse_filing_ahead(finrag.local_filing(meta))
    except ENVIRONMENT_ERRORS:
        raise
    except Exception as exc:  # every failure is a status: quarantined, not retried until something changes
        status, message = ((exc.status, exc.message) if isinstance(exc, IngestError)
                           else ("error", f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"))
        reject_filing(wh, finrag.paths, meta, status, message, stage="parse")
        raise dg.Failure(description=f"{meta.filing_id}: [{status}] {message}",
                         metadata={"status": status, "remedy": remedy(status)}) from exc
    if parsed.filing_id != meta.filing_id:
        raise dg.Failure(f"parsed filing id {parsed.filing_id} differs from partition {meta.filing_id}; "
                         "the sidecar or the document changed since registration: re-register the file")
    meta.n_pages = parsed.meta.n_pages
    write_filing(wh, meta)
    fid = meta.filing_id
    wh.replace_rows("core.pages", rows_of(parsed.pages), where={"filing_id": fid})
    wh.replace_rows("core.table_rows", rows_of(parsed.table_rows), where={"filing_id": fid})
    wh.replace_rows("core.xbrl_facts", rows_of(parsed.facts), where={"filing_id": fid})
    log_ingest(wh, Registration(meta.original_name, meta.content_sha256, "parsed",
                                f"{len(parsed.pages)} pages, {len(parsed.table_rows)} table rows, "
                                f"{len(parsed.facts)} facts", fid), meta.source_path, stage="parse")
    for note in (n for n in parsed.notes if n.startswith("partial:")):
        log_ingest(wh, Registration(meta.original_name, meta.content_sha256, "partial", note, fid),
                   meta.source_path, stage="parse")
        context.log.warning(f"{fid}: {note}")

    if meta.review_reasons:   # the review queue: registered and ingested, a person should look at it
        context.log_event(dg.AssetObservation(asset_key="pages", partition=fid, metadata={
            "review_queue": dg.MetadataValue.text("; ".join(meta.review_reasons)),
            "field_sources": dg.MetadataValue.json(meta.field_sources),
            "field_confidence": dg.MetadataValue.json(meta.field_confidence)}))
        context.log.warning(f"{fid} is in the review queue: {'; '.join(meta.review_reasons)}")
    timings = {k: round(v, 2) for k, v in parsed.timings.items()}
    n_sections = len({p.section for p in parsed.pages if p.section})
    yield dg.MaterializeResult(asset_key="pages", metadata={
        **row_counts(wh, "core.pages", fid),
        "pages": len(parsed.pages), "sections": n_sections,
        "pages_with_tables": sum(p.has_tables for p in parsed.pages),
        "seconds": dg.MetadataValue.json(timings),
    })
    yield dg.MaterializeResult(asset_key="table_rows", metadata={
        **row_counts(wh, "core.table_rows", fid),
        "rows": len(parsed.table_rows), "tables": len({r.table_id for r in parsed.table_rows}),
        "preview": dg.MetadataValue.md(table_preview_markdown(parsed.table_rows)),
    })
    yield dg.MaterializeResult(asset_key="xbrl_facts", metadata={
        **row_counts(wh, "core.xbrl_facts", fid),
        "facts": len(parsed.facts), "concepts": len({f.concept for f in parsed.facts}),
    })


class ChunkingRunConfig(dg.Config):
    """Launchpad overrides of assets_config/ingest.yaml (chunking section)."""

    variant: str = "default"
    chunk_size: int | None = None
    overlap: int | None = None


@dg.asset(
    partitions_def=filings_partitions, group_name=GROUP, deps=["pages", "table_rows"], kinds={"duckdb"},
    description="Sentence-aware prose windows and one standalone chunk per table row, with parent links "
                "(row -> table, window -> section) and stable ids. Table core.chunks.",
)
def chunks(context: dg.AssetExecutionContext, config: ChunkingRunConfig,
           finrag: FinragResource) -> dg.MaterializeResult:
    fid = context.partition_key
    wh = finrag.partition_warehouse(fid)
    overrides = {k: v for k, v in (("chunk_size", config.chunk_size), ("overlap", config.overlap)) if v is not None}
    with finrag.configured():  # ingest.yaml of the resource's config dir
        chunking = load_chunking_config(config.variant, **overrides)
        limit = load_ingest_limits().max_leaf_chunks
    t0 = time.perf_counter()
    meta = load_filing(wh, fid)
    out = chunk_filing(meta, load_pages(wh, fid), load_table_rows(wh, fid), chunking)
    n_leaves = sum(c.is_leaf for c in out)
    if n_leaves > limit:
        message = f"{n_leaves:,} leaf chunks, over limits.max_leaf_chunks {limit:,} (assets_config/ingest.yaml)"
        reject_filing(wh, finrag.paths, meta, "too_large", message, stage="chunks")
        raise dg.Failure(description=f"{fid}: [too_large] {message}",
                         metadata={"status": "too_large", "remedy": remedy("too_large")})
    wh.replace_rows("core.chunks", rows_of(out), where={"filing_id": fid})
    by_type: dict[str, int] = {}
    for c in out:
        by_type[c.chunk_type] = by_type.get(c.chunk_type, 0) + 1
    return dg.MaterializeResult(metadata={
        **row_counts(wh, "core.chunks", fid),
        "chunks": len(out), "leaves": sum(c.is_leaf for c in out), "by_type": dg.MetadataValue.json(by_type),
        "chunking": chunking.name, "chunking_fingerprint": chunking.fingerprint(),
        "seconds": round(time.perf_counter() - t0, 2),
    })


def table_preview_markdown(rows, max_rows: int = 12) -> str:
    """The first statement-like table (the one with most numeric cells) as a markdown table."""
    if not rows:
        return "_no tables parsed_"
    tables: dict[str, list] = {}
    for r in rows:
        tables.setdefault(r.table_id, []).append(r)
    best = max(tables.values(), key=lambda rs: sum(c.value is not None for r in rs for c in r.cells))
    headers = [c.header for c in best[0].cells]
    lines = [f"**{best[0].table_title or best[0].table_id}** (page {best[0].page_number}, {best[0].unit or 'no unit'})",
             "", "| line item | " + " | ".join(headers) + " |", "|---" * (len(headers) + 1) + "|"]
    for r in best[:max_rows]:
        lines.append(f"| {r.row_label} | " + " | ".join(c.value_text for c in r.cells) + " |")
    return "\n".join(lines)
