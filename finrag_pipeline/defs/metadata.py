"""Metadata every asset shares: row counts (``dagster/row_count``, which the UI charts and shows in the
asset's header) and, for a partition, the corpus total beside it, so one filing's figure is never read
as the whole."""

import dagster as dg

from finrag_pipeline.core.warehouse import Warehouse


def row_counts(wh: Warehouse, table: str, filing_id: str | None = None, where: str = "") -> dict[str, object]:
    """``dagster/row_count`` of ``table`` for ``filing_id`` (or the whole table), and the total over
    every filing as ``rows_all_filings`` when a filing is given. ``where`` narrows both (SQL, trusted)."""
    extra = f" AND ({where})" if where else ""
    total = int(wh.query_df(f"SELECT count(*) AS n FROM {table} WHERE TRUE{extra}").iloc[0, 0])
    if filing_id is None:
        return {"dagster/row_count": dg.MetadataValue.int(total)}
    n = int(wh.query_df(f"SELECT count(*) AS n FROM {table} WHERE filing_id = ?{extra}", [filing_id]).iloc[0, 0])
    return {"dagster/row_count": dg.MetadataValue.int(n), "rows_all_filings": dg.MetadataValue.int(total)}
