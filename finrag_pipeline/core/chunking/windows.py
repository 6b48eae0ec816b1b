"""Sentence-aligned windows over a text: the prose chunk boundaries.

Windows are built from sentence spans, never cut a sentence unless the sentence alone exceeds
the window size (then it is cut at whitespace), and overlap by whole trailing sentences of at
most ``overlap`` units.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from finrag_pipeline.core.chunking.sentences import split_sentences

Span = tuple[int, int]
# "tokens": words and punctuation marks, a cheap stand-in for word pieces.
_TOKEN = re.compile(r"\w+|[^\w\s]")


def make_measure(text: str, unit: str) -> Callable[[int, int], int]:
    """A function giving the size of ``text[a:b]`` in ``unit`` ("chars" or "tokens")."""
    if unit == "chars":
        return lambda a, b: b - a
    starts = [m.start() for m in _TOKEN.finditer(text)]
    return lambda a, b: bisect.bisect_left(starts, b) - bisect.bisect_left(starts, a)


def sentence_windows(text: str, start: int, end: int, *, size: int, overlap: int,
                     unit: str = "chars", min_chars: int = 0) -> list[Span]:
    """Windows ``(a, b)`` over ``text[start:end]`` (absolute offsets into ``text``)."""
    measure = make_measure(text, unit)
    pieces = [p for a, b in split_sentences(text[start:end])
              for p in _cut_long(text, start + a, start + b, size, measure)]
    windows = _pack(pieces, size, overlap, measure)
    return _merge_short_tail(windows, min_chars)


def _cut_long(text: str, a: int, b: int, size: int, measure: Callable[[int, int], int]) -> list[Span]:
    """A sentence longer than ``size`` is cut at whitespace into pieces of at most ``size``
    (a single word longer than ``size`` stays whole)."""
    if measure(a, b) <= size:
        return [(a, b)]
    words = [(a + m.start(), a + m.end()) for m in re.finditer(r"\S+", text[a:b])]
    pieces: list[Span] = []
    cur_start, cur_end = words[0]
    for w_start, w_end in words[1:]:
        if measure(cur_start, w_end) <= size:
            cur_end = w_end
        else:
            pieces.append((cur_start, cur_end))
            cur_start, cur_end = w_start, w_end
    pieces.append((cur_start, cur_end))
    return pieces


def _pack(pieces: list[Span], size: int, overlap: int, measure: Callable[[int, int], int]) -> list[Span]:
    windows: list[Span] = []
    i, n = 0, len(pieces)
    while i < n:
        j = i + 1
        while j < n and measure(pieces[i][0], pieces[j][1]) <= size:
            j += 1
        windows.append((pieces[i][0], pieces[j - 1][1]))
        if j >= n:
            break
        # Step back over whole trailing sentences that fit in the overlap, but always advance.
        k = j
        while k - 1 > i and measure(pieces[k - 1][0], pieces[j - 1][1]) <= overlap:
            k -= 1
        i = k
    return windows


def _merge_short_tail(windows: list[Span], min_chars: int) -> list[Span]:
    if len(windows) >= 2 and windows[-1][1] - windows[-1][0] < min_chars:
        *head, prev, last = windows
        return [*head, (prev[0], last[1])]
    return windows
