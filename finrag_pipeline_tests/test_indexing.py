"""Indexing: financial tokens, tantivy BM25 index, LanceDB dense index, embedders."""

from __future__ import annotations

import math
import os
import threading
import time

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from finrag_pipeline.core.indexing import (  # noqa: E402
    BM25_B,
    BM25_K1,
    EmbedderConfig,
    LanceIndex,
    SentenceTransformerEmbedder,
    TantivyIndex,
    filters_to_sql,
    financial_terms,
    load_embedder_config,
    tokenize_for_bm25,
)
from finrag_pipeline.core.indexing.tantivy_index import IndexBusy  # noqa: E402
from finrag_pipeline.core.models import Chunk, SearchFilters  # noqa: E402


def make_chunk(filing_id: str, n: int, text: str, *, fiscal_year: int = 2022, chunk_type: str = "prose",
               is_leaf: bool = True) -> Chunk:
    return Chunk(chunk_id=f"{filing_id}-{n}", filing_id=filing_id, ticker=filing_id.split("-")[0],
                 company="X", fiscal_year=fiscal_year, form_type="10-K", section="Item 7", page_start=n,
                 page_end=n, chunk_type=chunk_type, text=text, position=n, is_leaf=is_leaf)


TEXTS = [
    "Adjusted EBITDA increased to $4.2B in fiscal 2024.",
    "Operating income grew to $4.3 billion while margins held at 42 percent.",
    "The 10-K filing for FY2024 lists risk factors in Item 1A.",
    "Total net sales were 2,345.6 million dollars, up from 2,100.1 million.",
    "Research and development expense rose with headcount in the U.S. and abroad.",
    "The company repurchased 4 2 thousand shares; K was not relevant.",
    "Cash and cash equivalents totaled $1.2 billion at year end.",
]


def filing_chunks(filing_id: str = "AAA-2024-10K", fiscal_year: int = 2024) -> list[Chunk]:
    return [make_chunk(filing_id, i, t, fiscal_year=fiscal_year) for i, t in enumerate(TEXTS)]


# ---- financial tokens ------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("$4.2B", ["4.2b", "4.2"]),
    ("$4.2 billion", ["4.2b", "4.2"]),
    ("2,345.6", ["2345.6"]),
    ("(1,234)", ["1234"]),
    ("12%", ["12%", "12"]),
    ("FY2024", ["fy2024"]),
    ("fiscal 2022", ["fy2022", "2022"]),
    ("Fiscal Year 2021", ["fy2021", "2021"]),
    ("fiscal year ended June 30, 2022", ["fy2022", "30", "2022"]),
    ("10-K", ["10-k"]),
    ("R&D", ["r&d"]),
    ("EBITDA", ["ebitda"]),
    ("Item 1A", ["1a"]),
    ("net sales grew", []),
])
def test_financial_terms(text, expected):
    assert financial_terms(text) == expected


# ---- tantivy ---------------------------------------------------------------------------------

@pytest.fixture
def tantivy_index(tmp_path):
    index = TantivyIndex(tmp_path / "tantivy")
    index.upsert_filing("AAA-2024-10K", filing_chunks())
    index.upsert_filing("BBB-2023-10K", filing_chunks("BBB-2023-10K", 2023))
    return index


@pytest.mark.parametrize(("query", "expected_n"), [
    ("$4.2B", 0), ("$4.2 billion", 0), ("EBITDA", 0), ("FY2024", 2), ("10-K", 2), ("2,345.6", 3),
    ("2345.6 million", 3), ("research & development", 4),
])
def test_tantivy_finds_financial_tokens(tantivy_index, query, expected_n):
    hits = tantivy_index.search(query, 3, SearchFilters(filing_ids=("AAA-2024-10K",)))
    assert hits[0][0] == f"AAA-2024-10K-{expected_n}"


