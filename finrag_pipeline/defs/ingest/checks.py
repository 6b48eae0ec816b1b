"""Asset checks on what ingest writes, backed by great-expectations. Blocking checks stop what follows:
an empty-text filing or duplicate chunk ids would poison chunks, indexes and every evaluation.
Partitioned like their assets: each filing's result is recorded for that filing, so one failing filing is
never hidden by the next passing one."""

import warnings
from collections import Counter

import dagster as dg
import pandas as pd

from finrag_pipeline.core.catalog import load_filing, reject_filing
from finrag_pipeline.core.ingest.inspect import PRIMARY_STATEMENTS
from finrag_pipeline.core.ingest.statements import statement_search
from finrag_pipeline.core.ingest.tables import currency_unit_violations
from finrag_pipeline.core.quality import ValidationOutcome, validate
from finrag_pipeline.core.records import load_table_rows
from finrag_pipeline.defs.partitions import filings_partitions
from finrag_pipeline.defs.resources import FinragResource

# Partitioned asset checks are a preview API; the warning is the same at every import.
warnings.filterwarnings("ignore", message="Specifying a partitions_def on an AssetCheckSpec",
                        category=dg.PreviewWarning)


def _per_filing(metadata: dict) -> dict:
    """Counts as text: the UI plots numeric check metadata across executions, which would draw one line
    through different filings as if it were a trend."""
    return {k: dg.MetadataValue.text(str(v)) if isinstance(v, int | float) and not isinstance(v, bool) else v
            for k, v in metadata.items()}


def _result(outcome: ValidationOutcome, **metadata) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=outcome.success, metadata=_per_filing({
        "expectations": dg.MetadataValue.md(outcome.summary_markdown()), **metadata}))


def _quarantine_if_failed(context: dg.AssetCheckExecutionContext, finrag: FinragResource,
                          result: dg.AssetCheckResult) -> dg.AssetCheckResult:
    """A blocking data check that fails quarantines its filing (status check_failed, with the reason): out
    of the active catalog and remembered under its retry key, so later ingests of other files neither
    re-run it nor fail because of it; new bytes, a new sidecar or a new parser version retry it."""
    if result.passed:
        return result
    fid = context.partition_key
    wh = finrag.partition_warehouse(fid)
    meta = load_filing(wh, fid)
    failed = ", ".join(f"{k}={getattr(v, 'value', v)}" for k, v in (result.metadata or {}).items()
                       if k != "expectations")
    reason = f"blocking check {context.check_specs[0].name} failed ({failed[:300]})"
    reject_filing(wh, finrag.paths, meta, "check_failed", reason, stage=f"check:{context.check_specs[0].name}")
    context.log.error(f"{fid} quarantined: {reason}")
    return dg.AssetCheckResult(passed=False, metadata={**(result.metadata or {}),
                                                        "quarantined": dg.MetadataValue.text(reason)})


@dg.asset_check(partitions_def=filings_partitions, asset="pages", blocking=True, description="Text PDFs and HTML filings yield non-empty pages "
                "(at least 90%), and every page number lies within the document.")
def pages_have_text(context: dg.AssetCheckExecutionContext, finrag: FinragResource) -> dg.AssetCheckResult:
    fid = context.partition_key
    meta = load_filing(finrag.partition_warehouse(fid), fid)
    df = finrag.partition_warehouse(fid).query_df("SELECT page_number, char_count FROM core.pages WHERE filing_id = ?", [fid])
    outcome = validate(df, [
        ("ExpectTableRowCountToBeBetween", {"min_value": 1}),
        ("ExpectColumnValuesToBeBetween", {"column": "char_count", "min_value": 1, "mostly": 0.9}),
        ("ExpectColumnValuesToBeBetween", {"column": "page_number", "min_value": 1, "max_value": max(meta.n_pages, 1)}),
        ("ExpectColumnValuesToBeUnique", {"column": "page_number"}),
    ], name="pages")
    return _quarantine_if_failed(context, finrag, _result(outcome, pages=len(df)))


@dg.asset_check(partitions_def=filings_partitions, asset="table_rows", blocking=False, description="Every table row has a label and column "
                "headers; most rows know the period of their columns.")
def table_rows_have_headers_and_periods(context: dg.AssetCheckExecutionContext,
                                        finrag: FinragResource) -> dg.AssetCheckResult:
    fid = context.partition_key
    rows = load_table_rows(finrag.partition_warehouse(fid), fid)
    df = pd.DataFrame({"row_label": [r.row_label or None for r in rows],
                       "n_headers": [len(r.headers) for r in rows],
                       "n_periods": [sum(c.period is not None for c in r.cells) for r in rows]})
    outcome = validate(df, [
        ("ExpectColumnValuesToNotBeNull", {"column": "row_label"}),
        ("ExpectColumnValuesToBeBetween", {"column": "n_headers", "min_value": 1}),
        ("ExpectColumnValuesToBeBetween", {"column": "n_periods", "min_value": 1, "mostly": 0.7}),
    ], name="table_rows")
    # A warning, not an error: some real tables (equity roll-forwards, RSU activity) carry no period columns.
    return dg.AssetCheckResult(passed=outcome.success, severity=dg.AssetCheckSeverity.WARN, metadata=_per_filing({
        "expectations": dg.MetadataValue.md(outcome.summary_markdown()), "rows": len(df),
        "rows_with_a_period": int((df["n_periods"] > 0).sum()) if len(df) else 0}))


