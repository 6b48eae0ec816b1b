"""Every retriever finds hand-checked evidence pages in real sample filings (slow: parse + index).

Pages were checked by hand in the PDFs: Apple FY2022 10-K, total net sales 394,328 vs 365,817 on
p.32 (Consolidated Statements of Operations), the MD&A tables on p.24-25 and the notes' net-sales
tables on p.40 and p.52 (all print "Total net sales" with both years); Microsoft FY2022
10-K, total revenue 198,270 on p.57 (Income Statements) and MD&A p.43-44; Apple's outsourcing-partner
risk factor on p.11 (Item 1A). Embeddings are cached in FINRAG_EMBEDDING_CACHE across sessions (the
first build embeds ~3,000 chunks: minutes on 2 cores).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from finrag_pipeline.core.models import SearchFilters
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR
from finrag_pipeline.core.retrieval import build_named_retrievers
from finrag_pipeline.core.retrieval.resources import build_resources_from_filings

pytestmark = pytest.mark.slow
os.environ.setdefault("HF_HUB_OFFLINE", "1")

FILES = ["APPLE_2021_10K.pdf", "APPLE_2022_10K.pdf", "MICROSOFT_2022_10K.pdf", "nvda-10-k-2025-02-26.html"]
NAMES = ["bm25", "dense", "hybrid_rrf", "hybrid_weighted", "hybrid_weighted_z", "bm25_period", "hybrid_rrf_period",
         "hybrid_rrf_boost", "auto_merging", "multi_query", "hybrid_rrf_features", "bm25_features"]
# (question, filing, acceptable pages, k, retrievers that must find it)
CASES = [
    ("What were Apple's total net sales in fiscal 2022 compared to fiscal 2021?", "AAPL-2022-10K",
     {24, 25, 32, 40, 52}, 10, NAMES),
    ("What was Microsoft's total revenue in fiscal year 2022?", "MSFT-2022-10K", {43, 44, 57}, 10, NAMES),
    ("What risks does Apple face from depending on outsourcing partners for manufacturing and logistics?",
     "AAPL-2022-10K", {11}, 10, [n for n in NAMES if n != "dense"]),
]


@pytest.fixture(scope="session")
def resources(tmp_path_factory):
    cache = Path(os.environ["FINRAG_EMBEDDING_CACHE"])
    return build_resources_from_filings([SAMPLE_FILINGS_DIR / f for f in FILES], tmp_path_factory.mktemp("idx"),
                                        embedding_cache=cache)


@pytest.fixture(scope="session")
def retrievers(resources):
    return build_named_retrievers(resources, NAMES)


@pytest.mark.parametrize(("question", "filing", "pages", "k", "names"), CASES, ids=["apple_sales", "msft_revenue",
                                                                                       "apple_risk"])
@pytest.mark.parametrize("scope", ["filing", "corpus"])
def test_finds_evidence_page(retrievers, question, filing, pages, k, names, scope):
    filters = SearchFilters(filing_ids=(filing,)) if scope == "filing" else None
    missed = {}
    for name in names:
        hits = retrievers[name].search(question, k, filters)
        found = [h for h in hits if h.filing_id == filing and set(h.pages) & pages]
        if not found:
            missed[name] = [(h.filing_id, h.page_start) for h in hits[:5]]
    assert not missed, missed


def test_period_prefilter_on_real_corpus(retrievers, resources):
    # retrievers.yaml: covering_years 2 (a 10-K reports its year and the two before it), so a fiscal 2021
    # question may be answered from the FY2021 or FY2022 10-K, never from another company or an earlier year.
    hits = retrievers["bm25_period"].search("Apple total net sales in fiscal 2021", 10)
    assert hits and {h.filing_id for h in hits} <= {"AAPL-2021-10K", "AAPL-2022-10K"}
    strict = build_named_retrievers(resources, ["bm25_period"],
                                    overrides={"bm25_period": {"covering_years": 0}})["bm25_period"]
    hits = strict.search("Apple total net sales in fiscal 2021", 10)
    assert hits and {h.filing_id for h in hits} == {"AAPL-2021-10K"}
