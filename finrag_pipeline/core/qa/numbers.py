"""Numbers as filings print them: tokens for indexing, formatting for answers, tolerant matching.

The same figure is written "394,328", "394328", "$394,328 million" or "$394.3 billion";
:func:`figure_in_text` accepts any of those forms for a value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUM_TOKEN_RE = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]*\d)|(?<![\w.,])\d+(?:\.\d+)?(?![\w])")
_SCALED_RE = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s*(billion|million|thousand|bn|b|m|k)?\b", re.IGNORECASE)
_SCALE_WORDS = {"billion": 1e9, "bn": 1e9, "b": 1e9, "million": 1e6, "m": 1e6, "thousand": 1e3, "k": 1e3}
UNIT_SCALE = {"USD billions": 1e9, "USD millions": 1e6, "USD thousands": 1e3, "shares billions": 1e9,
              "shares millions": 1e6, "shares thousands": 1e3}
YEAR_RE = re.compile(r"^(19|20)\d\d$")


def digits_key(text: str) -> str:
    """"$ (1,234.50)" -> "1234.50": the number as written without sign, commas or currency."""
    return re.sub(r"[^\d.]", "", text or "").strip(".")


def number_tokens(text: str) -> set[str]:
    """Every number in a text as :func:`digits_key`, for an inverted index over chunks and pages."""
    return {digits_key(m.group(0)) for m in NUM_TOKEN_RE.finditer(text or "")}


def is_distinctive(key: str) -> bool:
    """Numbers with 4+ digits (not a year) rarely appear by chance; "12" or "2022" do."""
    digits = key.replace(".", "")
    return len(digits) >= 4 and not YEAR_RE.match(key)


@dataclass(frozen=True)
class TextNumber:
    value: float          # scale word applied ("394.3 billion" -> 3.943e11)
    raw: float            # as written ("394.3")
    tolerance: float      # half a unit of the last printed digit, scaled


def numbers_in_text(text: str) -> list[TextNumber]:
    out = []
    for m in _SCALED_RE.finditer(text or ""):
        whole, frac, word = m.group(1), m.group(2) or "", (m.group(3) or "").lower()
        raw = float(whole.replace(",", "") + frac)
        scale = _SCALE_WORDS.get(word, 1.0)
        step = 10 ** -(len(frac) - 1) if frac else 1.0
        out.append(TextNumber(raw * scale, raw, 0.5 * step * scale))
    return out


def figure_in_text(value: float, text: str, unit_scale: float = 1.0, value_text: str | None = None) -> bool:
    """True when ``text`` states the figure: its printed digits, or a (rounded, scaled) equivalent.

    ``value`` is the number in the table's unit (394328 for "$394,328 million"), ``unit_scale`` the
    unit multiplier (1e6); signs are ignored because "(334)" and "-334" and "decrease of 334" all say it.
    """
    if value_text and (key := digits_key(value_text)) and key in number_tokens(text):
        return True
    target = abs(value) * unit_scale
    for n in numbers_in_text(text):
        if abs(n.raw - abs(value)) <= 1e-9 * max(1.0, abs(value)):
            return True  # same number in the same unit
        if n.value != n.raw and abs(n.value - target) <= n.tolerance + 1e-9 * target:
            return True  # "394.3 billion" for 394,328 million
    return False


def format_amount(value: float, unit: str | None, value_text: str | None = None) -> str:
    """Answer text for a table value: "$394,328 million", "-$334 million", "$6.11 per share", "12%"."""
    decimals = len(value_text.split(".")[-1]) if value_text and "." in digits_key(value_text) else 0
    body = f"{abs(value):,.{decimals}f}"
    sign = "-" if value < 0 else ""
    u = unit or ""
    if u.startswith("USD "):
        scale = u.split(" ", 1)[1]
        if scale == "per share":
            return f"{sign}${body} per share"
        return f"{sign}${body} {scale.rstrip('s')}"
    if u.startswith("shares"):
        scale = u.split(" ", 1)[1] if " " in u else ""
        return f"{sign}{body} {scale.rstrip('s') + ' ' if scale else ''}shares".replace("  ", " ")
    if u == "percent":
        return f"{sign}{body}%"
    if value_text and "$" in value_text:
        return f"{sign}${body}"
    return f"{sign}{body}"


def format_number(value: float, decimals: int = 0) -> str:
    """Plain number for a recorded computation ("28511", "7.79")."""
    return f"{value:.{decimals}f}" if decimals else (str(int(round(value))) if float(value).is_integer() else f"{value:.4g}")
