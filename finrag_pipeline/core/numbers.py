"""The one place that reads and writes figures as filings and answers print them.

* :func:`parse_figures` - every number in a text with sign, scale word, percent, per-share and currency
  ("$(1,234.5) million", "-3.2%", "$6.11 per share", "4.2bn", "12 percentage points");
* :func:`parse_cell` / :func:`cell_decimal` - a table cell that is one number and nothing else ("$ (1,234)",
  "12.5 %", "1,234)" whose "(" the layout split off; a lone dash is nil), for the table parsers;
* :func:`parse_ixt` / :func:`ix_value` - an inline-XBRL fact's displayed text per its ixt format, then
  its ``scale`` and ``sign``;
* :func:`unit_scale` - the row-unit vocabulary ("USD millions") -> (base unit, multiplier);
* :func:`scale_of_text` - the scale a text declares for its bare numbers ("(In millions)", "| USD millions");
* :func:`format_amount` / :func:`format_number` - answer text for a value;
* :func:`digits_key` / :func:`number_tokens` / :func:`figure_in_text` - number keys for evidence indexes.

Scale words: thousand/million/billion/trillion and k/m/mm/mn/b/bn (a lone letter only right after
a currency sign: "$4.2B", never "5 m" as in metres). Parentheses or a leading minus make a value
negative (accounting style).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

# -- vocabulary -------------------------------------------------------------------------------------

SCALE_WORDS: dict[str, float] = {
    "thousand": 1e3, "thousands": 1e3, "k": 1e3, "million": 1e6, "millions": 1e6, "m": 1e6, "mm": 1e6,
    "mn": 1e6, "billion": 1e9, "billions": 1e9, "b": 1e9, "bn": 1e9, "trillion": 1e12, "trillions": 1e12}
# the short suffix a scale is written with in index tokens ("$4.2 billion" -> "4.2b")
SCALE_SUFFIX: dict[float, str] = {1e3: "k", 1e6: "m", 1e9: "b", 1e12: "t"}
SCALE_NAME: dict[float, str] = {1e3: "thousand", 1e6: "million", 1e9: "billion", 1e12: "trillion"}

# Row units (contract 1) -> (base unit, multiplier).
UNIT_VOCABULARY: dict[str, tuple[str | None, float]] = {
    "USD": ("USD", 1.0), "USD thousands": ("USD", 1e3), "USD millions": ("USD", 1e6),
    "USD billions": ("USD", 1e9), "USD per share": ("USD per share", 1.0), "percent": ("percent", 1.0),
    "percentage points": ("percentage points", 1.0),
    "shares": ("shares", 1.0), "shares thousands": ("shares", 1e3), "shares millions": ("shares", 1e6),
    "shares billions": ("shares", 1e9), "days": ("days", 1.0), "ratio": ("ratio", 1.0)}
# Kept for callers that only need the multiplier of a scaled unit.
UNIT_SCALE: dict[str, float] = {u: s for u, (_, s) in UNIT_VOCABULARY.items() if s != 1.0}


def unit_scale(unit: str | None) -> tuple[str | None, float]:
    """"USD millions" -> ("USD", 1e6); "percent" -> ("percent", 1.0); None -> (None, 1.0).

    Units outside the vocabulary are read leniently ("USD/shares", "thousands of shares", "pure")."""
    if not unit:
        return None, 1.0
    if unit in UNIT_VOCABULARY:
        return UNIT_VOCABULARY[unit]
    low = unit.lower()
    scale = next((SCALE_WORDS[w] for w in re.findall(r"[a-z]+", low) if w in SCALE_WORDS and len(w) > 2), 1.0)
    if "per share" in low or low in ("usd/shares", "usd/share"):
        return "USD per share", 1.0
    if "point" in low:
        return "percentage points", 1.0
    if "percent" in low or "%" in low:
        return "percent", 1.0
    if "share" in low:
        return "shares", scale
    if "usd" in low or "$" in low or "dollar" in low:
        return "USD", scale
    if low in ("pure", "ratio"):
        return "ratio", 1.0
    return (None, scale)


# -- parsing ----------------------------------------------------------------------------------------

_NUM_RE = re.compile(
    r"(?<![\w.])(?P<open>\()?\s*(?P<sign>[-\u2212\u2013])?\s*(?P<cur>\$|USD\s?|US\$)?\s*(?P<open2>\()?"
    r"(?P<sign2>[-\u2212])?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<close>\))?"
    r"(?:\s*(?P<scale>trillions?|billions?|millions?|thousands?|bn|mm|mn|[bmk])(?![a-z]))?"
    r"(?:\s*(?P<pct>%\s*points?|%|percentage\s+points?|percent(?:age)?\b|per\s+cent\b|pp\b|bps\b|basis\s+points?|points?\b))?"
    r"(?P<ps>\s*(?:per\s+(?:diluted\s+|basic\s+)?share|/\s*share))?",
    re.IGNORECASE,
)
# Not figures: citation markers and section numbers ("p. 40", "page 40", "Item 7"), identifiers, form names.
NOISE_RE = re.compile(r"\b(?:pages?|pp?\.|item|note|part)\s*\d+[a-z]?(?:\s*[-,]\s*\d+)*"
                      r"|\b[a-z]+(?:[-_][a-z0-9]+)*[-_]\d[\w-]*"     # identifiers: AAPL-2022-10K
                      r"|\b\d{1,2}-[kq]\b"                             # form names: 10-K, 10-Q, 8-K
                      # dates: the day of "September 25, 2021" / "25 September 2021" / 2021-09-25 is no figure
                      r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b(?![.,]\d)"
                      r"|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b"
                      r"|\b(?:19|20)\d{2}-\d{2}-\d{2}\b",
                      re.IGNORECASE)
_YEAR_RE = re.compile(r"(?<![\d,.$])(?:FY\s?)?((?:19|20)\d{2})(?!\d|,\d)", re.IGNORECASE)


@dataclass(frozen=True)
class Figure:
    """A number as written. ``value`` has sign and scale applied ("USD 394.3 billion" -> 3.943e11);
    percents are in percent units ("12.5%" -> 12.5)."""

    value: float
    decimals: int          # digits shown after the decimal point (rounding precision)
    scale: float           # scale applied (1.0 when none was written)
    explicit_scale: bool
    percent: bool
    currency: bool
    text: str
    points: bool = False       # percentage points / basis points (a difference of percents)
    per_share: bool = False
    start: int = -1            # span in the text it was parsed from
    end: int = -1

    @property
    def is_year(self) -> bool:
        # the number as printed: a year stays a year where a text's declared scale applies to bare numbers
        # "(2021)" after a figure is a year in brackets, not an accounting negative (which prints "(2,021)")
        value = abs(self.value) if self.text.startswith("(") and self.text.endswith(")") else self.value
        return (not self.percent and not self.currency and not self.explicit_scale and self.decimals == 0
                and 1900 <= value / self.scale <= 2100 and "," not in self.text)

    @property
    def half_ulp(self) -> float:
        """Half a unit in the last place shown: '394.3 billion' stands for anything within 0.05e9."""
        return 0.5 * 10 ** (-self.decimals) * self.scale

    @property
    def magnitude(self) -> float:
        """The number as printed, without sign or scale ("$(1,234.5) million" -> 1234.5)."""
        return abs(self.value) / self.scale

    @property
    def as_printed(self) -> float:
        """The number as printed with its sign, scale not applied ("(1,234)" -> -1234.0, "$4.2 billion" -> 4.2)."""
        return self.value / self.scale

    @property
    def kind(self) -> str:
        """'percent', 'points', 'per_share', 'currency' or 'plain' (a bare number)."""
        if self.points:
            return "points"
        if self.percent:
            return "percent"
        if self.per_share:
            return "per_share"
        return "currency" if self.currency else "plain"


def parse_figures(text: str, *, keep_years: bool = False, scale: float = 1.0) -> list[Figure]:
    """Every number in ``text`` (citation markers like 'p. 40' blanked out), with unit and sign.

    Years (1900-2100 written without comma, currency, scale or percent) are dropped unless asked.
    ``scale`` is applied to numbers written without a scale word (a table's "(In millions)").
    Spans refer to ``text`` itself (noise is blanked, not removed).
    """
    text = text or ""
    clean = NOISE_RE.sub(lambda m: " " * len(m.group(0)), text)
    out = []
    for m in _NUM_RE.finditer(clean):
        raw = m.group("num")
        magnitude = float(raw.replace(",", ""))
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        scale_word = (m.group("scale") or "").lower()
        # a lone b/m/k is a scale only right after a number with a currency sign ("$4.2B")
        if scale_word in ("b", "m", "k") and not m.group("cur"):
            scale_word = ""
        pct = (m.group("pct") or "").lower()
        points = bool(pct) and ("point" in pct or pct in ("pp", "bps") or "basis" in pct)
        if pct.startswith("bps") or "basis" in pct:
            magnitude, decimals = magnitude / 100.0, decimals + 2  # 25 bps = 0.25 percentage points
        mult = SCALE_WORDS.get(scale_word, 1.0) if scale_word else (1.0 if pct else scale)
        negative = bool(m.group("sign") or m.group("sign2")) or bool(
            (m.group("open") or m.group("open2")) and m.group("close"))
        end = m.end("num") if m.group("close") is None else m.end("close")
        end = max([end, *(m.end(g) for g in ("scale", "pct", "ps") if m.group(g))])
        fig = Figure(value=(-1 if negative else 1) * magnitude * mult, decimals=decimals, scale=mult,
                     explicit_scale=bool(scale_word), percent=bool(pct), currency=bool(m.group("cur")),
                     text=text[m.start():end].strip(), points=points, per_share=bool(m.group("ps")),
                     start=m.start(), end=end)
        if fig.is_year and not keep_years:
            continue
        out.append(fig)
    return out


def parse_figure(text: str) -> Figure | None:
    """The single figure of a short text (a cell, an answer value); None when it holds none."""
    figs = parse_figures(text, keep_years=True)
    return figs[0] if figs else None


# -- table cells and inline-XBRL facts ----------------------------------------------------------------

# Dashes EDGAR and PDF renderings use for "nil" in a numeric column.
NIL_DASHES = frozenset({"—", "–", "-", "−", "——", "(—)", "(–)"})
_CELL_RE = re.compile(r"^\(?-?\d[\d,]*(?:\.\d+)?\)?$|^\(?-?\.\d+\)?$")
_SPACES_RE = re.compile(r"[\s\u00a0\u200b\u2009\u202f]+")


def _cell(text: str | None) -> tuple[bool, str] | str | None:
    """A cell that is one number and nothing else -> (negative, digits); "nil" for a lone dash; else None.
    Currency signs, spaces and a trailing % are ignored; parentheses or a leading minus make it negative."""
    s = _SPACES_RE.sub(" ", text or "").strip()
    if not s:
        return None
    s = s.replace("$", "").replace("€", "").replace("£", "").replace(" ", "")
    if s in NIL_DASHES:
        return "nil"
    s = s.rstrip("%").replace("−", "-")
    if s.endswith(")") and not s.startswith("("):
        s = "(" + s  # "1,234)" after a split "(" cell; EDGAR separates the parentheses
    if not _CELL_RE.match(s):
        return None
    return s.startswith("(") or s.startswith("-"), s.strip("()").lstrip("-").replace(",", "")


def parse_cell(text: str | None, *, dash_value: float | None = 0.0) -> float | None:
    """A table cell as printed -> its number: "(1,234)" -> -1234.0, "$ 394,328" -> 394328.0, "12.5 %" ->
    12.5, "(8)%" -> -8.0. A lone dash means nil in 10-K tables: ``dash_value`` (0.0; pass None where a
    dash means "not applicable"). Words, a scale word or a second number: None (not a value cell)."""
    cell = _cell(text)
    if cell is None or cell == "nil":
        return dash_value if cell == "nil" else None
    negative, digits = cell
    try:
        value = float(digits)
    except ValueError:
        return None
    return -value if negative else value


def cell_decimal(text: str | None) -> Decimal | None:
    """A table cell's number exactly as printed: "(1,234.5)" -> Decimal("-1234.5"); None for a dash or
    for text that is not one number."""
    cell = _cell(text)
    if cell is None or cell == "nil":
        return None
    negative, digits = cell
    if not re.fullmatch(r"\d+(?:\.\d+)?|\.\d+", digits):
        return None
    return -Decimal(digits) if negative else Decimal(digits)


_NUM_WORDS = {"no": 0, "none": 0, "zero": 0, "nil": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
              "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}


def parse_ixt(text: str, fmt: str | None) -> float | None:
    """An inline-XBRL fact's displayed text -> its number per the ixt transformation ``fmt`` (before
    scale and sign): zero dashes, number words ("three"), comma-decimal ("1.234,5") and dot-decimal."""
    f = (fmt or "").rsplit(":", 1)[-1].lower()
    t = _SPACES_RE.sub(" ", text or "").strip()
    if f in ("fixed-zero", "zerodash", "numdash", "fixed-empty") or not t or t.replace(" ", "") in NIL_DASHES:
        return 0.0
    if f in ("numwordsen", "num-word-en", "numwordssen"):
        return float(_NUM_WORDS[t.lower()]) if t.lower() in _NUM_WORDS else None
    if f in ("num-comma-decimal", "numcommadecimal", "numdotcomma", "num-comma"):
        t = t.replace(".", "").replace(" ", "").replace("\u00a0", "").replace(",", ".")
    else:  # num-dot-decimal, numdotdecimal, and unformatted
        t = t.replace(",", "").replace(" ", "")
    t = re.sub(r"[^\d.]", "", t)
    try:
        return float(t) if t else None
    except ValueError:
        return None


def ix_value(text: str, fmt: str | None, scale: int, sign: str | None) -> float | None:
    """An ix:nonFraction's value: the displayed number x 10^scale, negated for sign="-" (XBRL shows
    magnitudes and carries the sign apart)."""
    value = parse_ixt(text, fmt)
    if value is None:
        return None
    value = value * (10 ** scale)
    if sign == "-":
        value = -value
    return round(value, 10) if scale < 0 else value


def years_in(text: str) -> set[int]:
    """Four-digit years 1900-2099 mentioned in ``text`` ('FY2022', 'fiscal 2022', 'September 24, 2022')."""
    return {int(y) for y in _YEAR_RE.findall(text or "")}


_DECLARED_SCALE_RE = re.compile(
    r"\b(?:USD|shares)\s+(thousands|millions|billions)\b"
    r"|\(\s*(?:dollars\s+|amounts\s+|\$\s*)?in\s+(thousands|millions|billions)\b"
    r"|\bin\s+(thousands|millions|billions)(?:\s+of\s+(?:U\.?S\.?\s+)?dollars)?\b",
    re.IGNORECASE)


def scale_of_text(text: str) -> float | None:
    """The scale a text declares for its bare numbers: "| USD millions" or "(In millions, except ...)"
    -> 1e6; None when it declares none (then a bare number's scale is unknown)."""
    m = _DECLARED_SCALE_RE.search(text or "")
    if not m:
        return None
    word = next(g for g in m.groups() if g)
    return SCALE_WORDS[word.lower()]


# -- number keys for evidence indexes ---------------------------------------------------------------

NUM_TOKEN_RE = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,]*\d)|(?<![\w.,])\d+(?:\.\d+)?(?![\w])")
_YEAR_KEY_RE = re.compile(r"^(19|20)\d\d$")


