"""Chance levels (core/retrieval/sanity.py): hand-computed tables, and sanity_random itself measured
against them on a real chunk store (Apple FY2022 sample 10-K with its model-free QA set).

The page formulas count a page hit when any drawn leaf touches an evidence page. That is exact when every
leaf sits on one page (checked by Monte-Carlo on the real store restricted to its single-page leaves); with
two-page leaves the page metrics' cut at k distinct pages can only lose hits, so the formula is an upper
bound (checked one-sided on the full store)."""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb

import pandas as pd
import pytest
from _qa_sample import load_sample

from finrag_pipeline.core.evaluation.runner import EvalMatrix, run_retrieval_eval
from finrag_pipeline.core.models import Chunk
from finrag_pipeline.core.qa import QAConfig
from finrag_pipeline.core.qa.model_free import generate_model_free
from finrag_pipeline.core.retrieval.resources import ChunkStore
from finrag_pipeline.core.retrieval.sanity import (
    MAX_CHANCE_GROUPS,
    ChanceLevels,
    RandomRetriever,
    candidate_pool,
    chance_all_hit_rate,
    chance_hit_rate,
)

CHANCE_METRICS = ("hit_chunk", "hit_page", "all_evidence_hit")


@pytest.mark.parametrize(("n", "g", "k", "expected"), [
    (10, 1, 1, Fraction(1, 10)),
    (10, 2, 2, 1 - Fraction(comb(8, 2), comb(10, 2))),   # 1 - 28/45 = 17/45
    (100, 1, 10, Fraction(1, 10)),
    (20, 3, 5, 1 - Fraction(comb(17, 5), comb(20, 5))),
    (5, 5, 1, Fraction(1)),                               # every leaf is evidence
    (10, 0, 3, Fraction(0)),                              # no evidence in the pool
    (4, 1, 10, Fraction(1)),                              # k > N: every leaf is drawn
    (0, 1, 5, Fraction(0)),                               # empty pool
])
def test_chance_hit_rate_table(n, g, k, expected):
    assert chance_hit_rate(n, g, k) == pytest.approx(float(expected))


@pytest.mark.parametrize(("n", "groups", "k", "expected"), [
    (4, [{"a"}, {"b"}], 2, Fraction(1, 6)),               # only the pair {a, b} of C(4, 2) = 6
    (5, [{"a", "b"}, {"c"}], 2, Fraction(2, 10)),         # {a, c} or {b, c}
    (5, [{"a", "b"}, {"b", "c"}], 1, Fraction(1, 5)),     # one draw covers both only if it is b
    (6, [{"a"}, {"b"}, {"c"}], 3, Fraction(1, 20)),       # exactly {a, b, c} of C(6, 3) = 20
    (10, [{"a", "b"}], 2, Fraction(17, 45)),              # one group: the plain hit rate
    (4, [{"a"}, {"b"}], 1, Fraction(0)),                  # two groups, one draw
    (5, [{"a"}, set()], 3, Fraction(0)),                  # a group without a candidate is never covered
])
def test_chance_all_hit_rate_table(n, groups, k, expected):
    assert chance_all_hit_rate(n, groups, k) == pytest.approx(float(expected))


def test_chance_all_hit_rate_gives_up_beyond_the_group_limit():
    groups = [{f"c{i}"} for i in range(MAX_CHANCE_GROUPS + 1)]
    assert chance_all_hit_rate(100, groups, 50) is None
    assert chance_all_hit_rate(100, groups[:-1], 50) is not None


def _leaf(cid, page_start, page_end=None, filing="F"):
    return Chunk(chunk_id=cid, filing_id=filing, ticker=None, company="x", fiscal_year=2022, form_type="10-K",
                 section=None, page_start=page_start, page_end=page_end or page_start, chunk_type="table_row",
                 text=cid)


def test_question_chance_on_a_hand_built_pool():
    """8 leaves: a statement page 1 with three table rows (c1-c3), c4 on p2, c5 spanning p3-4, c6 on p4,
    c7 and c8 on p5. Evidence: c1 (p1) and c6 (p4), both required. g = 2; page 1 holds c1-c3 and page 4
    c5-c6: m = 5; all-evidence needs one of {c1, c2, c3} and one of {c5, c6}."""
    pool = [_leaf("c1", 1), _leaf("c2", 1), _leaf("c3", 1), _leaf("c4", 2), _leaf("c5", 3, 4), _leaf("c6", 4),
            _leaf("c7", 5), _leaf("c8", 5)]
    q = ChanceLevels(pool).for_question([{"c1"}, {"c6"}], [{("F", 1)}, {("F", 4)}], [1, 2, 8])
    assert (q.pool_size, q.evidence_chunks, q.evidence_page_chunks) == (8, 2, 5)
    total = comb(8, 2)
    assert q.hit_chunk[2] == pytest.approx(1 - comb(6, 2) / total)           # 13/28
    assert q.hit_page[2] == pytest.approx(1 - comb(3, 2) / total)            # 25/28: statement pages
    assert q.all_evidence_hit[2] == pytest.approx(3 * 2 / total)             # 6/28
    assert (q.hit_chunk[1], q.hit_page[1], q.all_evidence_hit[1]) == pytest.approx((2 / 8, 5 / 8, 0.0))
    assert (q.hit_chunk[8], q.hit_page[8], q.all_evidence_hit[8]) == pytest.approx((1.0, 1.0, 1.0))
    # evidence chunk ids of another chunking: no chunk-level chance, the page levels stand (page 1 alone: m = 3)
    other = ChanceLevels(pool).for_question(None, [{("F", 1)}], [2])
    assert other.hit_chunk[2] is None and other.evidence_chunks is None
    assert other.hit_page[2] == pytest.approx(1 - comb(5, 2) / total) == other.all_evidence_hit[2]   # 18/28


