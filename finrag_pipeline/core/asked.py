"""What a question asks for, read from its words: the units, scale and rounding of the answer
(``requested_units``), the base unit a figure is written in (``unit_of_figure``) and the content
words a worded fact is matched by (``content_words``). A leaf module: contracts
(core/scoring/answer_contract.py), scoring (core/scoring/answer_metrics.py) and the calculator's plans
(core/analyst/plan.py) all read the requested rounding here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from finrag_pipeline.core.numbers import Figure, scale_of_text, years_in


@dataclass(frozen=True)
class RequestedUnits:
    """The units a question asks an answer in: ``scale`` ("in USD millions" -> 1e6), ``unit`` ("USD",
    "percent", "ratio" for "times"/"x"), ``decimals`` ("round to two decimal places" -> 2) and
    ``ratio_is_percent`` (a margin, rate, share or percentage: 0.165 and 16.5% are the same answer)."""

    scale: float | None = None
    unit: str | None = None
    decimals: int | None = None
    ratio_is_percent: bool = False


_NUMBER_WORDS = {"zero": 0, "no": 0, "one": 1, "two": 2, "three": 3, "four": 4}
# "to one decimal place", "with 2 decimals", and a bare count after a comma ("Answer in USD millions, one decimal
# place."): a number of decimals is only ever an instruction
_DECIMALS_RE = re.compile(r"\b(?P<n>\d|zero|one|two|three|four)\s+(?:decimal|decimals|digits?\s+after|d\.?p\.?(?!\w))",
                          re.IGNORECASE)
# "to the nearest tenth" -> 1 decimal; "nearest million / dollar / day" -> a whole number in that unit
_NEAREST_RE = re.compile(r"\bnearest\s+(?:whole\s+)?(?P<what>tenth|hundredth|thousandth|percent(?:age point)?|"
                         r"integer|whole number|dollar|day|million|billion|thousand|cent)\b", re.IGNORECASE)
_NEAREST_DECIMALS = {"tenth": 1, "hundredth": 2, "thousandth": 3, "cent": 2}
_WHOLE_RE = re.compile(r"\b(?:nearest|to\s+a)\s+(?:whole\s+(?:number|percent(?:age)?|dollar)|integer)\b"
                       r"|\bno\s+decimals?\b", re.IGNORECASE)
_PERCENT_Q_RE = re.compile(r"\bas\s+a\s+percent(?:age)?\b|\bin\s+percent(?:age)?\b|%|\bpercent(?:age)?\b|"
                           r"\bmargins?\b|\brates?\b|\bshare\s+of\b|\bproportion\b|\byield\b|\breturn\s+on\b",
                           re.IGNORECASE)
_TIMES_Q_RE = re.compile(r"\bhow\s+many\s+times\b|\bin\s+times\b|\(x\)|\bas\s+a\s+multiple\b|\btimes\)|"
                         r"\bcoverage\s+ratio\b|\bturnover\b", re.IGNORECASE)
# a ratio that is not a margin, rate or share: those read as percentages (ratio_is_percent)
_RATIO_Q_RE = re.compile(r"\b(?:current|quick|cash|debt|leverage|liquidity|coverage|price|asset|equity|turnover|"
                         r"[\w\-]+-to-[\w\-]+)\s+ratio\b", re.IGNORECASE)
# a per-share amount asked ("diluted EPS", "dividends per share"): a reference "$2.02" is $2.02 per share
_PER_SHARE_Q_RE = re.compile(r"\bper\s+(?:(?:basic|diluted|common|ordinary)\s+)?share\b|\bEPS\b|\bearnings\s+per\b",
                             re.IGNORECASE)
_MONEY_Q_RE = re.compile(r"\bUSD\b|\$|\bdollars?\b", re.IGNORECASE)
# "in USD millions", "(in $ millions)", "($ millions)"; numbers.scale_of_text reads the rest ("USD billions",
# "in millions of dollars", "(Dollars in thousands)")
_Q_SCALE_RE = re.compile(r"(?:\bin\s+)?(?:\bUSD|\bUS\$|\$)\s*(thousands|millions|billions)\b", re.IGNORECASE)
# the rounding instruction as written, wherever it stands ("... current ratio to one decimal place?", ", rounded to
# the nearest whole number", "round your answer to 2 decimal places"): the calculator's question reader drops it
# (core/analyst/definitions.clean_question) so it is never read as a qualifier of the line item
ROUNDING_PHRASE_RE = re.compile(
    r"[,;]?\s*(?:\band\s+)?(?:\b(?:round(?:ed|ing)?|expressed|given|answer(?:ed)?)\b(?:\s+(?:your|the)\s+(?:answer|result|figure))?\s*)?"
    r"(?:\b(?:to|with|in|at)\s+)?(?:"
    r"(?:the\s+)?nearest\s+(?:whole\s+)?(?:tenth|hundredth|thousandth|percent(?:age\s+point)?|integer|whole\s+number"
    r"|number|dollar|day|million|billion|thousand|cent)s?(?:\s+of\s+a\s+percent(?:age\s+point)?)?"
    r"|a\s+whole\s+(?:number|percent(?:age)?|dollar)|no\s+decimals?"
    r"|(?:\d|zero|one|two|three|four)\s+(?:decimal\s+places?|decimals?|digits?\s+after\s+the\s+(?:decimal\s+)?point"
    r"|d\.?p\b))",
    re.IGNORECASE)
# "to the nearest million": an amount shown in millions (when no other scale is asked)
_NEAREST_SCALE_RE = re.compile(r"\bnearest\s+(?P<s>thousand|million|billion)\b", re.IGNORECASE)


def requested_units(question: str) -> RequestedUnits:
    """The units, scale and rounding ``question`` asks for (all None when it asks for none)."""
    q = question or ""
    scale = scale_of_text(q)
    if scale is None and (m := _Q_SCALE_RE.search(q)):
        scale = scale_of_text(f"in {m.group(1)}")
    if scale is None and (m := _NEAREST_SCALE_RE.search(q)):
        scale = scale_of_text(f"in {m.group('s')}s")
    decimals = None
    if m := _DECIMALS_RE.search(q):
        n = m.group("n").lower()
        decimals = int(n) if n.isdigit() else _NUMBER_WORDS[n]
    elif m := _NEAREST_RE.search(q):
        decimals = _NEAREST_DECIMALS.get(m.group("what").lower(), 0)
    elif _WHOLE_RE.search(q):
        decimals = 0
    unit = None
    if _TIMES_Q_RE.search(q):
        unit = "ratio"
    elif re.search(r"\bas\s+a\s+percent(?:age)?\b|\bin\s+percent(?:age)?\b|%", q, re.IGNORECASE):
        unit = "percent"
    elif _RATIO_Q_RE.search(q):
        unit = "ratio"     # "current ratio", "debt-to-equity ratio": a multiple, "0.87" or "0.87x"
    elif _PER_SHARE_Q_RE.search(q) and scale is None:
        unit = "USD per share"
    elif scale is not None and _MONEY_Q_RE.search(q):
        unit = "USD"
    return RequestedUnits(scale, unit, decimals, bool(_PERCENT_Q_RE.search(q)))


def unit_of_figure(f: Figure) -> str | None:
    """The base unit a figure is written in ("12.5%" -> "percent", "$4.2B" -> "USD", "9.5" -> None)."""
    if f.points:
        return "percentage points"
    if f.percent:
        return "percent"
    if f.per_share:
        return "USD per share"
    return "USD" if f.currency else None


_FACT_STOP = frozenset(["the", "a", "an", "of", "and", "or", "in", "for", "to", "its", "their", "by", "with", "on", "at", "from", "as", "net", "total", "company", "fiscal", "year", "years"])


def content_words(text: str) -> set[str]:
    """Lower-case words of a fact, without stop words, cut to four letters ("weakness" = "weaker")."""
    return {w[:4] for w in re.findall(r"[a-z][a-z&\-]*", (text or "").lower()) if w not in _FACT_STOP and len(w) > 1}


def asked_years(question: str, periods: Sequence[str] | None) -> list[int]:
    """The years a question asks about, newest first: those of its periods when it has them, else the years
    its text names."""
    years = set().union(*(years_in(p) for p in periods)) if periods else set()
    return sorted(years or years_in(question), reverse=True)
