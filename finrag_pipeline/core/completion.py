"""Is a filing really ingested? Counts, not assumptions.

A filing is complete when its pages match ``core.filings.n_pages``, it has leaf chunks, and the Tantivy
documents and LanceDB rows of the filing both equal its leaf chunks. A process killed between two stages
(say after the BM25 commit, before the LanceDB merge) leaves a filing that fails this check, and the next
run re-ingests it: every stage replaces the filing's rows, so the repair is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def tantivy_counts(tantivy_dir: Path, filing_ids: list[str]) -> dict[str, int]:
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

    if not Path(tantivy_dir).is_dir() or not any(Path(tantivy_dir).iterdir()):
        return dict.fromkeys(filing_ids, 0)
    index = TantivyIndex(tantivy_dir)
    return {fid: index.count(fid) for fid in filing_ids}


def lance_counts(lancedb_dir: Path, filing_ids: list[str]) -> dict[str, int]:
    """Rows per filing in the vector table, read without loading the embedding model."""
    import lancedb

    from finrag_pipeline.core.indexing.lance_index import TABLE_NAME, sql_literal

    if not Path(lancedb_dir).is_dir():
        return dict.fromkeys(filing_ids, 0)
    db = lancedb.connect(str(lancedb_dir))
    try:
        table = db.open_table(TABLE_NAME)
    except (FileNotFoundError, ValueError):
        return dict.fromkeys(filing_ids, 0)
    return {fid: table.count_rows(f"filing_id = {sql_literal(fid)}") for fid in filing_ids}


def check_filings(warehouse: Warehouse, tantivy_dir: Path, lancedb_dir: Path,
                  filing_ids: list[str], *, storage: Any = None) -> dict[str, Completeness]:
    """Completeness of each filing (see the module docstring). ``storage``: distributed mode's
    DistributedStorage (BM25 documents counted in each filing's shard, LanceDB rows on the object store)."""
    wh = warehouse_counts(warehouse, filing_ids)
    bm25 = storage.bm25_counts(filing_ids) if storage is not None else tantivy_counts(tantivy_dir, filing_ids)
    vectors = storage.lance_counts(filing_ids) if storage is not None else lance_counts(lancedb_dir, filing_ids)
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