# ---------------------------------------------------------------------------------------------------------
# sanity_random itself on a real chunk store


@pytest.fixture(scope="module")
def apple():
    sample = load_sample("APPLE_2022_10K")
    items, _ = generate_model_free(sample.meta, sample.pages, sample.table_rows, sample.facts, sample.chunks,
                                   QAConfig())
    return sample, items


MATRIX = EvalMatrix.model_validate({"retrieval": {"retrievers": ["sanity_random"], "top_k": [3, 5, 10],
                                                  "scopes": ["filing"]}})


def _random_rows(sample, items, chunks, seeds) -> pd.DataFrame:
    """sanity_random evaluated as the pipeline evaluates it, once per seed, with the chance columns."""
    store = ChunkStore(chunks)
    frames = []
    for seed in seeds:
        retriever = RandomRetriever(store, seed=seed)
        _, rows = run_retrieval_eval(items, lambda name, chunking, rt=retriever: rt, MATRIX, "filing",
                                     sample.meta.filing_id, "test", version="test",
                                     chance_pool=lambda chunking, filters: candidate_pool(store, filters))
        frames.append(pd.DataFrame(rows))
    df = pd.concat(frames)
    return df[df.status == "ok"]


def _measured_vs_chance(df: pd.DataFrame, metric: str):
    """Per k: (measured mean, mean chance level, standard error of the measured mean under chance, n)."""
    for k, group in df[df[metric].notna()].groupby("k"):
        p = group[f"{metric}_chance"].astype(float)
        assert p.notna().all()
        yield int(k), group[metric].mean(), p.mean(), math.sqrt((p * (1 - p)).sum()) / len(group), len(group)


def test_sanity_random_evaluation_lies_within_3_se_of_chance(apple):
    """The evaluation as it runs (one seeded draw per question): every chance metric within 3 standard
    errors. Page hit@5 of a random draw is ~0.25 on this filing, chunk hit@5 ~0.03."""
    sample, items = apple
    df = _random_rows(sample, items, sample.chunks, [0])
    for metric in CHANCE_METRICS:
        for k, measured, chance, se, n in _measured_vs_chance(df, metric):
            assert n >= 30
            assert abs(measured - chance) <= 3 * se, (metric, k, measured, chance, se)
    page5 = next(c for k, _, c, _, _ in _measured_vs_chance(df, "hit_page") if k == 5)
    chunk5 = next(c for k, _, c, _, _ in _measured_vs_chance(df, "hit_chunk") if k == 5)
    assert page5 > 5 * chunk5   # statement pages hold many table-row chunks: page chance >> chunk chance


def test_page_chance_is_exact_for_single_page_leaves_monte_carlo(apple):
    """40 independent draws per question over the real store's single-page leaves: the page formulas are
    exact there, so the Monte-Carlo mean lies within 3 standard errors (~0.01) on both sides."""
    sample, items = apple
    chunks = [c for c in sample.chunks if not c.is_leaf or c.page_start == c.page_end]
    df = _random_rows(sample, items, chunks, range(40))
    for metric in ("hit_page", "all_evidence_hit"):
        for k, measured, chance, se, n in _measured_vs_chance(df, metric):
            assert n >= 40 * 30 and se < 0.012
            assert abs(measured - chance) <= 3 * se, (metric, k, measured, chance, se)


def test_page_chance_is_an_upper_bound_with_two_page_leaves_monte_carlo(apple):
    """The full store (~10% of its leaves span two pages): the cut at k distinct pages only loses hits, so
    the Monte-Carlo mean stays below chance + 3 standard errors."""
    sample, items = apple
    df = _random_rows(sample, items, sample.chunks, range(40))
    for metric in ("hit_page", "all_evidence_hit"):
        for k, measured, chance, se, _ in _measured_vs_chance(df, metric):
            assert measured <= chance + 3 * se, (metric, k, measured, chance, se)
