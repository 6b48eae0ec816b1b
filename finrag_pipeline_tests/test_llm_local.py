"""The real 0.5B GGUF through litellm "local/qwen2.5-0.5b" on a few chunks (`make install-local-llm`;
the local_ready fixture is in conftest.py)."""

import os

import pytest

pytestmark = pytest.mark.local_llm

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


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


def test_local_llm_generates_kept_questions_with_valid_evidence(local_ready, tmp_path):
    """The real 0.5B model through the same path as `finrag qa generate --model local-0.5b`: at least
    one question survives every filter (figures and quote in the evidence, passage-dependent, answer
    in the question, duplicates) and its evidence is the chunk it was written from."""
    from _qa_sample import load_sample

    from finrag_pipeline.core.llm import LLMClient
    from finrag_pipeline.core.numbers import figure_in_text
    from finrag_pipeline.core.qa import QAConfig
    from finrag_pipeline.core.qa.filters import is_question_form, source_figures
    from finrag_pipeline.core.qa.generate import generate_llm_set

    s = load_sample("APPLE_2022_10K")
    # statement rows are short, self-contained excerpts: what a 0.5B model reads reliably
    config = QAConfig.model_validate({"llm": {
        "n_chunks": 4, "question_types": ["numerical", "factual"], "chunk_types": ["table_row"],
        "min_chunk_chars": 60, "max_chunk_chars": 600}, "filters": {"dedup": {"embedder": "none"}}})
    # a generous timeout: on a busy machine a call can take minutes, and a timeout is no question
    client = LLMClient.from_registry("local-0.5b", cache_dir=tmp_path, max_tokens=200, timeout_s=900)
    result = generate_llm_set(s.meta, s.pages, s.chunks, client, config)
    log = {e["reason"]: e["count"] for e in result.log}
    assert sum(n for r, n in log.items() if r.startswith("call:")) == 4, log
    assert result.items, log                      # at least one kept question (it used to pass with none)
    chunks = {c.chunk_id: c for c in s.chunks}
    pages = {p.page_number: p.text for p in s.pages}
    for item in result.items:
        assert item.generator == "llm:local-0.5b" and item.question and item.reference_answer
        assert is_question_form(item.question), item.question    # a question, not a label
        (group,) = item.evidence
        chunk = chunks[group[0].chunk_id]
        assert chunk.page_start <= group[0].page <= chunk.page_end
        for fig in source_figures(item):       # every answer figure is printed in the chunk and on its page
            assert figure_in_text(fig["value"], chunk.text, 1.0, fig["text"])
            assert figure_in_text(fig["value"], pages[group[0].page], 1.0, fig["text"])
        assert item.metadata["leakage"]["band"] in ("low", "medium", "high")

def test_score_yes_no_prefers_relevant_passage(local_ready):
    from finrag_pipeline.core.llm.local_provider import score_pairs

    scores = score_pairs("What was Apple's total net sales in 2022?",
                         ["Total net sales were $394,328 million in 2022, up from $365,817 million.",
                          "The Company's headquarters are in Cupertino, California."])
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[0] > scores[1]


def test_runtime_stops_limits_and_constrains_json(local_ready):
    """The generation loop of the runtime in use: a stop string cuts the text before it, max_tokens
    ends with finish "length", and JSON mode yields a parseable object even for a prose request."""
    import json

    from finrag_pipeline.core.llm.local_provider import load_llama

    backend = load_llama("qwen2.5-0.5b")
    greedy = {"temperature": 0.0, "top_p": 1.0}
    text, n_prompt, _, _ = backend.chat([{"role": "user", "content": "Count from 1 to 30, separated by commas."}],
                                        {**greedy, "max_tokens": 80, "stop": ["7,"]}, None)
    assert n_prompt > 10
    assert "6," in text and "7" not in text, text
    _, _, n_done, finish = backend.chat([{"role": "user", "content": "Write a long story about revenue."}],
                                        {**greedy, "max_tokens": 8}, None)
    assert (n_done, finish) == (8, "length")
    text, _, _, finish = backend.chat([{"role": "user", "content": "Tell me a joke."}],
                                      {**greedy, "max_tokens": 200, "response_format": {"type": "json_object"}}, None)
    assert finish == "stop" and isinstance(json.loads(text), dict), text