@dg.asset_check(partitions_def=filings_partitions, asset="table_rows", blocking=False, description="No row holding a percentage or a per-share "
                "value carries a currency unit (units are per row: the table's \"in millions\" is only the default); "
                "each primary statement is tagged.")
def table_row_units_are_consistent(context: dg.AssetCheckExecutionContext,
                                   finrag: FinragResource) -> dg.AssetCheckResult:
    fid = context.partition_key
    rows = load_table_rows(finrag.partition_warehouse(fid), fid)
    bad = currency_unit_violations(rows)
    tagged = {r.statement_type for r in rows}
    missing = [s for s in (*PRIMARY_STATEMENTS, "equity") if s not in tagged]
    searched = ""
    if missing:   # where a missing statement was looked for: the table pages, and any page headed as one
        texts = finrag.partition_warehouse(fid).query_df(
            "SELECT text FROM core.pages WHERE filing_id = ? ORDER BY page_number", [fid])["text"].tolist()
        searched = "; ".join(f"{kind}: titles and line items of {len({r.page_number for r in rows})} table pages, "
                             f"pages headed as one {statement_search(texts, kind) or 'none'}" for kind in missing)
    examples = [f"p{r.page_number} {' > '.join(r.row_path)}: {r.unit}" for r in bad[:10]]
    return dg.AssetCheckResult(passed=not bad, metadata=_per_filing({
        "rows": len(rows), "rows_with_currency_on_percent_or_per_share": len(bad),
        "examples": dg.MetadataValue.md("\n".join(f"- `{e}`" for e in examples) or "none"),
        "statements_missing": ", ".join(missing) or "none",
        "statements_searched": searched or "-",
        "units": dg.MetadataValue.json(dict(Counter(r.unit or "none" for r in rows)))}))


@dg.asset_check(partitions_def=filings_partitions, asset="xbrl_facts", blocking=True, description="Every numeric fact has a concept, a unit, "
                "a period end and a value.")
def facts_have_units_and_periods(context: dg.AssetCheckExecutionContext,
                                 finrag: FinragResource) -> dg.AssetCheckResult:
    fid = context.partition_key
    df = finrag.partition_warehouse(fid).query_df(
        "SELECT concept, unit, period_end, value FROM core.xbrl_facts WHERE filing_id = ?", [fid])
    if df.empty:  # PDFs carry no XBRL: nothing to check is a pass, said so
        return dg.AssetCheckResult(passed=True, metadata=_per_filing({"facts": 0, "note": "no inline XBRL in this filing"}))
    outcome = validate(df, [
        ("ExpectColumnValuesToNotBeNull", {"column": c}) for c in ("concept", "unit", "period_end", "value")
    ], name="facts")
    return _quarantine_if_failed(context, finrag, _result(outcome, facts=len(df)))


@dg.asset_check(partitions_def=filings_partitions, asset="chunks", blocking=True, description="Chunk ids are unique; every table-row chunk "
                "has a parent table; pages lie within the document.")
def chunks_are_well_formed(context: dg.AssetCheckExecutionContext, finrag: FinragResource) -> dg.AssetCheckResult:
    fid = context.partition_key
    meta = load_filing(finrag.partition_warehouse(fid), fid)
    df = finrag.partition_warehouse(fid).query_df(
        "SELECT chunk_id, chunk_type, parent_id, page_start, page_end, length(text) AS n_chars "
        "FROM core.chunks WHERE filing_id = ?", [fid])
    rows = df[df["chunk_type"] == "table_row"]
    outcome = validate(df, [
        ("ExpectTableRowCountToBeBetween", {"min_value": 1}),
        ("ExpectColumnValuesToBeUnique", {"column": "chunk_id"}),
        ("ExpectColumnValuesToBeBetween", {"column": "page_start", "min_value": 1, "max_value": max(meta.n_pages, 1)}),
        ("ExpectColumnValuesToBeBetween", {"column": "n_chars", "min_value": 1}),
    ], name="chunks")
    orphan_rows = int(rows["parent_id"].isna().sum())
    return _quarantine_if_failed(context, finrag, dg.AssetCheckResult(
        passed=outcome.success and orphan_rows == 0, metadata=_per_filing({
            "expectations": dg.MetadataValue.md(outcome.summary_markdown()), "chunks": len(df),
            "table_row_chunks_without_parent": orphan_rows})))


def _index_count_check(asset: str, count_fn_name: str):
    @dg.asset_check(partitions_def=filings_partitions, asset=asset, name=f"{asset}_rows_equal_leaf_chunks", blocking=True,
                    description=f"The {asset} holds exactly the filing's leaf chunks (no duplicates, none missing).")
    def _check(context: dg.AssetCheckExecutionContext, finrag: FinragResource) -> dg.AssetCheckResult:
        fid = context.partition_key
        expected = int(finrag.partition_warehouse(fid).query_df(
            "SELECT count(*) AS n FROM core.chunks WHERE filing_id = ? AND is_leaf", [fid]).iloc[0, 0])
        storage = finrag.storage()  # distributed: BM25 counts the filing's shard (corpus_state publishes it)
        counts = storage.bm25_counts if count_fn_name == "tantivy" else storage.lance_counts
        actual = counts([fid])[fid]
        return dg.AssetCheckResult(passed=actual == expected,
                                   metadata=_per_filing({"index_rows": actual, "leaf_chunks": expected}))

    return _check


bm25_rows_equal_chunks = _index_count_check("bm25_index", "tantivy")
vector_rows_equal_chunks = _index_count_check("vector_index", "lance")
