"""The sample 10-K filings (data/sample_filings) parsed once per test process, for the analyst tests.

Whole filings, not excerpts: the calculator must find the consolidated statement line among MD&A
summaries, segment notes and other tables that repeat a label. Parsing the four PDFs and the Apple
FY2024 inline-XBRL file takes ~7 s on 2 cores. Figures the tests expect were read in the PDFs by hand
(physical page numbers, 1-based):
  BOEING_2021_10K.pdf     p.60 Consolidated Statements of Operations: Total revenues 62,286 / 58,158 / 76,559
                          (2021/2020/2019); p.28 and p.66 repeat it in segment tables ("Total", "Total revenues")
  MICROSOFT_2022_10K.pdf  p.57 Income Statements: Total revenue 198,270; Operating income 83,383 (FY2022);
                          p.43-44 summary and segment tables
  APPLE_2022_10K.pdf      p.32 Statements of Operations: Total net sales 394,328; Gross margin 170,782 (FY2022);
                          p.26 "Total gross margin percentage 43.3%"
  AMAZON_2022_10K.pdf     p.37 Statements of Operations: Operating income 22,899 / 24,879 / 12,248 (2020/2021/2022),
                          Total net sales 513,983 (2022); p.39 Balance Sheets: Property and equipment, net
                          160,281 / 186,715 (2021/2022); p.36 cash flows (no dividends line); p.24 segments
  aapl-10-k-2024-11-01.html  FY2024 (ended 2024-09-28): Net income 93,736; Total net sales 391,035;
                          Operating income 123,216 (XBRL facts and the statement table)
"""

from __future__ import annotations

import functools

from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR

BOEING, MSFT, APPLE, AMZN = ("BOEING_2021_10K.pdf", "MICROSOFT_2022_10K.pdf", "APPLE_2022_10K.pdf",
                             "AMAZON_2022_10K.pdf")
APPLE_2024 = "aapl-10-k-2024-11-01.html"
SAMPLES = (BOEING, MSFT, APPLE, AMZN, APPLE_2024)


@functools.lru_cache(maxsize=1)
def parsed_samples() -> dict:
    """File name -> ParsedFiling (parsed once per process; tests must not mutate them)."""
    from finrag_pipeline.core.ingest.parse import parse_filing

    return {name: parse_filing(SAMPLE_FILINGS_DIR / name) for name in SAMPLES}


def hits_from_chunks(chunks, wanted) -> list:
    """Hits (rank order) for the leaf chunks ``wanted(chunk)`` selects."""
    from finrag_pipeline.core.models import Hit

    chosen = [c for c in chunks if c.is_leaf and wanted(c)]
    return [Hit(chunk_id=c.chunk_id, score=1.0 / (i + 1), rank=i + 1, filing_id=c.filing_id, page_start=c.page_start,
                page_end=c.page_end, chunk_type=c.chunk_type, text=c.text, stage="test", section=c.section,
                fiscal_year=c.fiscal_year) for i, c in enumerate(chosen)]


def store_parsed(home, parsed_filings) -> None:
    """Write parsed filings into FINRAG_HOME ``home``: catalog, pages, table rows, facts, chunks and the
    Tantivy index (what `finrag ask` reads), without embeddings. Shared by the CLI tests and
    benchmarks/analyst.py."""
    from finrag_pipeline.core.catalog import write_filing
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.warehouse import Warehouse, rows_of

    paths = FinragPaths.from_env(str(home)).ensure()
    wh, index = Warehouse(paths.warehouse), TantivyIndex(paths.tantivy_dir)
    for parsed in parsed_filings:
        fid = parsed.meta.filing_id
        write_filing(wh, parsed.meta)
        for table, rows in (("core.pages", parsed.pages), ("core.table_rows", parsed.table_rows),
                            ("core.xbrl_facts", parsed.facts)):
            wh.replace_rows(table, rows_of(rows), where={"filing_id": fid})
        chunks = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows)
        wh.replace_rows("core.chunks", rows_of(chunks), where={"filing_id": fid})
        index.upsert_filing(fid, chunks)


class ChunkTable:
    """The part of the warehouse the narrative window reads: core.chunks, in an in-memory DuckDB, holding the given
    parsed chunks (``query_df`` as the warehouse offers it)."""

    def __init__(self, chunks):
        import duckdb
        import pandas as pd

        self.con = duckdb.connect()
        frame = pd.DataFrame([c.to_row() for c in chunks])    # the warehouse's columns (metadata as JSON text)
        self.con.execute("CREATE SCHEMA core")
        self.con.register("frame", frame)
        self.con.execute("CREATE TABLE core.chunks AS SELECT * FROM frame")

    def query_df(self, sql, params=None):
        return self.con.execute(sql, params or []).df()