@pytest.mark.parametrize("query", [
    'EBITDA "unclosed', "title:foo AND (bar", "((()))", "revenue: $4.2B (FY2024) 'quoted'",
    "Umsatzerlöse – 営業利益 ₿ 🙂", "", "   ", "-", "*", "AND OR NOT", "\\", "a" * 500, "field:[1 TO 2]",
])
def test_tantivy_user_text_never_raises(tantivy_index, query):
    assert isinstance(tantivy_index.search(query, 5), list)


def test_tantivy_upsert_is_idempotent_and_replaces(tantivy_index):
    assert tantivy_index.count("AAA-2024-10K") == len(TEXTS)
    tantivy_index.upsert_filing("AAA-2024-10K", filing_chunks())
    assert tantivy_index.count("AAA-2024-10K") == len(TEXTS)
    assert tantivy_index.count() == 2 * len(TEXTS)
    tantivy_index.upsert_filing("AAA-2024-10K", filing_chunks()[:2])
    assert tantivy_index.count("AAA-2024-10K") == 2
    assert tantivy_index.count("BBB-2023-10K") == len(TEXTS)


def test_tantivy_skips_parents_and_rejects_foreign_chunks(tmp_path):
    index = TantivyIndex(tmp_path / "t")
    chunks = [*filing_chunks(), make_chunk("AAA-2024-10K", 99, "a parent", is_leaf=False, chunk_type="section")]
    assert index.upsert_filing("AAA-2024-10K", chunks) == len(TEXTS)
    with pytest.raises(ValueError, match="other filings"):
        index.upsert_filing("AAA-2024-10K", filing_chunks("CCC-2024-10K"))
    assert index.count() == len(TEXTS)  # the failed call changed nothing


def test_tantivy_delete(tantivy_index):
    tantivy_index.delete_filing("AAA-2024-10K")
    assert tantivy_index.count("AAA-2024-10K") == 0
    assert tantivy_index.filing_ids() == ["BBB-2023-10K"]
    assert all(h[2]["filing_id"] == "BBB-2023-10K" for h in tantivy_index.search("EBITDA", 10))


def test_tantivy_filters_restrict_without_changing_scores(tantivy_index):
    assert tantivy_index.filing_ids() == ["AAA-2024-10K", "BBB-2023-10K"]
    unfiltered = tantivy_index.search("EBITDA net sales", 20)
    assert {h[2]["filing_id"] for h in unfiltered} == {"AAA-2024-10K", "BBB-2023-10K"}
    by_year = tantivy_index.search("EBITDA net sales", 20, SearchFilters(fiscal_years=(2023,)))
    assert by_year and all(h[2]["fiscal_year"] == 2023 for h in by_year)
    scores = {h[0]: h[1] for h in unfiltered}
    assert all(math.isclose(h[1], scores[h[0]], rel_tol=1e-6) for h in by_year)
    by_ticker = tantivy_index.search("EBITDA", 20, SearchFilters(tickers=("AAA",), chunk_types=("prose",)))
    assert by_ticker and all(h[2]["ticker"] == "AAA" for h in by_ticker)
    assert tantivy_index.search("EBITDA", 20, SearchFilters(chunk_types=("table_row",))) == []


def test_tantivy_stored_fields(tantivy_index):
    _, _, row = tantivy_index.search("EBITDA", 1)[0]
    assert row["text"] == TEXTS[0]
    assert row["page_start"] == 0 and row["section"] == "Item 7" and row["parent_id"] is None


def test_tantivy_scores_match_reference_bm25(tmp_path):
    """Scores on the word field equal a hand BM25 over tokenize_for_bm25 tokens (short docs:
    tantivy's field-norm encoding is exact for small lengths)."""
    index = TantivyIndex(tmp_path / "t")
    index.upsert_filing("AAA-2024-10K", filing_chunks())
    docs = [tokenize_for_bm25(t) for t in TEXTS]
    avgdl = sum(map(len, docs)) / len(docs)
    query = "net sales million EBITDA"
    terms = list(dict.fromkeys(tokenize_for_bm25(query)))

    def bm25(doc: list[str]) -> float:
        score = 0.0
        for term in terms:
            n = sum(term in d for d in docs)
            tf = doc.count(term)
            if tf:
                idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
                score += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * len(doc) / avgdl))
        return score

    hits = index.search(query, 10, fields=("text",))
    assert hits
    for chunk_id, score, _ in hits:
        expected = bm25(docs[int(chunk_id.rsplit("-", 1)[1])])
        assert math.isclose(score, expected, rel_tol=1e-3), (chunk_id, score, expected)


