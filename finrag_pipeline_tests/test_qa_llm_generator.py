"""The LLM generator with mocked models at the litellm edge: parsed questions, failures counted."""

import os

import pytest
from _qa_sample import load_sample

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from finrag_pipeline.core.llm import LLMClient  # noqa: E402
from finrag_pipeline.core.qa import QAConfig, generate_qa_set  # noqa: E402
from finrag_pipeline.core.qa.llm_generator import generate_llm, prompt_hash, sample_chunks  # noqa: E402

CONFIG = QAConfig.model_validate({"generators": ["llm"], "llm": {"n_chunks": 4},
                                  "filters": {"dedup": {"embedder": "none"}}})


@pytest.fixture(scope="module")
def apple():
    return load_sample("APPLE_2022_10K")


def test_sampling_covers_sections_and_is_seeded(apple):
    a = sample_chunks(apple.chunks, 6, "13:x")
    assert len(a) == 6 and len({c.chunk_id for c in a}) == 6
    assert [c.chunk_id for c in a] == [c.chunk_id for c in sample_chunks(apple.chunks, 6, "13:x")]
    assert len({c.page_start for c in a}) >= 4
    # with sections, every section gets a pick before any gets a second
    import dataclasses

    sectioned = [dataclasses.replace(c, section=f"Item {c.page_start % 3}") for c in apple.chunks]
    assert len({c.section for c in sample_chunks(sectioned, 3, "13:x")}) == 3


@pytest.mark.parametrize(("model", "reason"), [
    ("mock-broken", "call:invalid_output"), ("mock-empty", "call:empty"), ("mock-timeout", "call:timeout"),
    ("mock-error", "call:backend_error"),
])
def test_failures_are_counted_not_raised(apple, tmp_path, model, reason):
    client = LLMClient.from_registry(model, cache_dir=tmp_path, backoff_s=0.0)
    items, log = generate_llm(apple.meta, apple.pages, apple.chunks, CONFIG, client)
    assert items == []
    assert sum(e["count"] for e in log if e["reason"] == reason) == 4


def test_mock_questions_parsed_and_recorded(apple, tmp_path):
    client = LLMClient.from_registry("mock-fenced", cache_dir=tmp_path)
    items, log = generate_llm(apple.meta, apple.pages, apple.chunks, CONFIG, client)
    assert items and all(i.generator == "llm:mock-fenced" and i.prompt_hash == prompt_hash() for i in items)
    assert all(i.evidence and i.evidence[0][0].chunk_id for i in items)
    # a re-run is served from the disk cache
    again, log2 = generate_llm(apple.meta, apple.pages, apple.chunks, CONFIG, client)
    assert [i.qa_id for i in again] == [i.qa_id for i in items]
    assert any(e["reason"] == "cache_hit" and e["count"] == 4 for e in log2)


def test_generate_qa_set_filters_unsupported_llm_answers(apple, tmp_path):
    # the mock answer "$99,803 million" is not in the sampled chunks: the evidence filter drops it
    client = LLMClient.from_registry("mock-fenced", cache_dir=tmp_path)
    result = generate_qa_set(apple.meta, apple.pages, apple.table_rows, apple.facts, apple.chunks, CONFIG, client)
    dropped = {e["reason"]: e["count"] for e in result.log if e["stage"] == "filter"}
    assert dropped.get("figure_not_in_evidence", 0) + len(result.items) >= 1
    for item in result.items:
        assert "99,803" in " ".join(c.text for c in apple.chunks if c.chunk_id in
                                    {p.chunk_id for g in item.evidence for p in g})