def digits_key(text: str) -> str:
    """"$ (1,234.50)" -> "1234.50": the number as written without sign, commas or currency."""
    return re.sub(r"[^\d.]", "", text or "").strip(".")


def number_tokens(text: str) -> set[str]:
    """Every number in a text as :func:`digits_key`, for an inverted index over chunks and pages."""
    return {digits_key(m.group(0)) for m in NUM_TOKEN_RE.finditer(text or "")}


_DIGIT_RUN_RE = re.compile(r"\d[\d,]*(?:\.\d+)?")


def figure_keys(text: str) -> list[str]:
    """Every run of digits in a text as :func:`digits_key`, in order, years and single digits left out:
    "$394,328 million, up 7.8% in 2022" -> ["394328", "7.8"]. Looser than :func:`number_tokens` (a
    number glued to a word counts: "10K" -> "10"), for matching a question's figures to a passage."""
    keys = (digits_key(m.group(0)) for m in _DIGIT_RUN_RE.finditer(text or ""))
    return [k for k in keys if k and not _YEAR_KEY_RE.match(k) and len(k.replace(".", "")) >= 2]


# A figure as a sentence prints it: "$28.5", "(1,234)", "12.5%", "394,328" (a scale word after it is
# the caller's to read); the day of a date ("December 31, 2021") is no figure.
_PRINTED_FIGURE_RE = re.compile(r"\(?-?\$?\s?\(?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\)?\s?%?")
_DATE_DAY_RE = re.compile(r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+(?:19|20)\d\d",
                          re.IGNORECASE)