def test_tantivy_waits_for_another_writer(tmp_path):
    index = TantivyIndex(tmp_path / "t")
    other = TantivyIndex(tmp_path / "t")
    writer = other.index.writer(heap_size=15_000_000, num_threads=1)  # holds the lock

    def release():
        time.sleep(0.5)
        writer.rollback()
        writer.wait_merging_threads()

    thread = threading.Thread(target=release)
    thread.start()
    index.upsert_filing("AAA-2024-10K", filing_chunks())
    thread.join()
    assert index.count() == len(TEXTS)


def test_tantivy_gives_up_when_lock_is_held(tmp_path):
    index = TantivyIndex(tmp_path / "t", lock_timeout=0.3)
    writer = TantivyIndex(tmp_path / "t").index.writer(heap_size=15_000_000, num_threads=1)
    try:
        with pytest.raises(IndexBusy):
            index.upsert_filing("AAA-2024-10K", filing_chunks())
    finally:
        writer.wait_merging_threads()


# ---- embedders and LanceDB ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def embedder():
    return load_embedder_config().build()


@pytest.fixture
def lance_index(tmp_path, embedder):
    index = LanceIndex(tmp_path / "lance", embedder)
    index.upsert_filing("AAA-2024-10K", filing_chunks())
    index.upsert_filing("BBB-2023-10K", filing_chunks("BBB-2023-10K", 2023))
    return index


def test_embedders_agree(embedder):
    flag = EmbedderConfig(kind="flag_embedding").build()
    texts = [*TEXTS, "word " * 400]  # the last one is truncated by both at 256 word pieces
    a, b = embedder.encode(texts), flag.encode(texts)
    assert a.dtype == np.float32 and a.shape == (len(texts), embedder.dim) == b.shape
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert (a * b).sum(axis=1).min() > 0.999
    assert embedder.encode([]).shape == (0, embedder.dim)
    assert load_embedder_config().build().model is embedder.model  # loaded once per process


def test_lance_upsert_idempotent(lance_index):
    assert lance_index.count("AAA-2024-10K") == len(TEXTS)
    version = lance_index.table.version
    lance_index.upsert_filing("AAA-2024-10K", filing_chunks())
    assert lance_index.count("AAA-2024-10K") == len(TEXTS) and lance_index.count() == 2 * len(TEXTS)
    assert lance_index.table.version == version + 1  # one commit per upsert
    assert lance_index.last_encoded == 0  # every text came from the embedding cache


def test_lance_upsert_replaces_only_that_filing(lance_index):
    changed = filing_chunks()[:3]
    # Unique per run: the embedding cache persists across test runs (conftest), and a text cached by
    # an earlier run would not be encoded again.
    changed[0].text = f"A brand new sentence about dividends (run {time.time_ns()})."
    lance_index.upsert_filing("AAA-2024-10K", changed)
    assert lance_index.last_encoded == 1
    assert lance_index.count("AAA-2024-10K") == 3
    assert lance_index.count("BBB-2023-10K") == len(TEXTS)
    top = lance_index.search("dividends", 1, SearchFilters(filing_ids=("AAA-2024-10K",)))[0]
    assert top[0] == "AAA-2024-10K-0" and top[2]["text"] == changed[0].text


def test_lance_prefilter_by_year(lance_index):
    for year in (2023, 2024):
        hits = lance_index.search(TEXTS[0], 50, SearchFilters(fiscal_years=(year,)))
        assert len(hits) == len(TEXTS)
        assert {h[2]["fiscal_year"] for h in hits} == {year}
    assert lance_index.search(TEXTS[0], 5, SearchFilters(fiscal_years=(1999,))) == []


