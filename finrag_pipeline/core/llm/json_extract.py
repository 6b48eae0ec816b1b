"""Pull one JSON value out of whatever a model wrote.

Models wrap JSON in ```json fences, open with "Sure! Here is ...", leave trailing commas or use
single quotes. :func:`extract_json` finds the first balanced ``{...}``/``[...]`` span after
stripping fences, tries strict ``json.loads`` first, then ``json_repair`` (a maintained repair
library, used when installed), then a small set of local fixes. It never raises.

A reply cut off mid-JSON (max_tokens, a dying server) can be "repaired" into a plausible object whose
last value is cut short ("394" of "394.3", a citation list missing its end). :func:`extract_json_checked`
says whether the JSON was truncated and which top-level keys were complete before the cut, so callers
can refuse to trust a truncated answer unless every field they need was complete.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
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


def _first_span(text: str) -> tuple[str, bool] | None:
    """The first {...} or [...] span, respecting strings, and whether it closes (False: the truncated
    tail, handed to the repairers); None when nothing opens or a closer does not match."""
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
                return text[start : i + 1], True
    return text[start:], False


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


@dataclass(frozen=True)
class JsonExtraction:
    value: Any | None
    truncated: bool = False                     # the JSON never closed: it was cut off
    complete_keys: frozenset[str] = field(default_factory=frozenset)  # top-level keys whose values ended

    def complete(self, required: tuple[str, ...] | list[str]) -> bool:
        """The value is trustworthy for ``required``: not truncated, or every required key's value ended
        before the cut."""
        return isinstance(self.value, dict) and all(k in self.value for k in required) and (
            not self.truncated or set(required) <= self.complete_keys)


def _complete_top_level_keys(span: str) -> frozenset[str]:
    """Top-level keys of a (possibly truncated) JSON object whose values visibly ended: a closed string,
    a closed array/object, or a literal followed by a delimiter."""
    done: set[str] = set()
    if not span.startswith("{"):
        return frozenset()
    depth, i, n = 0, 0, len(span)
    key: str | None = None
    expecting_key = True
    while i < n:
        ch = span[i]
        if ch in "\"'":
            end, escaped = i + 1, False
            while end < n and (escaped or span[end] != ch):
                escaped = not escaped and span[end] == "\\"
                end += 1
            if end >= n:
                break  # string cut off
            if depth == 1:
                if expecting_key:
                    key, expecting_key = span[i + 1:end], False
                elif key is not None:
                    done.add(key)
            i = end + 1
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 1 and key is not None:
                done.add(key)
        elif depth == 1 and ch == ",":
            expecting_key = True
        elif depth == 1 and not expecting_key and key is not None and (ch.isalnum() or ch in "-."):
            j = i
            while j < n and (span[j].isalnum() or span[j] in "+-."):
                j += 1
            if j < n:  # a delimiter follows: the literal is whole
                done.add(key)
            i = j
            continue
        i += 1
    return frozenset(done)


def extract_json_checked(text: str | None) -> JsonExtraction:
    """Like :func:`extract_json`, and says whether the JSON was truncated and which keys were complete."""
    if not text or not text.strip():
        return JsonExtraction(None)
    for candidate in _candidates(text):
        found = _first_span(candidate)
        if found is None:
            continue
        span, closed = found
        value = _parse_span(span)
        if isinstance(value, dict | list):
            truncated = not closed
            keys = _complete_top_level_keys(span) if truncated else frozenset(value if isinstance(value, dict) else ())
            return JsonExtraction(value, truncated, keys)
    return JsonExtraction(None)


def extract_json(text: str | None) -> Any | None:
    """The first JSON object or array in ``text``, repaired if needed; None when there is none."""
    return extract_json_checked(text).value