def printed_figures(sentence: str) -> list[str]:
    """The amounts of a sentence exactly as printed, for quoting: a number with a currency sign, a
    percent sign or thousands separators ("$28.5", "12.5%", "(1,234)", "394,328"); a bare "12" and the
    day of a date are none. :func:`parse_figures` reads their values."""
    undated = _DATE_DAY_RE.sub(" ", sentence or "")
    return [m.group(0).strip() for m in _PRINTED_FIGURE_RE.finditer(undated)
            if "$" in m.group(0) or "%" in m.group(0) or re.search(r"\d,\d{3}", m.group(0))]


def is_distinctive(key: str) -> bool:
    """Numbers with 4+ digits (not a year) rarely appear by chance; "12" or "2022" do."""
    digits = key.replace(".", "")
    return len(digits) >= 4 and not _YEAR_KEY_RE.match(key)


def figure_in_text(value: float, text: str, unit_scale: float = 1.0, value_text: str | None = None) -> bool:
    """True when ``text`` states the figure: its printed digits, or a (rounded, scaled) equivalent.

    ``value`` is the number in the table's unit (394328 for "$394,328 million"), ``unit_scale`` the
    unit multiplier (1e6); signs are ignored because "(334)" and "-334" and "decrease of 334" all say it.
    Used to place a known figure on pages (generation), not to score answers.
    """
    if value_text and (key := digits_key(value_text)) and key in number_tokens(text):
        return True
    target = abs(value) * unit_scale
    for f in parse_figures(text, keep_years=True):
        if abs(f.magnitude - abs(value)) <= 1e-9 * max(1.0, abs(value)):
            return True  # same number in the same unit
        if f.explicit_scale and abs(abs(f.value) - target) <= f.half_ulp + 1e-9 * target:
            return True  # "394.3 billion" for 394,328 million
    return False