def test_lance_nearest_neighbour_is_itself(lance_index):
    for i, text in enumerate(TEXTS):
        chunk_id, score, row = lance_index.search(text, 1, SearchFilters(filing_ids=("AAA-2024-10K",)))[0]
        assert chunk_id == f"AAA-2024-10K-{i}" and score > 0.999
        assert "vector" not in row and row["text"] == text


def test_lance_search_by_vector(lance_index, embedder):
    vector = embedder.encode([TEXTS[3]])[0]
    assert lance_index.search(vector, 1, SearchFilters(tickers=("BBB",)))[0][0] == "BBB-2023-10K-3"


def test_lance_delete_and_filing_ids(lance_index):
    assert lance_index.filing_ids() == ["AAA-2024-10K", "BBB-2023-10K"]
    lance_index.delete_filing("AAA-2024-10K")
    assert lance_index.count("AAA-2024-10K") == 0
    assert lance_index.filing_ids() == ["BBB-2023-10K"]
    lance_index.optimize()
    assert lance_index.count() == len(TEXTS)


def test_lance_rejects_other_embedder(lance_index, tmp_path):
    flag = EmbedderConfig(kind="flag_embedding").build()
    with pytest.raises(ValueError, match="built with"):
        LanceIndex(tmp_path / "lance", flag)
    assert LanceIndex(tmp_path / "lance", flag, table_name="chunks_flag").count() == 0


def test_filters_to_sql_quotes_values():
    sql = filters_to_sql(SearchFilters(filing_ids=("O'NEIL-2022-10K",), fiscal_years=(2022, 2023)))
    assert sql == "filing_id IN ('O''NEIL-2022-10K') AND fiscal_year IN (2022, 2023)"
    assert filters_to_sql(None) is None and filters_to_sql(SearchFilters()) is None
    assert filters_to_sql(SearchFilters(tickers=())) == "FALSE"


# ---- ANN index and the query-embedding fast path -------------------------------------------------

class ClusteredEmbedder:
    """Deterministic 32-d unit vectors around 12 cluster centres (like topical text embeddings):
    text ``"c<cluster> <anything>"`` lands near centre ``cluster``. No model needed."""

    name = "test:clustered"
    dim = 32

    def __init__(self):
        rng = np.random.default_rng(7)
        self.centres = rng.normal(size=(12, self.dim))

    def encode(self, texts, batch_size=32, show_progress=False):
        import hashlib

        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little")
            cluster = int(t.split()[0][1:]) % len(self.centres)
            rows.append(self.centres[cluster] + 0.35 * np.random.default_rng(seed).normal(size=self.dim))
        out = np.asarray(rows, dtype=np.float32).reshape(-1, self.dim)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def clustered_filing(filing_id: str, fiscal_year: int, n: int = 150) -> list[Chunk]:
    return [make_chunk(filing_id, i, f"c{i % 12} {filing_id} passage {i}", fiscal_year=fiscal_year)
            for i in range(n)]


@pytest.fixture
def ann_index(tmp_path):
    # exact_scan_max_rows=0: these tests are about LanceDB's ANN path, not the in-memory exact scan.
    index = LanceIndex(tmp_path / "ann", ClusteredEmbedder(), use_cache=False, ann_threshold=500,
                       ann_nprobes=8, ann_max_unindexed=200, exact_scan_max_rows=0)
    for j, year in enumerate((2021, 2022, 2023, 2024)):
        index.upsert_filing(f"F{j}-{year}-10K", clustered_filing(f"F{j}-{year}-10K", year))
    return index


