"""A rule-based sentence splitter tuned for 10-K prose.

It returns character spans into the original text (never rewritten text), so chunk offsets stay
exact. Financial prose is full of periods that do not end sentences: "U.S.", "Inc.", "No. 3",
"Item 7.", "$4.2 billion", "approx. 5%". A period only ends a sentence when it is followed by
whitespace and then something that can start a sentence, and the word before it is not a known
abbreviation, an initial, or a number after "Item"/"Note"/"No.".
"""

from __future__ import annotations

import re

# Lower-cased abbreviations (without the final period) that do not end a sentence.
ABBREVIATIONS = frozenset({
    "inc", "corp", "co", "ltd", "llc", "plc", "l.p", "n.a", "s.a", "n.v", "ag", "bros",
    "no", "nos", "vs", "v", "approx", "est", "incl", "excl", "ref", "fig", "sec", "art", "para",
    "mr", "mrs", "ms", "dr", "prof", "jr", "sr", "st", "mt", "gen", "gov", "sen", "rep",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "e.g", "i.e", "cf", "u.s", "u.k", "u.n", "e.u", "p.r.c", "a.m", "p.m", "dept", "div",
    "mgmt", "intl", "assn", "natl", "govt", "yr", "yrs", "mo", "mos", "pp", "vol",
})
# Words after which "<number>." is a label ("Item 7.", "Note 12.") rather than a sentence end.
NUMBER_LABELS = frozenset({"item", "items", "note", "notes", "no", "nos", "part", "section", "rule", "article", "exhibit"})

# A candidate end: terminal punctuation, optional closing quotes/brackets, then whitespace.
_CANDIDATE = re.compile(r"[.!?]+[\"'\u2019\u201d)\]]*(?=\s)")
# What may start the next sentence: a capital, a digit, an opening quote/bracket, a bullet or a dollar sign.
_STARTER = re.compile(r"\s+([A-Z0-9\"'\u2018\u201c(\[$\u2022\u25cf-])")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
_WORD_BEFORE = re.compile(r"([A-Za-z0-9.&]+)$")
_PREV_WORD = re.compile(r"([A-Za-z]+)\W*$")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Split ``text`` into sentence spans ``(start, end)``; whitespace between sentences is excluded.

    Blank lines always end a sentence (paragraphs, page joins); single newlines are treated as
    spaces because PDF text wraps lines mid-sentence.
    """
    spans: list[tuple[int, int]] = []
    for p_start, p_end in _paragraphs(text):
        spans.extend(_split_paragraph(text, p_start, p_end))
    return spans


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as strings (convenience over :func:`split_sentences`)."""
    return [text[a:b] for a, b in split_sentences(text)]


def _paragraphs(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _PARAGRAPH_BREAK.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return [_strip(text, a, b) for a, b in spans if text[a:b].strip()]


def _split_paragraph(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans, sent_start = [], start
    for m in _CANDIDATE.finditer(text, start, end):
        nxt = _STARTER.match(text, m.end(), end)
        if nxt is None or not _is_sentence_end(text, sent_start, m.start(), m.group()):
            continue
        spans.append((sent_start, m.end()))
        sent_start = nxt.start(1)
    if sent_start < end:
        spans.append(_strip(text, sent_start, end))
    return [s for s in spans if s[1] > s[0]]


def _is_sentence_end(text: str, sent_start: int, punct_at: int, punct: str) -> bool:
    if not punct.startswith("."):
        return True  # "!" and "?" always end a sentence
    before = text[sent_start:punct_at]
    m = _WORD_BEFORE.search(before)
    if m is None:
        return True
    word = m.group(1).lower().rstrip(".")
    if word in ABBREVIATIONS:
        return False
    if len(word) == 1 and word.isalpha():
        return False  # an initial: "J. Smith", or the tail of "U.S."
    if word.isdigit():
        prev = _PREV_WORD.search(before[: m.start()])
        return not (prev and prev.group(1).lower() in NUMBER_LABELS)
    return True


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
