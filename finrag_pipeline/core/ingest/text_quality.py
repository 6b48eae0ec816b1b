"""Is a text layer usable? Shares of pages without text (scans) and of junk characters (garbled).

A PDF whose pages are mostly images needs OCR; a text layer whose characters are mostly invisible
(zero-width, format controls) or private-use code points (a font without a usable ToUnicode map) is
garbled: indexing it would add junk chunks that match nothing.
"""

from __future__ import annotations

import collections
import functools
import re
import unicodedata
from collections.abc import Sequence

from finrag_pipeline.core.ingest.errors import IngestError

MIN_TEXT_CHARS_PER_PAGE = 25     # visible characters below which a page counts as image-only
MAX_TEXTLESS_SHARE = 0.5         # more pages than this without text: needs_ocr
MAX_JUNK_SHARE = 0.3             # more non-space characters than this invisible/private-use: garbled_text
_JUNK_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs"})


@functools.lru_cache(maxsize=4096)
def is_junk(ch: str) -> bool:
    """Invisible (format/control), private-use, unassigned or the replacement character."""
    return ch == "\ufffd" or unicodedata.category(ch) in _JUNK_CATEGORIES


# Whitespace exactly as str.isspace (re's Unicode \s is the same predicate).
_WHITESPACE = re.compile(r"\s+")


def _visible_and_junk(text: str) -> tuple[int, int]:
    """(visible, junk) non-space characters of ``text``. Each distinct character is classified once
    (a page has ~100 of them among thousands): checking every character in Python made this check most
    of a filing's registration time."""
    counts = collections.Counter(_WHITESPACE.sub("", text))
    junk = sum(n for ch, n in counts.items() if is_junk(ch))
    return counts.total() - junk, junk


def visible_chars(text: str) -> int:
    return _visible_and_junk(text)[0]


def junk_chars(text: str) -> int:
    return _visible_and_junk(text)[1]


def check_text_layer(texts: Sequence[str], *, path: str | None = None, check_ocr: bool = True) -> None:
    """Raise IngestError garbled_text / needs_ocr when the pages' text is not usable."""
    n = len(texts)
    per_page = [_visible_and_junk(t) for t in texts]
    junk = sum(j for _v, j in per_page)
    visible = sum(v for v, _j in per_page)
    if junk and junk > MAX_JUNK_SHARE * (junk + visible):
        sample = sorted({f"U+{ord(ch):04X}" for t in texts for ch in t if not ch.isspace() and is_junk(ch)})[:4]
        raise IngestError("garbled_text", f"{junk / (junk + visible):.0%} of the text layer's {junk + visible} "
                          f"characters are invisible or private-use ({', '.join(sample)}...): the text cannot "
                          "be read", path=path)
    if not check_ocr or not n:
        return
    textless = sum(1 for v, _j in per_page if v < MIN_TEXT_CHARS_PER_PAGE)
    if textless == n or textless > MAX_TEXTLESS_SHARE * n:
        raise IngestError("needs_ocr", f"{textless} of {n} pages ({textless / n:.0%}) have no text layer "
                          "(scanned or image-only); run OCR first", path=path)


def textless_pages_note(texts: Sequence[str]) -> list[str]:
    """A ``partial:`` note naming the pages without a text layer in a PDF that is mostly text (those pages
    are not searchable; the ingest log says so), or nothing."""
    textless = [i for i, t in enumerate(texts, start=1) if visible_chars(t) < MIN_TEXT_CHARS_PER_PAGE]
    if not textless:
        return []
    shown = ", ".join(map(str, textless[:12])) + (", ..." if len(textless) > 12 else "")
    return [f"partial: {len(textless)} of {len(texts)} pages have no text layer (pages {shown}); they are not "
            "searchable until the PDF is OCRed"]
