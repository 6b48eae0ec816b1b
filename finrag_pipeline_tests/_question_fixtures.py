"""What the tests of the hand-written FinanceBench files share: the 8 sample filings' names, a filing context built
from a file's page fixture (evidence_pages*.json), and core.pages of an ingested demo home, read only."""

from __future__ import annotations

import os
from pathlib import Path

from finrag_pipeline.core.chunking import chunk_filing
from finrag_pipeline.core.models import FilingMeta, Page
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.qa.importers import FilingContext, import_financebench

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


def narrative_import_misses(path: Path, records: list[dict], pages: dict[str, dict], split: str) -> list[str]:
    """The ids of a narrative FinanceBench file's records that the importer does not take as accepted narrative items
    of their filing (built from the page fixture ``pages``), with their split, set name and 0-indexed evidence pages
    (every snippet found on its page). Ids only: a held-out file's text never reaches a failure message."""
    imported = import_financebench(path, [fixture_context(doc, pages[doc]) for doc in sorted(pages)])
    assert imported.log == [{"stage": "import", "reason": "imported", "count": len(records)}]
    by_id = {i.metadata["financebench_id"]: i for i in imported.items}
    assert set(by_id) == {r["financebench_id"] for r in records}
    wrong = []
    for r in records:
        item = by_id[r["financebench_id"]]
        ok = (item.filing_id == pages[r["doc_name"]]["filing_id"] and item.status == "accepted"
              and item.question_type == "narrative" and item.answer_values == [] and item.answer_choice is None
              and item.metadata["split"] == split and item.metadata["external_set"] == Path(path).stem
              and [sorted({p.page for p in g}) for g in item.evidence] == [[e["evidence_page_num"] + 1]
                                                                           for e in r["evidence"]]
              and all(ev["overlap"] >= 0.95 for ev in item.metadata["evidence_pages"]))
        if not ok:
            wrong.append(r["financebench_id"])
    return wrong
