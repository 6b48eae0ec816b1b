"""The exact in-memory dense scan answers as LanceDB's exhaustive search does, on a small real index.

Two real 10-Ks from data/sample_filings (NVIDIA FY2025 and Apple FY2024, inline-XBRL HTML: ~1,700
leaf chunks, two tickers, two fiscal years, prose and table rows) are parsed, chunked and embedded
with the real MiniLM embedder (vectors from FINRAG_EMBEDDING_CACHE when already computed).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest

from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache
from finrag_pipeline.core.indexing.exact_scan import DenseSearchConfig, load_dense_search_config
from finrag_pipeline.core.indexing.lance_index import LanceIndex, filters_to_sql
from finrag_pipeline.core.models import SearchFilters, filters_match
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR

pytestmark = pytest.mark.slow

FILES = ["nvda-10-k-2025-02-26.html", "aapl-10-k-2024-11-01.html"]
QUESTIONS = ["What was NVIDIA's Data Center revenue in fiscal 2025?", "Apple total net sales 2024",
             "risks from export controls on semiconductors to China", "share repurchase program",
             "income tax provision effective tax rate", "cash and cash equivalents at end of year"]
FILTERS = [
    None,
    SearchFilters(filing_ids=("NVDA-2025-10K",)),
    SearchFilters(tickers=("AAPL",), chunk_types=("table_row",)),
    SearchFilters(fiscal_years=(2024, 2025), chunk_types=("prose",)),
    SearchFilters(filing_ids=("AAPL-2024-10K", "O'NEIL-2020-10K"), fiscal_years=(2024,)),
    SearchFilters(tickers=("NOPE",)),
]


@pytest.fixture(scope="module")
def chunks_by_filing():
    from finrag_pipeline.core.chunking.chunker import chunk_filing
    from finrag_pipeline.core.ingest.parse import parse_filing

    out = {}
    for name in FILES:
        parsed = parse_filing(SAMPLE_FILINGS_DIR / name)
        out[parsed.meta.filing_id] = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows)
    return out


@pytest.fixture(scope="module")
def index(tmp_path_factory, chunks_by_filing):
    from finrag_pipeline.core.indexing.embedder import load_embedder_config

    embedder = load_embedder_config().build()
    cache = EmbeddingCache(Path(os.environ["FINRAG_EMBEDDING_CACHE"]))
    idx = LanceIndex(tmp_path_factory.mktemp("lance"), embedder, cache=cache, ann_threshold=None,
                     exact_scan_max_rows=100_000)
    for filing_id, chunks in chunks_by_filing.items():
        idx.upsert_filing(filing_id, chunks)
    return idx


def same_up_to_ties(got, want, tol=1e-5):
    """Same scores rank by rank; the same ids except among rows tied with the last score."""
    assert len(got) == len(want)
    assert np.allclose([s for _, s, _ in got], [s for _, s, _ in want], atol=tol)
    if not want:
        return
    last = want[-1][1]
    assert {c for c, s, _ in got if s > last + tol} == {c for c, s, _ in want if s > last + tol}
    assert [c for c, s, _ in got if s > last + tol] == [c for c, s, _ in want if s > last + tol]


def test_sample_is_what_the_test_needs(index, chunks_by_filing):
    assert set(chunks_by_filing) == {"NVDA-2025-10K", "AAPL-2024-10K"}
    scan = index.exact_scan()
    assert scan is not None and len(scan) == index.count() > 1000
    types = {c.chunk_type for cs in chunks_by_filing.values() for c in cs if c.is_leaf}
    assert {"prose", "table_row"} <= types


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: filters_to_sql(f) or "none")
def test_mask_and_sql_select_the_same_rows(index, chunks_by_filing, filters):
    scan = index.exact_scan()
    mask = scan.mask(filters)
    by_mask = set(scan.chunk_ids.tolist() if mask is None else scan.chunk_ids[mask].tolist())
    query = index.table.search().select(["chunk_id"]).limit(None)
    where = filters_to_sql(filters)
    by_sql = set((query.where(where) if where else query).to_arrow()["chunk_id"].to_pylist())
    by_python = {c.chunk_id for cs in chunks_by_filing.values() for c in cs if c.is_leaf and filters_match(
        filters, filing_id=c.filing_id, ticker=c.ticker, fiscal_year=c.fiscal_year, chunk_type=c.chunk_type)}
    assert by_mask == by_sql == by_python
    if filters is not None and filters.tickers == ("NOPE",):
        assert by_mask == set()
    else:
        assert by_mask  # every other filter selects something in this sample


@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: filters_to_sql(f) or "none")
def test_exact_scan_equals_lancedb_exhaustive(index, filters):
    for question in QUESTIONS:
        vector = index.embedder.encode([question])[0]
        for k in (1, 10, 50):
            got = index.search(vector, k, filters, columns=())
            want = index.search(vector, k, filters, exact=True, columns=())
            same_up_to_ties(got, want)
    # Full rows come back too when asked for (read by chunk id).
    got = index.search(QUESTIONS[0], 5, filters)
    want = index.search(QUESTIONS[0], 5, filters, exact=True)
    assert [(c, r["text"], r["page_start"]) for c, _, r in got] == [(c, r["text"], r["page_start"]) for c, _, r in want]


def test_reupsert_refreshes_the_matrix(index, chunks_by_filing):
    filing_id = "NVDA-2025-10K"
    chunks = chunks_by_filing[filing_id]
    leaves = [c for c in chunks if c.is_leaf]
    before = index.exact_scan()
    dropped = leaves[-1]
    changed = dataclasses.replace(leaves[0], text="The pineapple orchard in Lisbon yielded nine tonnes of fruit.")
    try:
        index.upsert_filing(filing_id, [changed, *leaves[1:-1]])
        after = index.exact_scan()
        assert after is not before and after.version != before.version
        assert len(after) == len(before) - 1 and dropped.chunk_id not in set(after.chunk_ids.tolist())
        hits = index.search("pineapple orchard harvest in Lisbon", 3)
        assert hits[0][0] == changed.chunk_id
        same_up_to_ties(hits, index.search("pineapple orchard harvest in Lisbon", 3, exact=True))
        assert index.exact_scan() is after  # unchanged table: the same copy, not a reload
    finally:
        index.upsert_filing(filing_id, chunks)
    assert len(index.exact_scan()) == len(before)


def test_scan_threads_limit_blas_inside_the_scan_only():
    from threadpoolctl import threadpool_info

    from finrag_pipeline.core.indexing.exact_scan import blas_threads

    before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    with blas_threads(1):
        assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {1}
    assert [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"] == before


def test_above_the_threshold_lancedb_answers(index):
    small = LanceIndex(index.path, index.embedder, cache=index.cache, ann_threshold=None, exact_scan_max_rows=100)
    assert small.exact_scan() is None
    assert small.search(QUESTIONS[0], 3) == small.search(QUESTIONS[0], 3, exact=True)
    off = LanceIndex(index.path, index.embedder, cache=index.cache, ann_threshold=None, exact_scan_max_rows=0)
    assert off.exact_scan() is None


def test_config_file_is_typed():
    assert load_dense_search_config().exact_scan_max_rows == 200_000
    assert load_dense_search_config().scan_threads == 1
    assert load_dense_search_config({"exact_scan_max_rows": None}).exact_scan_max_rows is None
    with pytest.raises(ValueError):
        DenseSearchConfig(exact_scan_max_rows=-1)
    with pytest.raises(ValueError):
        DenseSearchConfig(exact_scan_rows=5)
