"""Financial tokens that word tokenizers break apart, normalised so text and queries meet.

``"$4.2B"`` and ``"$4.2 billion"`` -> ``4.2b`` (and ``4.2``); ``"2,345.6"`` -> ``2345.6``;
``"12%"`` -> ``12%`` (and ``12``); ``"10-K"`` -> ``10-k``; ``"R&D"`` -> ``r&d``; ``"FY2024"`` ->
``fy2024`` (and so does "fiscal 2024" / "fiscal year 2024"); all-caps acronyms (``EBITDA``) -> ``ebitda``. The same function runs on documents and
on queries, so a user typing "$4.2 billion" finds a chunk that printed "$4.2B".
"""

from __future__ import annotations

import re

from finrag_pipeline.core.numbers import SCALE_SUFFIX, SCALE_WORDS

# The scale vocabulary is core.numbers'; a token writes a scale as its one-letter suffix ("4.2b").
_SCALE_WORDS = {**{w: SCALE_SUFFIX[s] for w, s in SCALE_WORDS.items()}, "percent": "%", "%": "%"}
_NUMBER = re.compile(
    r"(?<![\w.,])\$?\(?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?\)?"
    r"(?:\s?(?P<word>billion|million|thousand|percent|bn|mm|mn)\b|(?P<suffix>%|[bmkBMK])(?!\w))?"
    r"(?!\w)(?![-/&]\w)",  # not the head of a code: "10-K", "1A"
    re.IGNORECASE)
# Codes joined by hyphens, slashes or ampersands: 10-K, COVID-19, S&P, R&D, 10-K/A.
_COMPOUND = re.compile(r"(?<![\w&-])[A-Za-z0-9]+(?:[-/&][A-Za-z0-9]+)+(?![\w&])")
# Letters and digits in one token: FY2024, Q3, 1A.
_ALNUM = re.compile(r"(?<![.,$])\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{2,}\b")
_ACRONYM = re.compile(r"\b[A-Z]{2,10}s?\b")
# "fiscal 2022", "fiscal year 2022", "fiscal year ended ... 2022" say what "FY2022" says.
_FISCAL_YEAR = re.compile(r"\bfiscal(?:\s+year)?\s+(?:ended\s+[A-Za-z]+\s+\d{1,2},\s+)?((?:19|20)\d{2})\b", re.IGNORECASE)


def financial_terms(text: str) -> list[str]:
    """Normalised financial tokens of ``text``, in order of appearance (duplicates kept: they are
    term frequencies). Tokens never contain whitespace."""
    found: list[tuple[int, str]] = []
    for m in _NUMBER.finditer(text):
        found.extend((m.start(), t) for t in _number_terms(m))
    found.extend((m.start(), m.group().lower()) for m in _COMPOUND.finditer(text))
    found.extend((m.start(), m.group().lower()) for m in _ALNUM.finditer(text))
    found.extend((m.start(), m.group().lower()) for m in _ACRONYM.finditer(text))
    found.extend((m.start(), f"fy{m.group(1)}") for m in _FISCAL_YEAR.finditer(text))
    found.sort(key=lambda pt: pt[0])
    return [t for _, t in found]


def _number_terms(m: re.Match[str]) -> list[str]:
    number = m.group("int").replace(",", "") + (m.group("frac") or "")
    scale = m.group("word") or m.group("suffix")
    if scale:
        return [number + _SCALE_WORDS[scale.lower()], number]
    return [number]
