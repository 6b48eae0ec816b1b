"""Pull one JSON value out of whatever a model wrote.

Models wrap JSON in ```json fences, open with "Sure! Here is ...", leave trailing commas or use
single quotes. :func:`extract_json` finds the first balanced ``{...}``/``[...]`` span after
stripping fences, tries strict ``json.loads`` first, then ``json_repair`` (a maintained repair
library, used when installed), then a small set of local fixes. It never raises.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")
_SINGLE_QUOTED_RE = re.compile(r"(?<![\w\"])'([^'\\]*(?:\\.[^'\\]*)*)'(?![\w\"])")

try:  # optional: json-repair handles far more breakage than the local fixes below
    import json_repair as _json_repair
except ImportError:  # pragma: no cover - depends on the environment
    _json_repair = None


def _candidates(text: str) -> list[str]:
    """Fenced blocks first (the model said "this is the JSON"), then the raw text."""
    found = [m.group(1).strip() for m in _FENCE_RE.finditer(text)]
    found.append(text.strip())
    return [c for c in found if c]


def _balanced_span(text: str) -> str | None:
    """The first balanced {...} or [...] span, respecting strings; None when nothing opens."""
    start = next((i for i, ch in enumerate(text) if ch in "{["), None)
    if start is None:
        return None
    stack: list[str] = []
    in_str: str | None = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == in_str:
                in_str = None
            continue
        if ch in "\"'":
            in_str = ch
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return text[start : i + 1]
    return text[start:]  # unbalanced: hand the truncated tail to the repairers


def _local_fixes(span: str) -> Any:
    fixed = _TRAILING_COMMA_RE.sub(r"\1", span)
    try:
        return json.loads(fixed)
    except ValueError:
        pass
    fixed = _SINGLE_QUOTED_RE.sub(lambda m: json.dumps(m.group(1)), fixed)
    fixed = re.sub(r"\bTrue\b", "true", re.sub(r"\bFalse\b", "false", re.sub(r"\bNone\b", "null", fixed)))
    return json.loads(fixed)


def _parse_span(span: str) -> Any | None:
    try:
        return json.loads(span)
    except ValueError:
        pass
    if _json_repair is not None:
        try:
            value = _json_repair.loads(span)
            if isinstance(value, dict | list) and value:
                return value
        except Exception:  # noqa: BLE001 - a repair library must not crash the caller
            pass
    try:
        return _local_fixes(span)
    except ValueError:
        return None


def extract_json(text: str | None) -> Any | None:
    """The first JSON object or array in ``text``, repaired if needed; None when there is none."""
    if not text or not text.strip():
        return None
    for candidate in _candidates(text):
        span = _balanced_span(candidate)
        if span is None:
            continue
        value = _parse_span(span)
        if isinstance(value, dict | list):
            return value
    return None
