"""The calculator's tools for LLMs: a full function-calling exchange through litellm with a scripted
in-process provider (litellm.CustomLLM, no network), the structured prompt with litellm's
mock_response, and (mark local_llm) the local GGUF model end to end."""

from __future__ import annotations

import json
import os

import pytest
from _analyst_corpus import MSFT, parsed_samples

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from finrag_pipeline.core.analyst.llm_answerers import (  # noqa: E402
    TOOL_SPECS,
    AnalystTools,
    StructuredPromptAnswerer,
    ToolCallingAnswerer,
)
from finrag_pipeline.core.analyst.store import FactStore  # noqa: E402
from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer  # noqa: E402

QUESTION = "What was Microsoft's operating margin in fiscal 2022?"


@pytest.fixture(scope="module")
def parsed():
    return parsed_samples()


@pytest.fixture(scope="module")
def calc(parsed):
    return calculator_answerer(FactStore.from_parsed(parsed.values()))


class ScriptedModel:
    """A litellm provider that plays an analyst model: it calls the tools, reads what they return,
    and answers. ``seen`` keeps every request (messages and tools) it received."""

    def __init__(self, final_refs=None):
        import litellm

        self.seen: list[tuple[list, dict]] = []
        self.final_refs = final_refs
        outer = self

        class Handler(litellm.CustomLLM):
            def completion(self, model, messages, api_base, custom_prompt_dict, model_response, print_verbose,
                           encoding, api_key, logging_obj, optional_params, acompletion=None,
                           litellm_params=None, logger_fn=None, headers=None, timeout=None, client=None):
                outer.seen.append((json.loads(json.dumps(messages, default=str)), dict(optional_params)))
                message = outer.step(messages)
                model_response.choices[0].message = litellm.Message(**message)
                model_response.choices[0].finish_reason = "tool_calls" if message.get("tool_calls") else "stop"
                model_response.usage = litellm.Usage(prompt_tokens=50, completion_tokens=10, total_tokens=60)
                return model_response

        self.handler = Handler()

    @staticmethod
    def _call(i, name, args):
        return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    def step(self, messages):
        tool_results = [json.loads(m["content"]) for m in messages if m.get("role") == "tool"]
        if not tool_results:
            return {"role": "assistant", "content": None, "tool_calls": [
                self._call(1, "lookup_line_item", {"company": "Microsoft", "fiscal_year": 2022,
                                                   "line_item": "operating income"}),
                self._call(2, "lookup_line_item", {"company": "Microsoft", "fiscal_year": 2022,
                                                   "line_item": "total revenue"})]}
        if len(tool_results) == 2:
            oi, rev = tool_results
            return {"role": "assistant", "content": None, "tool_calls": [
                self._call(3, "calculate", {"expression": f"{oi['value']} / {rev['value']} * 100"})]}
        pct = float(tool_results[2]["result"])
        refs = self.final_refs or [tool_results[0]["ref"], tool_results[1]["ref"]]
        return {"role": "assistant", "content": json.dumps({"answer": f"{pct:.1f}% in fiscal 2022", "refs": refs,
                                                            "abstain": False})}


@pytest.fixture
def scripted(monkeypatch):
    import litellm

    def make(**kw):
        model = ScriptedModel(**kw)
        monkeypatch.setattr(litellm, "custom_provider_map",
                            [*litellm.custom_provider_map, {"provider": "scripted", "custom_handler": model.handler}])
        from litellm.utils import custom_llm_setup

        custom_llm_setup()
        return model
    return make


def test_tool_calling_exchange_end_to_end(calc, parsed, scripted):
    model = scripted()
    r = ToolCallingAnswerer("scripted/analyst", calc).answer(QUESTION, [])
    assert r.response_state == "answered", (r.error, r.details)
    assert r.text == "42.1% in fiscal 2022"
    # three model calls: two lookups, one calculation, then the answer; tools were offered each time
    assert len(model.seen) == 3 and all(p.get("tools") == TOOL_SPECS for _, p in model.seen)
    lookups = [c["result"] for c in r.details["tool_calls"] if c["tool"] == "lookup_line_item"]
    assert [(x["line_item"], x["value"]) for x in lookups] == [("Operating income", "83383"),
                                                               ("Total revenue", "198270")]
    calc_result = [c["result"] for c in r.details["tool_calls"] if c["tool"] == "calculate"][0]
    assert calc_result["result"].startswith("42.05527")  # 83,383 / 198,270 x 100
    page = 57
    assert [c[:2] for c in r.citations] == [(parsed[MSFT].meta.filing_id, page)] * 2
    assert all(c[2] for c in r.citations) and r.prompt_tokens == 150 and r.completion_tokens == 30


def test_tool_calling_answer_citing_an_unknown_ref_is_invalid(calc, scripted):
    scripted(final_refs=["F9"])
    r = ToolCallingAnswerer("scripted/analyst", calc).answer(QUESTION, [])
    assert r.response_state == "invalid_output" and "F9" in r.error and not r.citations


def test_tools_report_missing_values_and_bad_expressions(calc):
    tools = AnalystTools(calc)
    assert "not in the filing" in tools.run("lookup_line_item", {"company": "Amazon", "fiscal_year": 2018,
                                                                 "line_item": "operating income"})["error"]
    assert "error" in tools.run("calculate", {"expression": "__import__('os')"})
    assert "error" in tools.run("nope", {})
    assert tools.facts == {}


def test_structured_prompt_with_mock_response(calc, parsed, tmp_path):
    from finrag_pipeline.core.llm.client import LLMClient

    reply = json.dumps({"answer": "42.1%", "refs": ["F1", "F2"], "abstain": False})
    client = LLMClient("openai/gpt-4o-mini", mock_response=reply, cache_dir=tmp_path)
    answerer = StructuredPromptAnswerer(client, calc)
    r = answerer.answer(QUESTION, [])
    assert r.response_state == "answered" and r.text == "42.1%"
    assert {c[1] for c in r.citations} == {57} and len(r.citations) == 2
    sheet = answerer.messages(QUESTION, "x")[1]["content"]
    assert sheet.startswith("FACT SHEET:")
    # a missing input is an abstention without a model call
    before = client.calls
    r = answerer.answer("What was Amazon's operating income in 2018?", [])
    assert r.response_state == "abstained" and client.calls == before


@pytest.mark.local_llm
def test_local_model_answers_with_citations(local_ready, calc, parsed, tmp_path):
    from finrag_pipeline.core.llm.client import LLMClient

    client = LLMClient.from_registry("local-0.5b", cache_dir=tmp_path / "llm-cache", max_tokens=96)
    r = StructuredPromptAnswerer(client, calc, max_tokens=96).answer(QUESTION, [])
    print(r.text, r.citations, r.error)
    assert r.response_state == "answered", (r.error, r.text)
    assert r.citations and all(c[1] == 57 for c in r.citations)
    assert "42.1" in r.text
