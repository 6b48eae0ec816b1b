"""LLMClient plumbing with litellm's mock_response and a stub provider: states, retries, cache, registry.

Mocks sit only at the LLM edge (litellm's own mock path or a registered CustomLLM)."""

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from finrag_pipeline.core.llm import LLMClient, load_model_registry  # noqa: E402
from finrag_pipeline.core.llm.local_model import GGUFSpec, LocalModelError, ensure_local_model  # noqa: E402

MSG = [{"role": "user", "content": "Write one question."}]


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "llm_cache"


@pytest.mark.parametrize(("model", "state"), [
    ("mock-json", "ok"), ("mock-fenced", "ok"), ("mock-broken", "invalid_output"),
    ("mock-empty", "empty"), ("mock-timeout", "timeout"), ("mock-error", "backend_error"),
])
def test_states_never_raise(model, state, cache_dir):
    resp = LLMClient.from_registry(model, cache_dir=cache_dir).complete(MSG)
    assert resp.state == state
    assert (resp.parsed_json is not None) == (state == "ok")


def test_ok_response_has_usage_and_json(cache_dir):
    resp = LLMClient.from_registry("mock-json", cache_dir=cache_dir).complete(MSG)
    assert resp.parsed_json["answer"] == "$394,328 million"
    assert resp.prompt_tokens > 0 and resp.completion_tokens > 0 and resp.latency_ms >= 0


def test_transient_errors_are_retried_with_backoff(cache_dir):
    client = LLMClient.from_registry("mock-timeout", cache_dir=cache_dir, max_retries=2, backoff_s=0.01)
    resp = client.complete(MSG)
    assert resp.state == "timeout" and resp.attempts == 3 and client.calls == 3


def test_disk_cache_second_call_makes_no_model_call(cache_dir):
    client = LLMClient.from_registry("mock-json", cache_dir=cache_dir)
    first = client.complete(MSG)
    second = client.complete(MSG)
    assert not first.cached and second.cached
    assert client.calls == 1
    assert second.parsed_json == first.parsed_json and second.cost_usd == 0.0
    # another process (a new client) reads the same cache
    again = LLMClient.from_registry("mock-json", cache_dir=cache_dir)
    assert again.complete(MSG).cached and again.calls == 0
    # different parameters are a different key
    assert not client.complete(MSG, temperature=0.7).cached


def test_failures_are_not_cached(cache_dir):
    client = LLMClient.from_registry("mock-error", cache_dir=cache_dir, max_retries=0)
    client.complete(MSG)
    client.complete(MSG)
    assert client.calls == 2


def test_stub_custom_provider_through_litellm(cache_dir):
    """A CustomLLM registered like the local provider: response_format and params reach it."""
    import litellm

    seen = {}

    class Stub(litellm.CustomLLM):
        def completion(self, model, messages, api_base, custom_prompt_dict, model_response, print_verbose,
                       encoding, api_key, logging_obj, optional_params, *args, **kwargs):
            seen.update(optional_params)
            model_response.choices[0].message.content = "Sure: {'question': 'Q about revenue?', 'answer': '1',}"
            model_response.usage = litellm.Usage(prompt_tokens=7, completion_tokens=5, total_tokens=12)
            return model_response

    from finrag_pipeline.core.llm.client import import_litellm

    import_litellm()
    old = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [*old, {"provider": "stubqa", "custom_handler": Stub()}]
    try:
        from litellm.utils import custom_llm_setup

        custom_llm_setup()
        resp = LLMClient("stubqa/m", cache_dir=cache_dir, temperature=0.0, max_tokens=64).complete(MSG)
    finally:
        litellm.custom_provider_map = old
    assert resp.state == "ok" and resp.parsed_json == {"question": "Q about revenue?", "answer": "1"}
    assert (resp.prompt_tokens, resp.completion_tokens) == (7, 5)
    assert seen.get("response_format") == {"type": "json_object"} and seen.get("max_tokens") == 64


def test_registry_yaml():
    reg = load_model_registry()
    assert reg.get("local-0.5b").provider == "local/qwen2.5-0.5b"
    assert reg.get("gpt-4o-mini").cost_per_1k_prompt > 0
    assert reg.get("openai/some-model").provider == "openai/some-model"  # raw litellm strings pass through
    with pytest.raises(KeyError):
        reg.get("no-such-model")


def test_cost_from_registry_prices(cache_dir):
    client = LLMClient.from_registry("mock-json", cache_dir=cache_dir, cost_per_1k_prompt=1.0,
                                     cost_per_1k_completion=2.0)
    resp = client.complete(MSG)
    assert resp.cost_usd == pytest.approx(resp.prompt_tokens / 1000 + 2 * resp.completion_tokens / 1000)


def test_local_model_missing_parts_names_the_extra(tmp_path, monkeypatch):
    from finrag_pipeline.core.llm import local_model

    spec = GGUFSpec("fake", "no_such_part_module_", 2, 10, "0" * 64, "local-llm", "fake.gguf")
    monkeypatch.setitem(local_model.LOCAL_MODELS, "fake", spec)
    with pytest.raises(LocalModelError, match=r"pip install -e '\.\[local-llm\]'"):
        ensure_local_model("fake", tmp_path)


def test_local_model_checksum_mismatch_leaves_nothing(tmp_path, monkeypatch):
    from finrag_pipeline.core.llm import local_model

    parts = []
    for i in (1, 2):
        p = tmp_path / f"p{i}.bin"
        p.write_bytes(b"abc" * i)
        parts.append(p)
    spec = GGUFSpec("fake2", "x", 2, 9, "f" * 64, "local-llm", "fake2.gguf")
    monkeypatch.setitem(local_model.LOCAL_MODELS, "fake2", spec)
    monkeypatch.setattr(local_model, "part_paths", lambda s: parts)
    with pytest.raises(LocalModelError, match="does not match"):
        ensure_local_model("fake2", tmp_path / "models")
    assert not list((tmp_path / "models").iterdir())
