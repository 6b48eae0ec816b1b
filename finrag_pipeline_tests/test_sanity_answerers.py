"""Scores that a lazy system cannot earn, on a real QA set (Apple FY2022 and Microsoft FY2022 sample 10-Ks).

Every answer evaluation runs the sanity answerers beside the real ones; a scoring change that lets
any of them score above the registry's limit (metric_registry.SANITY_LIMITS.max_correctness) on answerable
questions fails here. ``sanity_abstain`` earns credit only as abstention accuracy on unanswerable
questions. ``sanity_random`` retrieval stays within the limits' band of its recorded chance levels
(hand-computed and Monte-Carlo checks of those levels: test_sanity_chance_levels.py).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from _qa_sample import load_sample
from _retrieval_fakes import FakeLexicalIndex

from finrag_pipeline.core.evaluation.answerer_registry import (
    ANSWERERS,
    answerer_names,
    build_answerer,
    register_answerer,
)
from finrag_pipeline.core.evaluation.runner import (
    SANITY_ANSWERERS,
    EvalMatrix,
    default_answerer_factory,
    run_answer_eval,
    run_retrieval_eval,
)
from finrag_pipeline.core.qa import QAConfig
from finrag_pipeline.core.qa.model_free import generate_model_free
from finrag_pipeline.core.retrieval.lexical import BM25Retriever
from finrag_pipeline.core.retrieval.resources import ChunkStore
from finrag_pipeline.core.retrieval.sanity import RandomRetriever, candidate_pool, chance_hit_rate
from finrag_pipeline.core.scoring.metric_registry import CHANCE_METRICS, SANITY_LIMITS

SAMPLES = ["APPLE_2022_10K", "MICROSOFT_2022_10K"]
MAX_SANITY_CORRECTNESS = SANITY_LIMITS.max_correctness


@pytest.fixture(scope="module")
def corpus():
    out = []
    for name in SAMPLES:
        s = load_sample(name)
        items, _ = generate_model_free(s.meta, s.pages, s.table_rows, s.facts, s.chunks, QAConfig())
        out.append((s, items))
    return out


class ReferenceAnswerer:
    """Answers every question with its own reference answer: what a perfect answerer would say."""

    name = "reference"

    def __init__(self, items):
        self.answers = {i.question: i for i in items}

    def answer(self, question, hits, periods=None):
        from finrag_pipeline.core.answering import AnswerResult

        item = self.answers[question]
        if item.question_type == "unanswerable":
            return AnswerResult("", [], "abstained")
        return AnswerResult(item.reference_answer, [(h.filing_id, h.page_start, h.chunk_id) for h in hits[:1]],
                            "answered")


@pytest.fixture(scope="module")
def answer_rows(corpus):
    matrix = EvalMatrix.model_validate({"retrieval": {"retrievers": ["bm25"], "top_k": [5]},
                                        "answers": {"models": ["extractive", "reference"], "retriever": "bm25",
                                                    "k": 5}})
    rows = []
    for sample, items in corpus:
        retriever = BM25Retriever(FakeLexicalIndex(sample.chunks))

        def answerers(cfg, items=items):
            return ReferenceAnswerer(items) if cfg.model == "reference" else default_answerer_factory(cfg)

        _, r = run_answer_eval(items, lambda name, chunking, rt=retriever: rt, matrix, sample.meta.filing_id,
                               "test", answerer_factory=answerers, version="test")
        rows += r
    return pd.DataFrame(rows)


def test_the_set_is_real_and_the_scoring_gives_credit_to_right_answers(answer_rows, corpus):
    """The same rules that give the sanity answerers nothing give the reference answers (~) everything."""
    assert set(answer_rows.model) == {"extractive", "reference", *SANITY_ANSWERERS}
    narrative = {i.qa_id for _, items in corpus for i in items if i.question_type == "narrative"}
    reference = answer_rows[answer_rows.answerable & (answer_rows.model == "reference")]
    # narrative items commit to no figure: correctness NULL with its reason (judge-scored), never 0 or 1
    assert narrative and reference[reference.qa_id.isin(narrative)].correctness.isna().all()
    reference = reference[~reference.qa_id.isin(narrative)]
    assert len(reference) >= 40 and reference.correctness.notna().all()
    assert reference.correctness.mean() >= 0.95 and reference.non_committal.mean() <= 0.05
    unanswerable = answer_rows[~answer_rows.answerable & (answer_rows.model == "reference")]
    assert (unanswerable.abstention_correct == 1.0).all()


@pytest.mark.parametrize("model", SANITY_ANSWERERS)
def test_sanity_answerers_earn_no_correctness(answer_rows, model):
    rows = answer_rows[(answer_rows.model == model) & answer_rows.answerable]
    assert len(rows) >= 40 and rows.is_sanity.all()
    # failures and non-answers on answerable questions count as 0, as in the marts
    correctness = rows.correctness.fillna(0.0)
    assert correctness.mean() <= MAX_SANITY_CORRECTNESS, rows[correctness > 0][["qa_id", "answer"]].head()


def test_lists_and_echoes_are_non_committal(answer_rows):
    for model in ("sanity_echo", "sanity_all_figures"):
        rows = answer_rows[(answer_rows.model == model) & answer_rows.answerable
                           & (answer_rows.response_state == "answered") & answer_rows.non_committal.notna()]
        assert len(rows) >= 20 and rows.non_committal.mean() >= 0.9, model


def test_abstaining_earns_credit_only_on_unanswerable_questions(answer_rows):
    rows = answer_rows[answer_rows.model == "sanity_abstain"]
    unanswerable = rows[~rows.answerable]
    assert len(unanswerable) >= 4 and (unanswerable.abstention_correct == 1.0).all()
    assert unanswerable.correctness.isna().all()
    assert (rows[rows.answerable].correctness == 0.0).all()


def test_random_retrieval_stays_near_chance(corpus):
    matrix = EvalMatrix.model_validate({"retrieval": {"retrievers": ["sanity_random"], "top_k": [3, 10],
                                                      "scopes": ["filing"]}})
    for sample, items in corpus:
        store = ChunkStore(sample.chunks)
        retriever = RandomRetriever(store)
        _, rows = run_retrieval_eval(items, lambda name, chunking, rt=retriever: rt, matrix, "filing",
                                     sample.meta.filing_id, "test", version="test",
                                     chance_pool=lambda chunking, filters, st=store: candidate_pool(st, filters))
        df = pd.DataFrame(rows)
        df = df[df.status == "ok"]
        for metric in CHANCE_METRICS:   # the report's check (mart_chance_levels.within_chance_band)
            for k, group in df[df[metric].notna()].groupby("k"):
                chances = group[f"{metric}_chance"].astype(float)
                band = SANITY_LIMITS.chance_band_se * math.sqrt((chances * (1 - chances)).sum()) / len(group)
                assert abs(group[metric].mean() - chances.mean()) <= band + SANITY_LIMITS.chance_band_slack, (
                    sample.meta.filing_id, metric, k)
                assert len(group) >= 20


def test_random_retriever_is_deterministic_and_scoped(corpus):
    sample, _ = corpus[0]
    r = RandomRetriever(ChunkStore(sample.chunks))
    a = [h.chunk_id for h in r.search("net sales 2022", 5)]
    assert a == [h.chunk_id for h in r.search("net sales 2022", 5)] and len(set(a)) == 5
    assert a != [h.chunk_id for h in r.search("net income 2021", 5)]
    assert chance_hit_rate(100, 1, 10) == pytest.approx(0.1) and chance_hit_rate(10, 2, 10) == 1.0


def test_answerer_registry_builds_by_name_and_lists_valid_names():
    assert {"extractive", "llm", *SANITY_ANSWERERS} <= set(answerer_names())
    assert build_answerer("sanity_echo").answer("Q?", []).response_state == "no_evidence"
    with pytest.raises(ValueError, match="sanity_echo"):
        build_answerer("no-such-answerer")

    @register_answerer("test_constant")
    class Constant:
        name = "test_constant"

        def __init__(self, text: str = "$1 million"):
            self.text = text

        def answer(self, question, hits, periods=None):
            from finrag_pipeline.core.answering import AnswerResult

            return AnswerResult(self.text, [], "answered")

    try:
        assert build_answerer("test_constant", text="x", temperature=0.3).text == "x"   # unused kwargs dropped
        assert "test_constant" in answerer_names()
    finally:
        ANSWERERS.pop("test_constant")
