"""Function calling for the packaged Qwen2.5 models: the prompt and the reply format of Qwen2.5's own
chat template (``<tools>`` in the system turn, ``<tool_call>`` JSON in the reply, ``<tool_response>``
in a user turn).

llama.cpp's C chat-template helper does not render tools, so with ``tools=`` the local provider
renders the prompt here and turns the ``<tool_call>`` blocks of the reply into OpenAI-style tool calls
(what ``litellm.completion(..., tools=...)`` callers such as the analyst_tools answerer read).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
_TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    return obj.get(key, default) if isinstance(obj, dict) else getattr(obj, key, default)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def render_tool_prompt(messages: list[Any], tools: list[dict[str, Any]]) -> str:
    """The ChatML prompt of Qwen2.5's template for ``messages`` with ``tools``, assistant turn opened."""
    first_system = bool(messages) and _get(messages[0], "role") == "system"
    system = _get(messages[0], "content") if first_system else DEFAULT_SYSTEM
    out = ["<|im_start|>system\n", system or "",
           "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
           "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"]
    out += ["\n" + json.dumps(tool, ensure_ascii=False) for tool in tools]
    out.append('\n</tools>\n\nFor each function call, return a json object with function name and arguments '
               'within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, '
               '"arguments": <args-json-object>}\n</tool_call><|im_end|>\n')
    rest = messages[1:] if first_system else messages
    for i, m in enumerate(rest):
        role, content = _get(m, "role"), _get(m, "content") or ""
        calls = _get(m, "tool_calls") or []
        if role == "tool":
            if i == 0 or _get(rest[i - 1], "role") != "tool":
                out.append("<|im_start|>user")
            out.append(f"\n<tool_response>\n{content}\n</tool_response>")
            if i == len(rest) - 1 or _get(rest[i + 1], "role") != "tool":
                out.append("<|im_end|>\n")
        elif role == "assistant" and calls:
            out.append("<|im_start|>assistant" + (f"\n{content}" if content else ""))
            for call in calls:
                fn = _get(call, "function", call)
                out.append('\n<tool_call>\n{"name": "' + str(_get(fn, "name")) + '", "arguments": '
                           + json.dumps(_arguments(_get(fn, "arguments")), ensure_ascii=False) + "}\n</tool_call>")
            out.append("<|im_end|>\n")
        else:
            out.append(f"<|im_start|>{role}\n{content}<|im_end|>\n")
    out.append("<|im_start|>assistant\n")
    return "".join(out)


def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """(content outside the tool calls, OpenAI-style tool calls) of a Qwen2.5 reply. A block whose
    JSON does not parse or names no function is left in the content (the caller sees the text)."""
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    pos = 0
    for match in _TOOL_CALL_RE.finditer(text):
        try:
            data = json.loads(match.group(1))
        except ValueError:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            continue
        kept.append(text[pos:match.start()])
        pos = match.end()
        args = data.get("arguments", {})
        calls.append({"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
                      "function": {"name": data["name"],
                                   "arguments": args if isinstance(args, str) else json.dumps(args)}})
    kept.append(text[pos:])
    return "".join(kept).strip(), calls
