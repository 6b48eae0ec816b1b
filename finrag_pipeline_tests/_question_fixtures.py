"""What the tests of the hand-written FinanceBench files share: the 8 sample filings' names, a filing context built
from a file's page fixture (evidence_pages*.json), and core.pages of an ingested demo home, read only."""

from __future__ import annotations

import os
from pathlib import Path

from finrag_pipeline.core.chunking import chunk_filing
from finrag_pipeline.core.models import FilingMeta, Page
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.qa.importers import FilingContext

SAMPLE_DOCS = {"APPLE_2021_10K", "APPLE_2022_10K", "AMAZON_2022_10K", "BOEING_2021_10K", "MICROSOFT_2022_10K",
               "aapl-10-k-2024-11-01", "amzn-10-k-2025-02-07", "nvda-10-k-2025-02-26"}


def fixture_context(doc: str, entry: dict, with_chunks: bool = True) -> FilingContext:
    """The importer's view of sample filing ``doc`` from its page-fixture ``entry`` (filing_id, n_pages, pages)."""
    fid = entry["filing_id"]
    suffix = ".pdf" if doc.isupper() else ".html"
    meta = FilingMeta(fid, "0" * 64, f"/x/{doc}{suffix}", f"{doc}{suffix}", suffix[1:], doc.split("_")[0], None,
                      None, "10-K", 2022, None, n_pages=entry["n_pages"])
    pages = [Page(fid, int(n), text, None, None, char_count=len(text)) for n, text in sorted(entry["pages"].items())]
    return FilingContext(meta, pages, chunk_filing(meta, pages, []) if with_chunks else [])


def demo_home_pages() -> dict[str, dict[int, str]] | None:
    """core.pages of an ingested home by sample file stem and page number, read only: FINRAG_DEMO_HOME, else the
    checkout's own .finrag (conftest points FINRAG_HOME at a throwaway home, so that one is not read). None when
    there is no such home, a writer holds it, or it lacks one of the 8 sample filings."""
    db = Path(os.environ.get("FINRAG_DEMO_HOME") or REPO_ROOT / ".finrag") / "warehouse.duckdb"
    if not db.exists():
        return None
    import duckdb

    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error:                       # a writer holds it: nothing to check against now
        return None
    try:
        rows = con.execute("SELECT f.original_name, p.page_number, p.text FROM core.pages p "
                           "JOIN core.filings f USING (filing_id)").fetchall()
    except duckdb.Error:
        return None
    finally:
        con.close()
    out: dict[str, dict[int, str]] = {}
    for name, page, text in rows:
        out.setdefault(Path(name).stem, {})[int(page)] = text or ""
    return out if set(out) >= SAMPLE_DOCS else None