# -- formatting -------------------------------------------------------------------------------------

# Base units format_figure writes with their unit; any other is a plain number.
FIGURE_UNITS = ("USD per share", "USD", "shares", "percent", "percentage points", "days")


def format_figure(value: float | Decimal, base: str | None, decimals: int, scale: float = 1.0) -> str:
    """A figure in its base unit, shown at ``scale``: "$394,328 million", "-50.8%", "$6.11 per share",
    "1,234 million shares", "45.2 days", "1.53" (a ratio or unknown unit)."""
    return _with_unit("-" if value < 0 else "", f"{abs(value):,.{decimals}f}", base, scale)


def format_printed_figure(value_text: str, unit: str | None) -> str:
    """A figure quoted exactly as the filing prints it, with its row unit's words: '394,328' + 'USD
    millions' -> '$394,328 million', '(334)' -> '$(334) million', '15,943' + 'shares thousands' ->
    '15,943 thousand shares', '12.5' + 'percent' -> '12.5%'. The extractive answer quotes the filing's
    characters (sign style, decimals), so the number is not re-written as :func:`format_figure` would;
    the unit words are the same."""
    v = value_text.strip()
    if v.endswith("%") or not unit:
        return v  # a percentage in a "(dollars in millions)" table is still a percentage
    base, scale = unit_scale(unit)
    if base in ("percent", "percentage points"):
        return f"{v}%"
    if base in ("shares", "USD", "USD per share"):
        return _with_unit("", v if base == "shares" else v.lstrip("$"), base, scale)
    if "$" in v:
        return _with_unit("", v.lstrip("$"), "USD", scale)
    return f"{v} {SCALE_NAME.get(scale, '')}".strip()