def test_lance_builds_ann_index_over_threshold(tmp_path):
    index = LanceIndex(tmp_path / "ann", ClusteredEmbedder(), use_cache=False, ann_threshold=300)
    index.upsert_filing("F0-2021-10K", clustered_filing("F0-2021-10K", 2021))
    assert index.vector_index() is None and index.maintain_vector_index() == "none"  # 150 rows: exhaustive
    index.upsert_filing("F1-2022-10K", clustered_filing("F1-2022-10K", 2022))
    stats = index.vector_index_stats()
    assert stats.index_type == "IVF_FLAT" and stats.distance_type == "cosine"
    assert stats.num_indexed_rows == 300 and stats.num_unindexed_rows == 0
    off = LanceIndex(tmp_path / "off", ClusteredEmbedder(), use_cache=False, ann_threshold=None)
    off.upsert_filing("F0-2021-10K", clustered_filing("F0-2021-10K", 2021, 400))
    assert off.vector_index() is None


def test_lance_ann_matches_exhaustive_and_honours_prefilter(ann_index):
    assert ann_index.vector_index() is not None and ann_index.count() == 600
    probe = ClusteredEmbedder()
    for cluster in (0, 3, 7, 11):
        vector = probe.encode([f"c{cluster} a question"])[0]
        approx, exact = ann_index.search(vector, 10), ann_index.search(vector, 10, exact=True)
        assert [h[0] for h in approx] == [h[0] for h in exact]
        assert np.allclose([h[1] for h in approx], [h[1] for h in exact], atol=1e-5)
        for year in (2022, 2024):
            scope = SearchFilters(fiscal_years=(year,))
            approx, exact = ann_index.search(vector, 10, scope), ann_index.search(vector, 10, scope, exact=True)
            assert [h[0] for h in approx] == [h[0] for h in exact] and len(approx) == 10
            assert {h[2]["fiscal_year"] for h in approx} == {year}
            assert "vector" not in approx[0][2] and approx[0][2]["text"].startswith(f"c{cluster} ")
    # A narrow prefilter (one filing, 150 rows spread over many partitions) still fills k.
    scope = SearchFilters(filing_ids=("F2-2023-10K",), chunk_types=("prose",))
    hits = ann_index.search(probe.encode(["c5 x"])[0], 20, scope)
    assert len(hits) == 20 and {h[2]["filing_id"] for h in hits} == {"F2-2023-10K"}
    assert ann_index.search(probe.encode(["c5 x"])[0], 5, SearchFilters(fiscal_years=(1999,))) == []


def test_lance_ann_index_kept_current(ann_index):
    name = ann_index.vector_index().name
    # Rewriting a filing leaves its new rows unindexed until the tail passes ann_max_unindexed ...
    changed = clustered_filing("F0-2021-10K", 2021)
    changed[0].text = "c4 a brand new passage"
    ann_index.upsert_filing("F0-2021-10K", changed)
    assert ann_index.count() == 600
    vector = ClusteredEmbedder().encode([changed[0].text])[0]
    assert ann_index.search(vector, 1)[0][0] == "F0-2021-10K-0"  # the unindexed tail is searched too
    # ... then optimize() folds it in (same index, no retraining).
    ann_index.upsert_filing("F4-2025-10K", clustered_filing("F4-2025-10K", 2025, 120))
    stats = ann_index.vector_index_stats()
    assert ann_index.vector_index().name == name and stats.num_unindexed_rows == 0
    assert stats.num_indexed_rows == ann_index.count() == 720
    assert ann_index.search(vector, 1)[0][0] == "F0-2021-10K-0"
    # Deleted rows disappear at once.
    ann_index.delete_filing("F4-2025-10K")
    assert all(h[2]["filing_id"] != "F4-2025-10K" for h in ann_index.search(vector, 200))
    # Growing ~4x retrains with more partitions.
    for j in range(5, 17):
        ann_index.upsert_filing(f"F{j}-2030-10K", clustered_filing(f"F{j}-2030-10K", 2030))
    assert ann_index.vector_index().name != name
    assert ann_index.vector_index_stats().num_unindexed_rows <= 200


