"""Page-level ranking (core/retrieval/pages.py) and the metrics read from it (``*_ranked_page``)."""

from __future__ import annotations

import pytest
from _retrieval_fakes import chunk, fake_resources

from finrag_pipeline.core.evaluation.runner import EvalMatrix, retrieval_metrics_for, run_retrieval_eval
from finrag_pipeline.core.models import EvidencePlace, Hit, QAItem
from finrag_pipeline.core.retrieval import build_retriever
from finrag_pipeline.core.retrieval.pages import PageRankingConfig, rank_pages

F = "F-2022-10K"


def h(cid: str, page: int, ctype: str = "prose", page_end: int | None = None, filing: str = F) -> Hit:
    return Hit(chunk_id=cid, score=1.0, rank=0, filing_id=filing, page_start=page, page_end=page_end or page,
               chunk_type=ctype, text=cid, stage="fixed")


# (hits in rank order, config, statement tags, asked statements, expected [(page, score)] best first)
PAGE_CASES = [
    # two table rows on p2 at ranks 2, 3 beat one sentence on p1 at rank 1: 1/62 + 1/63 > 1/61
    ([h("a", 1), h("b", 2, "table_row"), h("c", 2, "table_row")], PageRankingConfig(), {}, [],
     [(2, 1 / 62 + 1 / 63), (1, 1 / 61)]),
    # a single table row at rank 2 with table_row_weight 1: 2/62 > 1/61
    ([h("a", 1), h("b", 2, "table_row")], PageRankingConfig(table_row_weight=1.0), {}, [],
     [(2, 2 / 62), (1, 1 / 61)]),
    # without the weight the first rank wins
    ([h("a", 1), h("b", 2, "table_row")], PageRankingConfig(), {}, [], [(1, 1 / 61), (2, 1 / 62)]),
    # a chunk spanning pages 3-4 counts on both; ties break by page
    ([h("a", 3, page_end=4)], PageRankingConfig(), {}, [], [(3, 1 / 61), (4, 1 / 61)]),
    # the asked statement's page gets statement_weight / (rrf_k + 1)
    ([h("a", 1), h("b", 2, "table_row")], PageRankingConfig(statement_weight=1.0), {"b": "balance_sheet"},
     ["balance_sheet"], [(2, 1 / 62 + 1 / 61), (1, 1 / 61)]),
    # ... but not when the question asks for another statement
    ([h("a", 1), h("b", 2, "table_row")], PageRankingConfig(statement_weight=1.0), {"b": "balance_sheet"},
     ["cash_flow"], [(1, 1 / 61), (2, 1 / 62)]),
    # a chunk listed twice counts once, at its first rank; the next chunk takes rank 2
    ([h("a", 1), h("a", 1), h("b", 2)], PageRankingConfig(rrf_k=1.0), {}, [], [(1, 1 / 2), (2, 1 / 3)]),
]


@pytest.mark.parametrize(("hits", "config", "tags", "statements", "expected"), PAGE_CASES)
def test_rank_pages_hand_computed(hits, config, tags, statements, expected):
    pages = rank_pages(hits, config, lambda hit: tags.get(hit.chunk_id), statements)
    assert [(p.page, p.score) for p in pages] == [(pg, pytest.approx(s)) for pg, s in expected]


def _item(groups) -> QAItem:
    return QAItem(qa_id="q", filing_id=F, question="q?", reference_answer="", question_type="metric",
                  evidence=[[EvidencePlace(None, p, F) for p in g] for g in groups])


# (hits, evidence page groups, k, expected (hit_page, hit_ranked_page, recall_ranked_page,
#  all_evidence_hit_ranked_page))
METRIC_CASES = [
    # chunk order puts p1 first; the page ranking puts p2 (two rows) first
    ([h("a", 1), h("b", 2, "table_row"), h("c", 2, "table_row")], [[2]], 1, (0.0, 1.0, 1.0, 1.0)),
    ([h("a", 1), h("b", 2, "table_row"), h("c", 2, "table_row")], [[1]], 1, (1.0, 0.0, 0.0, 0.0)),
    # two required groups (p2, p5): at k=1 half the groups, at k=2 all of them
    ([h("a", 2), h("b", 5), h("c", 9)], [[2], [5]], 1, (1.0, 1.0, 0.5, 0.0)),
    ([h("a", 2), h("b", 5), h("c", 9)], [[2], [5]], 2, (1.0, 1.0, 1.0, 1.0)),
    # alternatives within a group: either page satisfies it
    ([h("a", 7), h("b", 8)], [[8, 3]], 1, (0.0, 0.0, 0.0, 0.0)),
    ([h("a", 7), h("b", 8)], [[8, 3]], 2, (1.0, 1.0, 1.0, 1.0)),
]


@pytest.mark.parametrize(("hits", "groups", "k", "expected"), METRIC_CASES)
def test_ranked_page_metrics_hand_computed(hits, groups, k, expected):
    row, status, _ = retrieval_metrics_for(hits, _item(groups), k, chunk_level=False)
    assert status == "ok"
    assert (row["hit_page"], row["hit_ranked_page"], row["recall_ranked_page"],
            row["all_evidence_hit_ranked_page"]) == expected


def test_stage_ranks_pages_of_deeper_candidates_and_keeps_the_hits():
    res = fake_resources()
    q = "Apple total net sales 2022"
    base = build_retriever({"type": "bm25"}, res).retrieve(q, 2)
    staged = build_retriever({"type": "bm25", "page_ranking": {"depth": 20, "table_row_weight": 1.0}},
                             res).retrieve(q, 2)
    assert [x.chunk_id for x in staged.hits] == [x.chunk_id for x in base.hits]
    assert len(base.top_pages) <= 2 < len(staged.top_pages)      # pages of 20 candidates, not of 2 hits
    deep = build_retriever({"type": "bm25"}, res).retrieve(q, 20).hits
    expected = rank_pages(deep, PageRankingConfig(depth=20, table_row_weight=1.0))
    assert [p.key for p in staged.top_pages] == [p.key for p in expected]
    assert "rank_pages" in staged.timings_ms


def test_sanity_random_ranked_pages_are_at_chance_level():
    """A ranking that knows nothing: 20 one-chunk pages, one evidence page per question; the page ranking
    of sanity_random's 10 random hits puts an evidence page in its top 5 at 5/20 = 0.25 (+/- 3 sd)."""
    n_pages, n_questions = 20, 240
    chunks = [chunk(f"c{p:02d}", F, f"filler text {p}", fy=2022, page=p, ticker="F") for p in range(1, n_pages + 1)]
    res = fake_resources(chunks)
    items = [QAItem(qa_id=f"q{i}", filing_id=F, question=f"question number {i}?", reference_answer="",
                    question_type="factual", evidence=[[EvidencePlace(None, 1 + i % n_pages, F)]])
             for i in range(n_questions)]
    matrix = EvalMatrix.model_validate({"retrieval": {"retrievers": ["sanity_random"], "top_k": [5, 10],
                                                      "scopes": ["filing"]}})
    _, rows = run_retrieval_eval(items, lambda name, chunking: build_retriever({"type": "sanity_random"}, res),
                                 matrix, "filing", F, "v1", retriever_specs={})
    for k in (5, 10):
        values = [r["hit_ranked_page"] for r in rows if r["k"] == k]
        assert len(values) == n_questions
        chance, sd = k / n_pages, (k / n_pages * (1 - k / n_pages) / n_questions) ** 0.5
        assert abs(sum(values) / n_questions - chance) < 3 * sd
