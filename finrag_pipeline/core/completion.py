"""Is a filing really ingested? Counts, not assumptions.

A filing is complete when its pages match ``core.filings.n_pages``, it has leaf chunks, and the Tantivy
documents and LanceDB rows of the filing both equal its leaf chunks. A process killed between two stages
(say after the BM25 commit, before the LanceDB merge) leaves a filing that fails this check, and the next
run re-ingests it: every stage replaces the filing's rows, so the repair is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from finrag_pipeline.core.storage.interface import Storage
from finrag_pipeline.core.warehouse import Warehouse


@dataclass
class Completeness:
    filing_id: str
    expected_pages: int
    pages: int
    leaf_chunks: int
    tantivy_docs: int
    lance_rows: int
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        return (f"{self.filing_id}: pages {self.pages}/{self.expected_pages}, leaf chunks {self.leaf_chunks}, "
                f"tantivy {self.tantivy_docs}, lancedb {self.lance_rows}"
                + (f" ({'; '.join(self.problems)})" if self.problems else ""))


def warehouse_counts(warehouse: Warehouse, filing_ids: list[str]) -> dict[str, tuple[int, int, int]]:
    """filing id -> (expected pages, pages, leaf chunks), in one query."""
    if not filing_ids:
        return {}
    marks = ", ".join("?" * len(filing_ids))
    df = warehouse.query_df(f"""
        SELECT f.filing_id, coalesce(f.n_pages, 0) AS expected,
          (SELECT count(*) FROM core.pages p WHERE p.filing_id = f.filing_id) AS pages,
          (SELECT count(*) FROM core.chunks c WHERE c.filing_id = f.filing_id AND c.is_leaf) AS leaves
        FROM core.filings f WHERE f.filing_id IN ({marks})""", filing_ids)
    return {r.filing_id: (int(r.expected), int(r.pages), int(r.leaves)) for r in df.itertuples()}


def check_filings(warehouse: Warehouse, storage: Storage, filing_ids: list[str]) -> dict[str, Completeness]:
    """Completeness of each filing (see the module docstring), counting the index documents where ``storage``
    keeps them (core/storage/seam.py: the local indexes, or each filing's shard and LanceDB on the object store)."""
    wh = warehouse_counts(warehouse, filing_ids)
    bm25 = storage.bm25_counts(filing_ids)
    vectors = storage.lance_counts(filing_ids)
    out: dict[str, Completeness] = {}
    for fid in filing_ids:
        expected, pages, leaves = wh.get(fid, (0, 0, 0))
        c = Completeness(fid, expected, pages, leaves, bm25.get(fid, 0), vectors.get(fid, 0))
        if pages == 0 or pages != expected:
            c.problems.append(f"{pages} pages stored, {expected} expected")
        if leaves == 0:
            c.problems.append("no leaf chunks")
        if c.tantivy_docs != leaves:
            c.problems.append(f"{c.tantivy_docs} Tantivy documents for {leaves} leaf chunks")
        if c.lance_rows != leaves:
            c.problems.append(f"{c.lance_rows} LanceDB rows for {leaves} leaf chunks")
        out[fid] = c
    return out
