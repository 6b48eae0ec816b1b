"""Row labels as the fact layer compares them (shared by the store and the question planner)."""

from __future__ import annotations

import re

_FOOTNOTE = re.compile(r"\s*\(\d\)|\s*\*+$")
_NON_WORD = re.compile(r"[^a-z0-9&()%/]+")


def normalize_label(text: str) -> str:
    """'Total net sales:' -> 'total net sales'; quotes, footnote markers and punctuation dropped."""
    t = (text or "").lower().replace("\u2019", "'").replace("'", "")
    t = _FOOTNOTE.sub("", t)
    return _NON_WORD.sub(" ", t).strip()