QUERY_TEXTS = [*TEXTS, "  leading and trailing spaces  ", "word " * 400, "What were Apple's net sales in FY2022?"]


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_query_fast_path_gives_the_same_vectors(embedder, backend, tmp_path):
    fast = SentenceTransformerEmbedder(query_backend=backend, onnx_cache_dir=tmp_path / "onnx")
    assert fast.model is embedder.model  # same weights, loaded once
    assert fast.query_backend_used == backend, fast.query_backend_note
    reference = embedder.encode_st(QUERY_TEXTS)  # the word * 400 text is truncated at 256 pieces by both
    single = np.concatenate([fast.encode([t]) for t in QUERY_TEXTS])
    small_batch = fast.encode(QUERY_TEXTS[:fast.direct_batch])
    assert single.dtype == np.float32 and single.shape == reference.shape
    assert (single * reference).sum(axis=1).min() > 0.9999
    assert (small_batch * reference[:len(small_batch)]).sum(axis=1).min() > 0.9999
    assert np.allclose(np.linalg.norm(single, axis=1), 1.0, atol=1e-5)
    if backend == "torch":
        import torch

        threads = torch.get_num_threads()
        fast.encode(["one query"])
        assert torch.get_num_threads() == threads  # the query thread setting is restored afterwards


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_indexing_batches_give_the_same_vectors_in_input_order(embedder, backend, tmp_path):
    """Batches larger than the query fast path: the ONNX batch path sorts texts by length and must put
    every row back in its place; either backend gives encode_st's vectors."""
    batcher = SentenceTransformerEmbedder(batch_backend=backend, onnx_cache_dir=tmp_path / "onnx", batch_size=4)
    texts = [*QUERY_TEXTS, *reversed(TEXTS), "Net income was $99,803 million.", "x"]
    assert len(texts) > batcher.direct_batch
    reference = embedder.encode_st(texts)
    got = batcher.encode(texts)
    assert got.dtype == np.float32 and got.shape == reference.shape
    assert (got * reference).sum(axis=1).min() > 0.9999
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_onnx_export_is_cached_and_failures_fall_back_to_torch(embedder, tmp_path):
    first = SentenceTransformerEmbedder(onnx_cache_dir=tmp_path / "onnx")
    first.encode(["export me"])
    (exported,) = (tmp_path / "onnx").glob("*/model.onnx")
    assert not list((tmp_path / "onnx").glob("*/*.tmp"))  # written under a temporary name, then renamed
    mtime = exported.stat().st_mtime_ns
    # Another process (a fresh cache of sessions) loads the file instead of exporting again.
    from finrag_pipeline.core.indexing import embedder as embedder_module

    embedder_module._MODELS.pop(("onnx:2", str(exported.parent)))
    SentenceTransformerEmbedder(onnx_cache_dir=tmp_path / "onnx").encode(["load me"])
    assert exported.stat().st_mtime_ns == mtime
    # A cache location that cannot be written: queries still embed, through PyTorch, and say why.
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache folder should be")
    fallback = SentenceTransformerEmbedder(onnx_cache_dir=blocked)
    vector = fallback.encode(["net sales"])
    assert fallback.query_backend_used == "torch" and "ONNX query path unavailable" in fallback.query_backend_note
    assert float(vector[0] @ embedder.encode_st(["net sales"])[0]) > 0.9999


def test_dense_search_reads_ids_from_lance_and_chunks_from_the_store(lance_index, embedder):
    from finrag_pipeline.core.retrieval.dense import DenseRetriever
    from finrag_pipeline.core.retrieval.resources import ChunkStore, RetrievalResources

    chunks = filing_chunks() + filing_chunks("BBB-2023-10K", 2023)
    with_store = RetrievalResources(lance=lance_index, embedder=embedder, chunk_store=ChunkStore(chunks))
    without = RetrievalResources(lance=lance_index, embedder=embedder)
    assert without.loaded("chunk_store") is None and with_store.loaded("chunk_store") is not None
    filters = SearchFilters(fiscal_years=(2024,))

    def fields(hits):
        return [(h.chunk_id, round(h.score, 6), h.filing_id, h.fiscal_year, h.page_start, h.text, h.chunk_type)
                for h in hits]

    expected = fields(DenseRetriever(lance_index, without).search("operating margins", 4, filters))
    assert len(expected) == 4 and {e[3] for e in expected} == {2024}
    assert fields(DenseRetriever(lance_index, with_store).search("operating margins", 4, filters)) == expected
    # The index holds a chunk the store does not know (a filing indexed after the store was loaded):
    # the rows are read from LanceDB after all, nothing comes back empty.
    stale = RetrievalResources(lance=lance_index, embedder=embedder, chunk_store=ChunkStore(chunks[1:]))
    assert fields(DenseRetriever(lance_index, stale).search(TEXTS[0], 4, filters)) == \
        fields(DenseRetriever(lance_index, without).search(TEXTS[0], 4, filters))


