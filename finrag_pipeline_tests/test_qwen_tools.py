"""Function calling for the local Qwen2.5 models: the prompt of Qwen2.5's template with tools, and
<tool_call> replies read back as OpenAI-style tool calls (no model needed)."""

import json

from finrag_pipeline.core.llm.qwen_tools import DEFAULT_SYSTEM, parse_tool_calls, render_tool_prompt

TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "A statement value.",
                                           "parameters": {"type": "object",
                                                          "properties": {"item": {"type": "string"}}}}}]


def test_prompt_matches_qwen_template_layout():
    messages = [
        {"role": "system", "content": "Answer from tools."},
        {"role": "user", "content": "Operating margin FY2022?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"item": "revenue"}'}},
            {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": {"item": "op_income"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"value": 198270}'},
        {"role": "tool", "tool_call_id": "c2", "content": '{"value": 83383}'},
    ]
    prompt = render_tool_prompt(messages, TOOLS)
    assert prompt.startswith("<|im_start|>system\nAnswer from tools.\n\n# Tools\n")
    assert "<tools>\n" + json.dumps(TOOLS[0]) + "\n</tools>" in prompt
    assert "<|im_start|>user\nOperating margin FY2022?<|im_end|>\n" in prompt
    # both calls in one assistant turn, arguments as JSON objects whichever way they came
    assert ('<|im_start|>assistant\n<tool_call>\n{"name": "lookup", "arguments": {"item": "revenue"}}\n</tool_call>'
            '\n<tool_call>\n{"name": "lookup", "arguments": {"item": "op_income"}}\n</tool_call><|im_end|>\n') in prompt
    # consecutive tool results share one user turn
    assert ('<|im_start|>user\n<tool_response>\n{"value": 198270}\n</tool_response>\n<tool_response>\n'
            '{"value": 83383}\n</tool_response><|im_end|>\n') in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    assert prompt.count("<|im_start|>system") == 1


def test_prompt_without_system_uses_qwen_default():
    prompt = render_tool_prompt([{"role": "user", "content": "hi"}], TOOLS)
    assert prompt.startswith(f"<|im_start|>system\n{DEFAULT_SYSTEM}\n\n# Tools")


def test_parse_tool_calls_and_text():
    text = ('Let me look.\n<tool_call>\n{"name": "lookup", "arguments": {"item": "revenue", "year": 2022}}\n'
            '</tool_call>\n<tool_call>\n{"name": "calc", "arguments": "{\\"expr\\": \\"1+1\\"}"}\n</tool_call>')
    content, calls = parse_tool_calls(text)
    assert content == "Let me look."
    assert [c["function"]["name"] for c in calls] == ["lookup", "calc"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"item": "revenue", "year": 2022}
    assert calls[1]["function"]["arguments"] == '{"expr": "1+1"}'
    assert len({c["id"] for c in calls}) == 2 and all(c["type"] == "function" for c in calls)


def test_plain_answer_and_broken_blocks_are_no_calls():
    assert parse_tool_calls('{"answer": "42.1%", "refs": ["F1"]}') == ('{"answer": "42.1%", "refs": ["F1"]}', [])
    broken = "<tool_call>\n{not json}\n</tool_call>"
    assert parse_tool_calls(broken) == (broken, [])
    nameless = '<tool_call>{"arguments": {}}</tool_call>'
    assert parse_tool_calls(nameless) == (nameless, [])
    # a reply cut off after the JSON (max_tokens) still yields its call
    content, calls = parse_tool_calls('<tool_call>\n{"name": "lookup", "arguments": {"item": "x"}}')
    assert content == "" and calls[0]["function"]["name"] == "lookup"
