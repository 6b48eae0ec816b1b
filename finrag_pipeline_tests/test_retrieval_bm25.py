"""BM25 scores of the Tantivy retriever equal a reference BM25 computed on the same tokens."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from _retrieval_fakes import chunk

from finrag_pipeline.core.indexing.tantivy_index import BM25_B, BM25_K1, TantivyIndex, tokenize_for_bm25
from finrag_pipeline.core.models import SearchFilters
from finrag_pipeline.core.retrieval.lexical import BM25Retriever

# Short texts: tantivy stores field lengths exactly up to 40 tokens (longer ones are quantised).
TEXTS = [
    "Total net sales increased 8% during 2022 compared to 2021",
    "Total net sales 394,328 365,817 274,515",
    "iPhone net sales increased due to higher net sales of Pro models",
    "Research and development expense increased",
    "The Company's products and services face intense competition",
    "Services net sales increased due to advertising, cloud services and the App Store",
    "Cash and cash equivalents and marketable securities totaled 156 billion",
    "Net income per share diluted",
]
QUERIES = ["total net sales", "net sales increased in 2022", "services and cloud", "cash",
           "competition for products", "Company's \"net\" (sales): AND OR", "nothing matches zzz"]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    idx = TantivyIndex(tmp_path_factory.mktemp("tantivy"))
    chunks = [chunk(f"c{i}", "AAPL-2022-10K" if i % 2 == 0 else "AAPL-2021-10K", t,
                    fy=2022 if i % 2 == 0 else 2021, pos=i) for i, t in enumerate(TEXTS)]
    for fid in ("AAPL-2022-10K", "AAPL-2021-10K"):
        idx.upsert_filing(fid, [c for c in chunks if c.filing_id == fid])
    return idx


def reference_bm25(query: str, docs: list[list[str]]) -> dict[int, float]:
    """Okapi BM25 with tantivy's idf ln(1 + (N - n + 0.5)/(n + 0.5)), k1=1.2, b=0.75."""
    n_docs = len(docs)
    avgdl = sum(len(d) for d in docs) / n_docs
    scores: dict[int, float] = {}
    for term in dict.fromkeys(tokenize_for_bm25(query)):
        df = sum(1 for d in docs if term in d)
        if df == 0:
            continue
        idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            tf = Counter(d)[term]
            if tf:
                norm = BM25_K1 * (1 - BM25_B + BM25_B * len(d) / avgdl)
                scores[i] = scores.get(i, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + norm)
    return scores


@pytest.mark.parametrize("query", QUERIES)
def test_scores_match_reference(index, query):
    docs = [tokenize_for_bm25(t) for t in TEXTS]
    assert all(len(d) <= 40 for d in docs)
    expected = reference_bm25(query, docs)
    hits = BM25Retriever(index, fields=("text",)).search(query, 20)
    got = {int(h.chunk_id[1:]): h.score for h in hits}
    assert got.keys() == expected.keys()
    for i, s in expected.items():
        assert got[i] == pytest.approx(s, rel=1e-4)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))


@pytest.mark.parametrize("query", QUERIES[:5])
def test_scores_match_rank_bm25_with_tantivy_idf(index, query):
    from rank_bm25 import BM25Okapi

    class TantivyIdfBM25(BM25Okapi):
        # rank_bm25's Okapi idf is ln((N - n + .5)/(n + .5)) floored by epsilon; tantivy adds 1 inside
        # the log (never negative). Same tf part, k1, b and avgdl.
        def _calc_idf(self, nd):
            self.idf = {w: math.log(1 + (self.corpus_size - f + 0.5) / (f + 0.5)) for w, f in nd.items()}

    docs = [tokenize_for_bm25(t) for t in TEXTS]
    ref = TantivyIdfBM25(docs, k1=BM25_K1, b=BM25_B)
    expected = ref.get_scores(list(dict.fromkeys(tokenize_for_bm25(query))))
    hits = BM25Retriever(index, fields=("text",)).search(query, 20)
    for h in hits:
        assert h.score == pytest.approx(expected[int(h.chunk_id[1:])], rel=1e-4)
    assert {int(h.chunk_id[1:]) for h in hits} == {i for i, s in enumerate(expected) if s > 0}


def test_hit_fields_and_filters(index):
    r = BM25Retriever(index)
    hits = r.search("total net sales", 10, SearchFilters(fiscal_years=(2021,)))
    assert hits and all(h.fiscal_year == 2021 and h.filing_id == "AAPL-2021-10K" for h in hits)
    h = hits[0]
    assert h.stage == "bm25" and h.text in TEXTS and h.chunk_type == "prose" and h.page_start == 1
    assert r.search("total net sales", 10, SearchFilters(filing_ids=())) == []


@pytest.mark.parametrize("query", ['"unbalanced', "a:b (c", "AND OR NOT", "$4.2B", "", "*?~^", "税 ÆØÅ"])
def test_user_text_never_raises(index, query):
    assert isinstance(BM25Retriever(index).search(query, 5), list)