def test_async_and_sync_lance_queries_agree(ann_index, lance_index, monkeypatch):
    """LanceIndex queries through the table's async handle; the sync builder is the fallback."""
    from finrag_pipeline.core.indexing import lance_index as lance_module

    queries = [(ann_index, ClusteredEmbedder().encode(["c3 query"])[0], f) for f in
               (None, SearchFilters(fiscal_years=(2022,)), SearchFilters(filing_ids=("F1-2022-10K",)))]
    queries += [(lance_index, lance_index.embedder.encode([TEXTS[1]])[0], SearchFilters(tickers=("BBB",)))]

    def run_all():
        return [[(cid, round(score, 5), row) for cid, score, row in index.search(v, 7, f, exact=exact, columns=cols)]
                for index, v, f in queries for exact in (False, True) for cols in (None, ())]

    assert all(isinstance(index.table._table, lance_module.AsyncTable) for index in (ann_index, lance_index))
    via_async = run_all()
    monkeypatch.setattr(lance_module, "AsyncTable", type("NotAnAsyncTable", (), {}))
    assert run_all() == via_async
    assert all(len(hits) == 7 for hits in via_async)
    assert all(set(row) == {"chunk_id"} for hits in via_async[1::2] for _, _, row in hits)


def test_shared_dense_search_runs_once_and_still_counts_in_latency(lance_index, embedder, monkeypatch):
    from finrag_pipeline.core.retrieval.dense import DenseRetriever
    from finrag_pipeline.core.retrieval.resources import ChunkStore, RetrievalResources

    chunks = filing_chunks() + filing_chunks("BBB-2023-10K", 2023)
    calls: list[int] = []
    search = lance_index.search
    monkeypatch.setattr(lance_index, "search", lambda *a, **kw: calls.append(a[1]) or search(*a, **kw))

    def ranking(result):
        return [(h.chunk_id, h.score, h.text) for h in result.hits]

    plain = RetrievalResources(lance=lance_index, embedder=embedder, chunk_store=ChunkStore(chunks))
    shared = RetrievalResources(lance=lance_index, embedder=embedder, chunk_store=ChunkStore(chunks),
                                search_memo_size=16)
    first, second = DenseRetriever(lance_index, shared), DenseRetriever(lance_index, shared)
    wide = first.retrieve("operating income and margins", 6)
    assert calls == [6]
    narrow = second.retrieve("operating income and margins", 3)  # another retriever, same search, smaller k
    assert calls == [6]
    assert ranking(narrow) == ranking(wide)[:3] == ranking(DenseRetriever(lance_index, plain).retrieve(
        "operating income and margins", 3))
    # The reused search and query embedding count at the cost they were measured at.
    assert narrow.timings_ms["reused"] > 0 and "reused" not in wide.timings_ms
    assert narrow.timings_ms["total"] >= narrow.timings_ms["reused"]
    assert narrow.timings_ms["total"] >= 0.5 * wide.timings_ms["total"]
    # A larger k, or other filters, search again; without the memo every call searches.
    calls.clear()
    second.retrieve("operating income and margins", 8)
    second.retrieve("operating income and margins", 3, SearchFilters(fiscal_years=(2023,)))
    assert calls == [8, 3]
    calls.clear()
    DenseRetriever(lance_index, plain).retrieve("operating income and margins", 3)
    DenseRetriever(lance_index, plain).retrieve("operating income and margins", 3)
    assert calls == [3, 3]
