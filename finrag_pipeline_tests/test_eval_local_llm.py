"""Answer evaluation with the real local 0.5B GGUF (`make install-local-llm`) over the Apple excerpt index."""

import math
import os
import time

import pandas as pd
import pytest

pytestmark = pytest.mark.local_llm

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _excerpt_corpus import build_excerpt_home, excerpt_qa_items  # noqa: E402

from finrag_pipeline.core.scoring.response_states import FAILURE_STATES as FAILURES  # noqa: E402
from finrag_pipeline.core.scoring.response_states import RESPONSE_STATES  # noqa: E402

MAX_TOKENS = 96  # a JSON answer is 20-60 tokens; a rambling 0.5B model is cut here (-> invalid_output)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return build_excerpt_home(tmp_path_factory.mktemp("answers-home"))


def test_answer_eval_with_local_model(local_ready, corpus, tmp_path):
    from finrag_pipeline.core.evaluation.answerers import LLMAnswerer
    from finrag_pipeline.core.evaluation.runner import EvalMatrix, aggregate, run_answer_eval
    from finrag_pipeline.core.llm.client import LLMClient
    from finrag_pipeline.core.llm.registry import load_model_registry
    from finrag_pipeline.core.scoring.answer_metrics import ANSWER_METRICS, JUDGE_METRICS, RATE_METRICS
    from finrag_pipeline.core.session import FinragSession

    assert load_model_registry().get("local-0.5b").provider == "local/qwen2.5-0.5b"
    session = FinragSession.open(str(corpus.paths.home))
    items = excerpt_qa_items(corpus)
    # mock-broken (models.yaml: litellm mock_response, not JSON) fails on every question without any
    # network call, so the aggregation of failures is checked on real failure rows every run.
    matrix = EvalMatrix.model_validate({
        "retrieval": {"retrievers": ["bm25"]},
        # bm25_features (BM25 + figure/line-item features) puts each question's evidence in the top 2;
        # k=2 keeps the prompt near 500 tokens.
        "answers": {"models": ["local-0.5b", "mock-broken"], "prompt_types": ["standard"],
                    "retriever": "bm25_features", "k": 2, "scope": "filing", "max_questions": 3}})

    def answerer_factory(cfg):
        if cfg.is_sanity:  # the sanity answerers run beside every evaluation; they need no model
            from finrag_pipeline.core.evaluation.runner import default_answerer_factory

            return default_answerer_factory(cfg)
        # default_answerer_factory with a small token budget and a fresh response cache (no cached
        # answers: tokens and latency come from real calls).
        client = LLMClient.from_registry(cfg.model, cache_dir=tmp_path / "llm-cache", max_tokens=MAX_TOKENS)
        return LLMAnswerer(client, prompt_type=cfg.prompt_type, temperature=cfg.temperature, top_p=cfg.top_p,
                           max_tokens=MAX_TOKENS, max_context_chars=2000, name=cfg.name)

    t0 = time.perf_counter()
    runs, rows = run_answer_eval(items, session.retriever_factory, matrix, corpus.filing_id, "test-state",
                                 answerer_factory=answerer_factory, version="test")
    elapsed = time.perf_counter() - t0
    print(f"\nanswer eval: {elapsed:.1f}s for {len(rows)} answers")
    for r in rows:
        print(f"  {r['model']:<11} {r['qa_id']:<13} {r['response_state']:<15} tokens={r['prompt_tokens']}+"
              f"{r['completion_tokens']} {r['latency_ms']:.0f}ms correctness={r['correctness']} "
              f"answer={r['answer'][:90]!r}")

    local = [r for r in rows if r["model"] == "local-0.5b"]
    broken = [r for r in rows if r["model"] == "mock-broken"]
    assert sorted(r["qa_id"] for r in local) == sorted(i.qa_id for i in items)  # every question has a row
    assert len(broken) == len(items)
    for r in local:
        assert r["response_state"] in RESPONSE_STATES, r
        assert r["response_state"] != "backend_error", r["error"]  # the local backend ran
        assert r["prompt_tokens"] > 0 and r["completion_tokens"] > 0, r
        assert r["completion_tokens"] <= MAX_TOKENS
        assert r["latency_ms"] > 0, r
        assert r["cost_usd"] == 0.0
        assert r["retriever"] == "bm25_features" and r["k"] == 2
    # Failures are stored as 0 on every score, never NULL (the rates non_committal/abstention_correct aside);
    # the judge's scores are not computed without a judge (NULL, "no judge configured"), never a 0.
    for r in [*local, *broken]:
        if r["response_state"] in FAILURES:
            # key_fact_recall applies only to a reference with key facts (NULL, "no key facts", otherwise)
            assert all(r[m] == 0.0 for m in ANSWER_METRICS
                       if m not in RATE_METRICS and m not in JUDGE_METRICS and m != "key_fact_recall"), r
            assert r["key_fact_recall"] in (0.0, None), r
            assert all(r[m] is None for m in JUDGE_METRICS), r
    assert {r["response_state"] for r in broken} == {"invalid_output"}

    # aggregate: failures count as 0 (in n_total and n_scored), so they lower the mean.
    df = pd.DataFrame(rows)
    agg = aggregate(df, by=["config_name"], metrics=["correctness", "state_correct"], n_boot=200)
    by_model = dict(zip(df["config_name"], df["model"], strict=False))
    for rec in agg.to_dict("records"):
        group = df[df["config_name"] == rec["config_name"]]
        n_fail = int(group["response_state"].isin(FAILURES).sum())
        assert rec["n_error"] == n_fail
        values = pd.to_numeric(group[rec["metric"]], errors="coerce").dropna()
        assert rec["n_scored"] == len(values) and rec["n_total"] == len(group)
        assert math.isclose(rec["mean"], values.mean())
        if by_model[rec["config_name"]] == "mock-broken":
            assert rec["mean"] == 0.0 and rec["n_scored"] == rec["n_total"] == len(items)
    statuses = {r["config_name"]: r["status"] for r in runs}
    assert statuses["mock-broken/standard/t0/p1@bm25_features@2"] == "error"