def _with_unit(sign: str, body: str, base: str | None, scale: float) -> str:
    """The one wording of a figure's unit and scale: '$394,328 million', '15,943 million shares', '12.5%'."""
    scale_word = SCALE_NAME.get(scale, "")
    if base == "USD per share":
        return f"{sign}${body} per share"
    if base == "USD":
        return f"{sign}${body}" + (f" {scale_word}" if scale_word else "")
    if base == "shares":
        return f"{sign}{body} " + (f"{scale_word} " if scale_word else "") + "shares"
    if base == "percent":
        return f"{sign}{body}%"
    if base == "percentage points":
        return f"{sign}{body} percentage points"
    if base == "days":
        return f"{sign}{body} days"
    return f"{sign}{body}"


def format_amount(value: float, unit: str | None, value_text: str | None = None) -> str:
    """Answer text for a table value: "$394,328 million", "-$334 million", "$6.11 per share", "12%"."""
    decimals = len(value_text.split(".")[-1]) if value_text and "." in digits_key(value_text) else 0
    base, mult = unit_scale(unit)
    # a table's days stay a plain number (as the QA sets were built); an unknown unit keeps a printed "$"
    if base in FIGURE_UNITS and base != "days":
        return format_figure(value, base, decimals, mult)
    body = format_figure(abs(value), None, decimals)
    sign = "-" if value < 0 else ""
    return f"{sign}${body}" if value_text and "$" in value_text else f"{sign}{body}"


def format_number(value: float, decimals: int = 0) -> str:
    """Plain number for a recorded computation ("28511", "7.79")."""
    return f"{value:.{decimals}f}" if decimals else (str(int(round(value))) if float(value).is_integer() else f"{value:.4g}")
