"""Answer metrics: commit-to-an-answer correctness, strict grounding and periods, citations, LLM judge.

Every metric returns ``(value, reason)``: ``value`` is a float in [0, 1], or ``None`` when it cannot
be computed (nothing to commit to, no gold block, judge failed, ...), and ``reason`` says why in
words. A value that cannot be computed is never filled in. The per-response-state policy lives in
:func:`score_answer`; every rule has a worked example in docs/METRICS.md.

What an answer must commit to is the QA item's answer contract (``QAItem.answer_values`` /
``answer_choice``); the figures a question is computed from (``answer_figures``) are provenance: they
may be quoted as context but never count as the answer.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from finrag_pipeline.core.numbers import (
    NOISE_RE,
    Figure,
    parse_figures,
    scale_of_text,
    unit_scale,
    years_in,
)
from finrag_pipeline.core.scoring.answer_claims import (
    CHANGE,
    CONTEXT,
    LEVEL,
    OPERAND,
    checked_computations,
    plain_latex,
    read_claims,
)
from finrag_pipeline.core.scoring.failure_scoring import unanswered_scores
from finrag_pipeline.core.scoring.metric_registry import (
    ANSWER_METRICS,
    JUDGE_METRICS,
    KEY_FACT_METRICS,
    RATE_METRICS,
)
from finrag_pipeline.core.scoring.response_states import (
    ANSWERED,
    NON_ANSWER_STATES,
    RESPONSE_STATES,
)

__all__ = ["ANSWER_METRICS", "JUDGE_METRICS", "RATE_METRICS", "Figure", "parse_figures", "years_in", "score_answer",
           "correctness", "grounding", "period_check", "citation_scores", "block_citation_scores", "ReferenceValue",
           "reference_values", "LLMJudge", "key_fact_recall", "yes_no_of"]

# ANSWER_METRICS (names, order), RATE_METRICS (behaviour rates, never set to 0 for a failed answer) and
# JUDGE_METRICS (the LLM judge's: without a judge never computed, not even as the 0 of a failed answer, so
# a report shows "n/a: no judge configured" rather than a mean of zeros) come from
# core/scoring/metric_registry.py.

# Rounding an answer may show: at most 0.5% of the value ("$394 billion" for 394,328 million, never
# "$0.4 trillion").
MAX_ROUNDING = 0.005
# A figure stated at lower precision ("$11 billion", "$1.6 billion") matches when the reference rounds to
# it, it shows two significant figures or more, and it is within 2% of the reference ("$1.2 billion" is
# 2.8% off $1,234 million: another value). docs/METRICS.md "Rounding".
COARSE_ROUNDING = 0.02
_DECREASE_WORDS = re.compile(r"\b(decreas\w*|declin\w*|los[st]\w*|lower|fell|drop\w*|negative|down|deficit|"
                             r"reduc\w*|outflow|contract\w*|shr[ai]nk\w*)\b", re.IGNORECASE)
_HEDGE_RE = re.compile(
    r"\bbetween\s+\S*\d[^.;]{0,40}?\s+and\s+\S*\d"            # between 10 and 20
    r"|\beither\b|\d[\w%,.]*\s+or\s+\$?\d|\bsomewhere\b|\bpossibly\b|\bperhaps\b|\bmight\s+be\b"
    r"|\bmay\s+(?:not\s+)?be\b|\b(?:may|might)\s+(?:not\s+)?have\s+(?:been\s+)?\w+ed\b|\bcould\s+(?:not\s+)?be\b|\bnot\s+sure\b|\buncertain\b|\bunclear\b|\bhard\s+to\s+say\b"
    r"|\bcannot\s+(?:be\s+)?determined?\b|\bin\s+the\s+range\b|\brange\s+of\s+\$?\d"
    # a bound instead of a value: "at least $1 billion"; "more than $365.8 billion in 2021" after a value is a comparison
    r"|(?:^|[:\-]\s*|\b(?:was|were|is|are|of|be|totall?ed|reached)\s+)(?:at\s+least|at\s+most|up\s+to|"
    r"more\s+than|less\s+than|over|under)\s+\$?\d",
    re.IGNORECASE)
_RANGE_RE = re.compile(r"\d\s*(?:%|\s(?:million|billion|thousand))?\s*(?:-|\u2013)\s*\$?\d(?![^=]*=)")
# dates and year spans are not value ranges ("2022-09-24", "fiscal 2020-2022"); a span names no option
_ISO_DATE_RE = re.compile(r"\b\d{4}-\d\d-\d\d\b")
_YEAR_SPAN_RE = re.compile(r"(?<![\d,.$])(?:FY\s?)?(?:19|20)\d\d\s*[-\u2013]\s*(?:FY\s?)?(?:19|20)?\d\d\b(?!-)",
                           re.IGNORECASE)
_WORD_RE = re.compile(r"[a-z]+|\d[\d,.]*")
_UP = re.compile(r"\b(higher|highest|more|most|larger|largest|greater|greatest|bigger|biggest|peak\w*|max\w*|"
                 r"increas\w*|grew|exceed\w*|above)\b", re.IGNORECASE)
_DOWN = re.compile(r"\b(lower|lowest|less|least|smaller|smallest|min\w*|decreas\w*|declin\w*|fell|below)\b",
                   re.IGNORECASE)
_CLAUSE_SPLIT = re.compile(r"[.;:,\n]|\bvs\.?\b|\bversus\b|\bcompared\b|\bwhile\b|\bwhereas\b", re.IGNORECASE)


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol + 1e-9 * max(abs(a), abs(b), 1.0)


# ---------------------------------------------------------------------------------------------
# The answer contract, as scoring reads it


@dataclass(frozen=True)
class ReferenceValue:
    """One asked quantity: ``value`` in base units (394,328 USD millions -> 3.94328e11), the base unit
    ("USD", "percent", "percentage points", "USD per share", "shares", "ratio", None), the asked
    period, the relative tolerance and the text it was printed as."""

    value: float
    unit: str | None
    period: str | None
    tolerance: float
    text: str
    half_ulp: float = 0.0      # rounding of the reference itself (half a unit in its last printed digit)
    signed: bool = False       # a change: the answer must say its direction (sign or increase/decrease)
    rounding: float = 0.0      # rounding the question asks for ("two decimal places": 0.005), in base units
    points_equivalent: bool = False   # a margin's change "1.7%" may be stated as 1.7 percentage points
    bare_in_unit: bool = False        # the question asks for this unit: a bare "3.0" is 3.0% ("as a percentage")
    levels_stated: bool = False       # a change whose reference states only its two levels ("from 24.6% to 21.6%")


def reference_values(answer_values: Sequence[Mapping[str, Any]]) -> list[ReferenceValue]:
    """QAItem.answer_values -> ReferenceValues ({value, unit, scale, period, tolerance, text})."""
    out = []
    for v in answer_values or []:
        if v.get("value") is None:
            continue
        base, unit_mult = unit_scale(v.get("unit"))
        scale = float(v.get("scale") or unit_mult or 1.0)
        text = str(v.get("text") or "")
        printed = parse_figures(text, keep_years=True)
        decimals = printed[0].decimals if printed else 0
        out.append(ReferenceValue(float(v["value"]) * scale, base, v.get("period"),
                                  float(v.get("tolerance") or 0.0), text or str(v["value"]),
                                  0.5 * 10 ** (-decimals) * scale, bool(v.get("signed", False)),
                                  float(v.get("rounding") or 0.0) * scale, bool(v.get("points_equivalent", False)),
                                  levels_stated=bool(v.get("levels_stated", False))))
    return out


def _input_values(inputs: Sequence[Mapping[str, Any]]) -> list[ReferenceValue]:
    return reference_values([i for i in inputs or [] if i.get("value") is not None])


# ---------------------------------------------------------------------------------------------
# Matching one stated figure to one asked value


def _stated_values(f: Figure, unit: str | None, *, bare_in_unit: bool = False) -> list[tuple[float, float]]:
    """(value, rounding) readings of figure ``f`` in the base unit ``unit``; [] when incompatible.

    "43.3%" and "0.433" both read 43.3 for a percent; a percent change is never percentage points
    and the reverse; per-share amounts never match totals; a bare number means what it says (no scale),
    or, ``bare_in_unit``, the unit the question asks for ("3.0" to "... as a percentage" is 3.0%)."""
    if unit == "percent":
        if f.percent and not f.points:
            return [(f.value, f.half_ulp)]
        out = []
        if f.kind == "plain" and not f.explicit_scale and bare_in_unit:
            out.append((f.value, f.half_ulp))
        if f.kind == "plain" and not f.explicit_scale and abs(f.value) < 1 and f.decimals >= 2:
            out.append((f.value * 100, f.half_ulp * 100))  # a fraction: 0.433 = 43.3%
        return out
    if unit == "percentage points":
        return [(f.value, f.half_ulp)] if f.points else []
    if unit == "ratio":
        if f.percent and not f.points:
            return [(f.value / 100, f.half_ulp / 100)]
        # a ratio is a bare number ("0.88", "9.5x"), never an amount with a scale word ("212,981 million")
        return [(f.value, f.half_ulp)] if f.kind == "plain" and not f.explicit_scale else []
    if f.percent or f.points:
        return []
    if unit == "USD per share":
        return [(f.value, f.half_ulp)]
    if f.per_share:
        return []
    return [(f.value, f.half_ulp)]


_INCREASE_WORDS = re.compile(r"\b(increas\w*|grew|grow\w*|rose|rise[sn]?|rising|up|gain\w*|higher|improv\w*|"
                             r"inflow|surplus)\b", re.IGNORECASE)


_LEVEL_AFTER_CHANGE_RE = re.compile(r"\b(?:to|reach\w*)\s*(?:about\s+|approximately\s+|roughly\s+|~)?[\s*($]*$",
                                    re.IGNORECASE)


def _direction(answer_text: str, f: Figure) -> int:
    """+1 / -1 when the words just before the figure (same clause) say increase / decrease, else 0."""
    if f.start < 0:
        return 0
    before = re.split(r"[.;:\n]", answer_text[max(0, f.start - 60):f.start])[-1]
    if _LEVEL_AFTER_CHANGE_RE.search(before):
        return 0    # "fell to 0.87", "rose from 0.99 to 1.05": a level, whatever the change was
    ups = [m.start() for m in _INCREASE_WORDS.finditer(before)]
    downs = [m.start() for m in _DECREASE_WORDS.finditer(before)]
    if not ups and not downs:
        return 0
    return 1 if max(ups, default=-1) > max(downs, default=-1) else -1


def _readings(f: Figure, ref: ReferenceValue) -> list[tuple[float, float]]:
    return _stated_values(f, ref.unit, bare_in_unit=ref.bare_in_unit)


def significant_figures(f: Figure) -> int:
    """Digits shown from the first non-zero one: "$11 billion" 2, "$1.6 billion" 2, "$0.4 trillion" 1,
    "394,328" 6, "0" 0."""
    return len(f"{f.magnitude:.{f.decimals}f}".replace(".", "").lstrip("0"))


def value_matches(f: Figure, ref: ReferenceValue, answer_text: str = "") -> bool:
    """Does the stated figure ``f`` commit to the value ``ref`` (unit, scale, sign, tolerance)?

    allowed error = max(ref.tolerance x |value|, the answer's rounding capped at 0.5% of the value,
    the reference's own rounding); and, when the question asks for no precision, a figure stated at
    lower precision with at least two significant figures matches when the reference rounds to it and
    it is within COARSE_ROUNDING (2%) of it ("$11 billion" and "approximately $11.1 billion" for $11,104
    million; "$1.6 billion" for $1,577 million; not "$0.4 trillion" for $394,328 million: one significant
    figure; not "$1.2 billion" for $1,234 million: 2.8% off). Sign: a figure written negative ("(334)", "-$334") is negative;
    a positive one worded as a decrease ("decreased by $2.1 billion") is too, and one worded as an
    increase stays positive. A figure with neither may state a negative reference only when the sign
    is not asked (``signed`` false: a lookup such as "dividends paid $14,081 million" for (14,081));
    for a change (``signed``) the direction must be said."""
    direction = _direction(answer_text, f)
    readings = _readings(f, ref)
    coarse = ref.rounding == 0 and significant_figures(f) >= 2
    if ref.points_equivalent and f.points:
        readings = [(f.value, f.half_ulp)]
    for a, rounding in readings:
        worded_decrease = a > 0 and direction < 0
        unsigned_lookup = ref.value < 0 < a and direction == 0 and not ref.signed
        if worded_decrease or unsigned_lookup:
            a = -a
        # an answer rounded as the question asks matches (ref.rounding), whatever the cap
        # the precision a question asks for wins: "9.7" is not "9.67" to "round to two decimals"
        own_rounding = 0.0 if ref.rounding else min(rounding, MAX_ROUNDING * abs(ref.value))
        allowed = max(ref.tolerance * abs(ref.value), own_rounding, ref.half_ulp,
                      min(rounding, ref.rounding), min(rounding, COARSE_ROUNDING * abs(ref.value)) if coarse else 0.0)
        if _close(a, ref.value, allowed):
            return True
    return False


def _loosely_equal(f: Figure, ref: ReferenceValue) -> bool:
    """Same number at some scale, either sign: "394,328" or "$394,328 thousand" for 394,328 million
    (the figure as context, or at a wrong scale), "$365.8 billion" for 365,817 million."""
    v = abs(ref.value)
    readings = [abs(a) for a, _ in _readings(f, ref)] or [abs(f.value)]
    if any(_close(r, v, MAX_ROUNDING * v) for r in readings):
        return True
    for s in (1e3, 1e6, 1e9, 1e12, 1e-2, 1e2):
        target = v / s
        if _close(f.magnitude, target, min(0.5 * 10 ** -f.decimals, MAX_ROUNDING * target)):
            return True
    return False


def _candidates(answer: str, refs: Sequence[ReferenceValue] = (), default_scale: float | None = None) -> list[Figure]:
    """The answer's figures that could state a value: no years, no citation markers, and no bare
    integers below 10 (list numbering, counts) unless one is an asked value. A bare number takes the
    scale the answer declares ("in millions"), else ``default_scale`` (the scale the question asks
    for: "(in USD millions)")."""
    declared = scale_of_text(answer) or default_scale or 1.0
    return [f for f in parse_figures(answer, scale=declared)
            if not (f.kind == "plain" and not f.explicit_scale and (
                _TIME_SPAN_RE.match(answer, f.end) or _SHORT_YEAR_RE.search(answer, 0, f.start)
                or _CITATION_MARK_RE.match(answer, max(0, f.start - 1))))
            and (f.percent or f.points or f.currency or f.explicit_scale or f.per_share or f.decimals
                 or f.magnitude >= 10 or any(value_matches(f, r, answer) for r in refs))]


# "FY22", "FY'22", "fiscal '22", "Q3 '22": a year written short, not an amount
_SHORT_YEAR_RE = re.compile(r"(?:\bFY\s?'?|\bfiscal\s+'|\bQ[1-4]\s+'|\bH[12]\s+')$", re.IGNORECASE)
# "[12]", "[doc 3]": a citation marker
_CITATION_MARK_RE = re.compile(r"\[\d{1,3}\]")
# "the 12 months ended ...", "a 52-week year": a span of time, not an amount
_TIME_SPAN_RE = re.compile(r"\s*-?\s*(?:months?|weeks?|quarters?|years?)\b", re.IGNORECASE)


def _tokens(text: str) -> list[str]:
    return [t.replace(",", "").rstrip(".") for t in _WORD_RE.findall((text or "").lower())]


def is_echo(answer: str, question: str) -> bool:
    """The answer repeats the question: it adds no figure of its own, no yes or no the question does not
    already say (:func:`yes_no_of`: "Yes, Apple's current ratio is below 1." commits), and most of its words
    are the question's."""
    if not question or not answer:
        return False
    committed = yes_no_of(answer)[0]
    if committed is not None and committed != yes_no_of(question)[0]:
        return False
    a, q = _tokens(answer), set(_tokens(question))
    if not a:
        return False
    q_figs = {round(f.value, 6) for f in parse_figures(question)}
    new_figs = [f for f in _candidates(answer) if round(f.value, 6) not in q_figs]
    overlap = sum(t in q for t in a) / len(a)
    coverage = len(q & set(a)) / len(q) if q else 0.0
    return not new_figs and overlap >= 0.7 and coverage >= 0.6


def _restatement(text: str) -> bool:
    left, _, right = text.partition(" or ")
    a, b = parse_figures(left, keep_years=True), parse_figures(right, keep_years=True)
    return bool(a and b) and (a[-1].percent or a[-1].points) != (b[0].percent or b[0].points)


def _subtraction(text: str, m: re.Match) -> bool:
    """"122,151 - 10,708 ≈ 111,443": the numbers either side of a dash, the left one larger, or a result
    after them in the same sentence ("= / ≈ / equals / gives"), are a subtraction; "10-20%" is a range."""
    left = parse_figures(text[:m.start() + 1], keep_years=True)
    right = parse_figures(text[m.end() - 1:], keep_years=True)
    if not left or not right:
        return False
    rest = re.split(r"(?<!\d)\.(?!\d)|\n|;", text[m.end():], maxsplit=1)[0]
    return abs(left[-1].value) > abs(right[0].value) or bool(_RESULT_MARK_RE.search(rest))


_RESULT_MARK_RE = re.compile(r"[=\u2248\u2192]|\b(?:equals?|gives|yields)\b", re.IGNORECASE)


def hedge_of(answer: str) -> str | None:
    """The hedge in an answer ("between 10 and 20", "either", "10-20%", "possibly"), or None.

    A hedge word counts in a sentence that states a figure or a year (what the hedge is about),
    or in an answer that states no figure at all: "Results may be affected by currency." after a
    committed figure hedges nothing."""
    text = _YEAR_SPAN_RE.sub(" ", _ISO_DATE_RE.sub(" ", NOISE_RE.sub(" ", answer or "")))
    any_figure = bool(parse_figures(text, keep_years=True))
    for m in [*_HEDGE_RE.finditer(text), *_RANGE_RE.finditer(text)]:
        start = max(text.rfind(". ", 0, m.start()), text.rfind("\n", 0, m.start()), -1) + 1
        ends = [i for i in (text.find(". ", m.end()), text.find("\n", m.end())) if i >= 0]
        sentence = text[start:min(ends) if ends else len(text)]
        if " or " in m.group(0) and _restatement(m.group(0)):
            continue      # "8% or $28.5 billion": one change in two units, not two guesses
        if m.re is _RANGE_RE and _subtraction(text, m):
            continue      # "122,151 - 10,708": an operand minus a smaller one is working, not a range
        if not any_figure or parse_figures(sentence, keep_years=True):
            return m.group(0).strip()
    return None


# ---------------------------------------------------------------------------------------------
# Correctness


@dataclass(frozen=True)
class Verdict:
    """``correct`` 1/0 (None when the item asks for nothing checkable); ``non_committal`` when the
    answer lists candidates, hedges, echoes the question or names no option/value."""

    correct: float | None
    non_committal: bool
    reason: str


def _options(choice: str, options: Sequence[str]) -> list[str]:
    opts = [str(o) for o in options if str(o).strip()]
    return opts if choice in opts else [*opts, choice]


def _option_pattern(option: str) -> re.Pattern[str]:
    years = years_in(option)
    if option.upper().startswith("FY") and len(years) == 1 or re.fullmatch(r"\d{4}(-\d\d-\d\d)?", option):
        year = next(iter(years))
        return re.compile(rf"(?<![\d,.$]){year}(?!\d|,\d)")
    if re.fullmatch(r"[a-z]{6,}", option):
        # a lower-case word option read from a question ("operations"): any form of it ("operating")
        return re.compile(rf"(?<!\w){option[:5]}\w*", re.IGNORECASE)
    return re.compile(rf"(?<!\w){re.escape(option)}(?!\w)", re.IGNORECASE)   # "U.S." ends in a dot


def _clauses(answer: str, keep: Sequence[tuple[int, int]] = ()) -> list[str]:
    """The answer split at clause marks, never inside a span of ``keep`` (an option with a comma of
    its own: "Wearables, Home and Accessories")."""
    out, start = [], 0
    for m in _CLAUSE_SPLIT.finditer(answer):
        if any(a <= m.start() < b for a, b in keep):
            continue
        out.append(answer[start:m.start()])
        start = m.end()
    return [*out, answer[start:]]


def choice_of(answer: str, options: Sequence[str], question: str = "") -> tuple[str | None, str]:
    """The one option the answer commits to, or (None, why not).

    An answer naming one option chose it. Naming several, it must single one out in a clause with a
    comparison word ("Higher in fiscal 2022: ... vs ..."; "2021 was the highest"; "2022 was higher than
    2021"); a comparison word of the opposite direction to the question's picks the other of two (of
    more, that clause is about the other extreme and chooses nothing). Options "higher"/"lower" are a
    direction: :func:`direction_of`."""
    if {str(o).lower() for o in options} == set(DIRECTION_OPTIONS):
        chosen, why = direction_of(answer, question)
        return (next(o for o in options if str(o).lower() == chosen) if chosen else None), why
    if {str(o).lower() for o in options} == set(YES_NO):
        chosen, why = yes_no_of(answer)
        if chosen is None:
            chosen, why = _affirms_direction(answer, question) or (None, why)
        return (next(o for o in options if str(o).lower() == chosen) if chosen else None), why
    pats = {o: _option_pattern(o) for o in options}
    answer = _YEAR_SPAN_RE.sub(" ", answer)
    named = [o for o, p in pats.items() if p.search(answer)]
    if not named:
        return None, "names none of the options"
    q_bare = question
    for p in pats.values():       # option names are no direction: "Greater China", "More Personal Computing"
        q_bare = p.sub(" ", q_bare)
    q_up, q_down = bool(_UP.search(q_bare)), bool(_DOWN.search(q_bare))
    spans = [m.span() for p in pats.values() for m in p.finditer(answer)]
    chosen: set[str] = set()
    for clause in _clauses(answer, spans):
        bare = clause
        for p in pats.values():
            bare = p.sub(" ", bare)
        up, down = _UP.search(bare), _DOWN.search(bare)
        if not (up or down):
            continue
        in_clause = [o for o in named if pats[o].search(clause)]
        than = _THAN_RE.search(clause)
        if than:
            in_clause = [o for o in in_clause if not pats[o].search(than.group(1))]
        if len(in_clause) != 1:
            continue
        opposite = (q_up and down and not up) or (q_down and up and not down)
        if opposite and len(options) == 2:
            chosen.add(next(o for o in options if o != in_clause[0]))
        elif not opposite:
            chosen.add(in_clause[0])
    if len(chosen) == 1:
        return chosen.pop(), "singles out one option"
    if len(named) == 1 and not chosen:
        return named[0], f"names only {named[0]}"
    if not chosen:
        lead = _lead(answer)
        in_lead = [o for o in named if pats[o].search(lead)]
        if len(in_lead) == 1 and ":" not in lead and not hedge_of(lead):
            # "Fiscal 2020. The figures: fiscal 2019: ...; fiscal 2020: ...": the answer, then its support
            return in_lead[0], f"opens with {in_lead[0]} alone, then the figures of every option"
        m = _COMMA_LEAD_RE.match(re.sub(r"\*\*|__|`", "", answer))
        if m and len(m.group("lead").split()) <= 6 and not re.search(r"\b(?:and|or)\b|[&/]", m.group("lead")):
            in_lead = [o for o in named if pats[o].search(m.group("lead"))]
            listed = any(pats[o].search(m.group("rest")[:16]) for o in named)
            if len(in_lead) == 1 and not listed and not hedge_of(m.group("lead")):
                # "Fiscal 2022, at $394.3 billion compared to $365.8 billion in fiscal 2021"
                return in_lead[0], f"opens with {in_lead[0]} alone before a comma"
    return None, f"names {len(named)} options without singling one out"


_COMMA_LEAD_RE = re.compile(r"^[\s#>*_-]*(?P<lead>[^,;:\n]{1,60}),\s*(?P<rest>.*)", re.DOTALL)
_BOLD_LEAD_RE = re.compile(r"^\s*(?:#+\s*)?(?:\*\*|__)(?P<b>[^*_\n]+?)(?:\*\*|__)")


def _lead(answer: str) -> str:
    """What an answer opens with as its own statement: a leading bold span ("**Fiscal 2025** ..."), else
    its first sentence."""
    m = _BOLD_LEAD_RE.match(answer or "")
    if m:
        return m.group("b")
    text = re.sub(r"\*\*|__|`|^#+\s*", "", (answer or "").strip())
    # a sentence ends at . ! ? before a blank ("Fiscal 2020. The figures ..."), not after a one-letter
    # word or list number ("1. ", "U.S. ")
    end = re.search(r"(?<!\b\w)[.!?](?=\s)|\n", text)
    return text[:end.start()] if end else text


DIRECTION_OPTIONS = ("higher", "lower")
YES_NO = ("yes", "no")
_YES_NO_LEAD_RE = re.compile(r"^[\W_]*(?:(?:the\s+)?answer\s+is\s*:?\s*|answer\s*:\s*)?[\W_]*(yes|no)\b(?!\s+(?:data|"
                             r"information|figure|disclosure|mention)\b)", re.IGNORECASE)

_NEGATION_RE = re.compile(r"\b(?:not|never|no\s+longer)\b|n't\b", re.IGNORECASE)


_CHANGE_VERB_Q_RE = re.compile(r"\b(?:increas\w*|decreas\w*|grow\w*|grew|declin\w*|rise|rose|risen|fall|fell|fallen|"
                               r"improv\w*|deteriorat\w*|shr[ai]nk\w*|drop\w*)\b", re.IGNORECASE)
_YES_NO_DIRECTION_Q_RE = re.compile(r"^\s*(?:did|has|have|was|were|is|are|does|do)\b", re.IGNORECASE)


def _affirms_direction(answer: str, question: str) -> tuple[str, str] | None:
    """A yes/no question about a direction ("Did Apple's net sales increase in fiscal 2022?") answered by a
    statement of the direction, without "yes" or "no": the same direction says yes ("Net sales rose 7.8%
    to $394.3 billion."), the opposite one no. None when the question or the answer states no single
    direction."""
    if not _YES_NO_DIRECTION_Q_RE.match(question or "") or not _CHANGE_VERB_Q_RE.search(question or ""):
        return None     # "Did opex exceed $50 billion?" asks a threshold, not a change
    asked, _ = direction_of(re.sub(r"^\s*\w+\s+", "", question), "")
    said, _ = direction_of(answer, question)
    if asked is None or said is None:
        return None
    return ("yes", f"states the asked direction ({said})") if said == asked else \
        ("no", f"states the opposite direction ({said}, asked {asked})")


def yes_no_of(answer: str) -> tuple[str | None, str]:
    """"yes" / "no" when the answer opens with it ("Yes.", "**No**, the company ...", "Answer: yes"),
    else (None, why). An answer that says both or neither up front commits to neither."""
    m = _YES_NO_LEAD_RE.match(answer or "")
    if m:
        return m.group(1).lower(), f"opens with {m.group(1).lower()}"
    first = _first_sentence(answer)
    if _NEGATION_RE.search(first) and not hedge_of(first):
        # "3M is not a capital-intensive business": a negated statement answers no
        return "no", "its first sentence is negated"
    return None, "does not open with yes or no, nor negate its first sentence"
# what follows names the other side of a comparison ("higher than 2021", "below Mac", "ahead of Europe")
_THAN_RE = re.compile(r"\b(?:than|below|above|behind|ahead\s+of|followed\s+by|over)\b(.*)$", re.IGNORECASE)
_RISE = re.compile(r"\b(higher|rose|rise[sn]?|rising|increas\w*|grew|grow[ns]?|growing|up|exceed\w*|above|larger|"
                   r"greater|more|bigger|improv\w*|expand\w*|climb\w*|jump\w*)\b", re.IGNORECASE)
_FALL = re.compile(r"\b(lower|fell|fall[s]?|falling|fallen|decreas\w*|declin\w*|dropp?\w*|down|below|smaller|less|"
                   r"shr[ai]nk\w*|contract\w*|reduc\w*|slipp?\w*)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no)\s+(?:\w+\s+)?$|n't\s+(?:\w+\s+)?$", re.IGNORECASE)
_SUBJECT_RE = re.compile(r"\b(?:was|were|is|did)\s+(?P<a>.+?)\s+(?:higher or lower|rise or fall)\b"
                         r"(?:\s+than\s+(?P<b>.+?))?(?=\s+in\s+fiscal|\?|$)", re.IGNORECASE)
_STOPWORDS = frozenset(["the", "its", "their", "a", "an", "of", "in", "for", "and", "or", "at", "than", "company's", "fiscal", "year"])


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z&]+", (text or "").lower()) if w not in _STOPWORDS and len(w) > 1
            and not w.endswith("'s")}


def direction_of(answer: str, question: str = "") -> tuple[str | None, str]:
    """"higher" / "lower": the one direction the answer states, or (None, why not).

    Direction words count with their synonyms ("rose", "increased" -> higher; "fell", "declined" ->
    lower), a negation flips one ("did not rise"), and a comparison whose subject is after "than"
    reads backwards: to "Was revenue higher or lower in fiscal 2022 than in fiscal 2021?", "2021 was
    lower than 2022" says higher. The subject is the question's first side (the later year when it
    compares two years; the first item's words when it compares two items). An answer stating both directions ("higher or lower", "it rose, then fell")
    commits to none."""
    m = _SUBJECT_RE.search(question or "")
    q_years = sorted(years_in(question or ""))
    if m and m.group("b"):       # item against item: the subject is the first item's words
        subject = _content_words(m.group("a")) - _content_words(m.group("b"))

        def names_subject(text: str) -> bool:
            return bool(subject & _content_words(text))
    else:                        # a year against another: the subject is the later year
        later = str(q_years[-1]) if len(q_years) >= 2 else "\x00"

        def names_subject(text: str) -> bool:
            return later in text

    found: set[str] = set()
    for clause in _clauses(_YEAR_SPAN_RE.sub(" ", answer or "")):
        than = re.search(r"\bthan\b", clause, re.IGNORECASE)
        before, after = (clause[:than.start()], clause[than.end():]) if than else (clause, "")
        dirs = set()
        for pat, d in ((_RISE, 1), (_FALL, -1)):
            for w in pat.finditer(before):
                dirs.add(-d if _NEGATION.search(before[:w.start()][-20:]) else d)
        if len(dirs) != 1:
            if dirs:
                found.update({"higher", "lower"})
            continue
        d = dirs.pop()
        if than and names_subject(after) and not names_subject(before):
            d = -d   # "2021 was lower than 2022": the subject is the object of the comparison
        found.add("higher" if d > 0 else "lower")
    if len(found) == 1:
        return found.pop(), "states one direction"
    if not found:
        return None, "states no direction (higher/lower, rose/fell)"
    return None, "states both directions"


def correctness(answer: str, *, question: str = "", answer_values: Sequence[Mapping[str, Any]] = (),
                answer_choice: str | None = None, choice_options: Sequence[str] = (),
                inputs: Sequence[Mapping[str, Any]] = (), requested_scale: float | None = None,
                required_terms: Sequence[str] = ()) -> Verdict:
    """Did the answer commit to the right value(s) or option? See docs/METRICS.md "Correctness".

    * a hedge ("between 10 and 20", "either", "possibly") or an echo of the question is non-committal;
    * choice items: the answer must single out one option (:func:`choice_of`) and it must be right;
    * value items: every asked value stated (:func:`value_matches`); any other figure the answer
      states must be one of the item's inputs (a change shown with its two years) - a figure that is
      neither makes the answer a list of candidates, non-committal;
    * a value stated for another year than the asked one (the answer names years, none asked) is wrong;
    * ``required_terms``: an entity the reference names as its answer ("Corporate") must be named in
      the answer's first sentence;
    * a bare number in the answer takes the scale the question asks for ("(in USD millions)":
      ``requested_scale``, read from the question when not given).
    """
    from finrag_pipeline.core.asked import requested_units

    refs = reference_values(answer_values)
    terms = [t for t in required_terms if str(t).strip()]
    if not refs and not answer_choice and not terms:
        return Verdict(None, False, "the item asks for no value or choice (narrative or unanswerable)")
    asked = requested_units(question)
    if requested_scale is None:
        requested_scale = asked.scale
    if asked.unit == "percent":     # "3.0" to "... as a percentage" is 3.0%
        refs = [dataclasses.replace(r, bare_in_unit=True) if r.unit == "percent" else r for r in refs]
    answer = plain_latex(answer)      # "\\frac{170,782}{394,328} \\times 100 \\approx 43.3\\%"
    hedge = hedge_of(answer)
    if hedge:
        return Verdict(0.0, True, f"hedges: {hedge!r}")
    if is_echo(answer, question):
        return Verdict(0.0, True, "echoes the question")
    if answer_choice:
        options = _options(answer_choice, choice_options)
        chosen, why = choice_of(answer, options, question)
        if chosen is None:
            return Verdict(0.0, True, f"commits to no option: {why}")
        if chosen != answer_choice:
            return Verdict(0.0, False, f"chose {chosen}, the answer is {answer_choice}")
        return Verdict(1.0, False, f"chose {chosen} ({why})")
    if terms:
        first = _first_sentence(answer)
        missing_terms = [t for t in terms if not _names_term(first, t)]
        if missing_terms:
            named_later = [t for t in missing_terms if _names_term(answer, t)]
            return Verdict(0.0, False, f"does not name {missing_terms} as its answer"
                           + (" (named later, not as the answer)" if named_later else ""))
        listed = [t for t in terms if _listed_with_others(first, t)]
        if listed:
            return Verdict(0.0, True, f"names {listed[0]!r} in a list of candidates")
        if not refs:
            return Verdict(1.0, False, f"names {terms} as its answer")
    return _value_verdict(answer, refs, question, inputs, requested_scale)


def _first_sentence(answer: str) -> str:
    text = re.sub(r"\*\*|__|`|^#+\s*", "", (answer or "").strip())
    m = re.search(r"(?<!\d)[.!?](?=\s)|\n", text)
    return text[:m.start()] if m else text


def _listed_with_others(text: str, term: str) -> bool:
    """"Consumer, Corporate, Industrial" / "Corporate or Consumer": the term is one of several names."""
    t = re.escape(term)
    name = r"[A-Z][\w&\-]+"
    return bool(re.search(rf"{name}\s*(?:,|/|\bor\b|\band\b)\s*(?:the\s+)?{t}(?!\w)|(?<!\w){t}\s*(?:,|/|\bor\b|\band\b)"
                          rf"\s*(?:the\s+)?{name}", text or ""))


def _names_term(text: str, term: str) -> bool:
    return bool(re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text or "", re.IGNORECASE))


_CHANGE_QUESTION_RE = re.compile(r"\b(?:chang\w*|growth|grow|grew|increas\w*|decreas\w*|declin\w*|differ\w*|"
                                 r"by\s+how\s+much|year-over-year|yoy)\b", re.IGNORECASE)


# a question that asks for a change: "By how much did ... change?", "What was the growth ...?"
_ASKS_CHANGE_RE = re.compile(r"\bby\s+how\s+(?:much|many)\b|\b(?:what|how\s+much)\s+(?:was|is|were|did|has|have|had|"
                             r"does|do)\s+(?:the\s+)?(?:[\w%$&'\-]+\s+){0,8}?(?:chang\w*|increas\w*|decreas\w*|"
                             r"growth|grow\w*|grew|declin\w*|differ\w*|varian\w*)\b", re.IGNORECASE)


def asked_kind(question: str, refs: Sequence[ReferenceValue]) -> str | None:
    """A change (a signed value, or a question about a change) or a level; None when unsure."""
    if refs and all(r.signed or r.unit == "percentage points" for r in refs):
        return CHANGE
    if _ASKS_CHANGE_RE.search(question or ""):
        return CHANGE
    if _CHANGE_QUESTION_RE.search(question or ""):
        return None      # "What drove the increase ...; what were net sales?": either may answer
    return LEVEL


def _swapped_labels(reading: Any, refs: Sequence[ReferenceValue], inputs: Sequence[Mapping[str, Any]],
                    stated: Mapping[int, Sequence[Figure]], answer: str) -> str | None:
    """Two or more asked values, each with its line item's label (the item's source figure of that value):
    a figure stated under another value's label ("Total revenue was $64,089 million and net cash from
    operations was $130,497 million", the two swapped) is that other value, wrong. None when no figure
    is labelled against its value."""
    from finrag_pipeline.core.asked import content_words

    if len(refs) < 2:
        return None
    labelled = [(str(i["label"]), v) for i in inputs or [] if i.get("label") and i.get("value") is not None
                for v in reference_values([{**i, "unit": i.get("unit"), "text": i.get("text")}])]
    labels = []
    for r in refs:
        named = [label for label, v in labelled if v.unit == r.unit and _close(v.value, r.value, r.half_ulp)]
        labels.append(content_words(named[0]) if named else set())
    if sum(bool(x) for x in labels) < 2:
        return None
    for i, figs in stated.items():
        for f in figs:
            claim = reading.claim_of(f)
            said = content_words(claim.label) if claim else set()
            own = said & labels[i]
            others = [j for j, lab in enumerate(labels) if j != i and said & lab - labels[i]]
            if others and not own:
                return f"states {f.text} as {claim.label!r}: that is {refs[others[0]].text}'s line, not {refs[i].text}'s"
    return None


_FROM_END_RE = re.compile(r"\bfrom\s*(?:about\s+|approximately\s+|~)?[\s*($]*$", re.IGNORECASE)
_TO_END_RE = re.compile(r"^[^.;\n]*\bto\s*(?:about\s+|approximately\s+|~)?[\s*($]*$", re.IGNORECASE)


def _levels_of_change(answer: str, figs: Sequence[Figure], refs: Sequence[ReferenceValue]) -> str | None:
    """A change whose reference states only its two levels ("changed from 24.6% in FY2021 to 21.6% in
    FY2022"), answered in the same words: "from A to B" with B - A the reference's change (points for
    percentages). A reference that states the change itself ("decreased by $204 million") still needs it:
    "From $1,373 million to $1,577 million" answers it only in part."""
    figs = sorted(figs, key=lambda f: f.start)
    for r in refs:
        if not r.levels_stated:
            continue
        for a, b in zip(figs, figs[1:], strict=False):
            if not (_FROM_END_RE.search(answer[max(0, a.start - 40):a.start]) and _TO_END_RE.search(answer[a.end:b.start])):
                continue
            unit = "percent" if r.points_equivalent or r.unit == "percentage points" else r.unit
            ra, rb = _stated_values(a, unit), _stated_values(b, unit)
            if ra and rb and _close(rb[0][0] - ra[0][0], r.value, max(r.half_ulp, ra[0][1] + rb[0][1])):
                return f"states the two levels the reference states, {a.text} -> {b.text}: the change {r.text}"
    return None


def _value_verdict(answer: str, refs: Sequence[ReferenceValue], question: str,
                   inputs: Sequence[Mapping[str, Any]], requested_scale: float | None) -> Verdict:
    """Value items: read the answer as claims (answer_claims.read_claims); only the figures that
    compete for the asked slot count, operands of shown working and context figures do not."""
    stated_all = _candidates(answer, refs, requested_scale)
    asked_years = {y for r in refs if r.period for y in years_in(r.period)}
    reading = read_claims(answer, stated_all, asked_years=asked_years, asked_kind=asked_kind(question, refs))
    if reading.is_list:   # a bare list singles nothing out: every figure competes
        competing = [c.figure for c in reading.claims if c.role != OPERAND]
    else:
        competing = reading.answers
    of_kind = [f for f in stated_all if any(_readings(f, r) or (r.points_equivalent and f.points)
                                            for r in refs)]
    cands = [f for f in competing if f in of_kind or any(r.points_equivalent and f.points for r in refs)]
    if not cands:
        levels = _levels_of_change(answer, [c.figure for c in reading.claims if c.role == CONTEXT], refs)
        if levels:
            return Verdict(1.0, False, levels)
        context = [c for c in reading.claims if c.role == CONTEXT and c.figure in of_kind]
        elsewhere = [c for c in context if c.period is not None and asked_years and c.period not in asked_years
                     and any(value_matches(c.figure, r, answer) for r in refs)]
        if elsewhere:   # "In fiscal 2021 net sales were $394,328 million" for 2022: committed, wrong period
            return Verdict(0.0, False, f"attributes {elsewhere[0].figure.text} to {elsewhere[0].period}, "
                                       f"asked {sorted(asked_years)}")
        if context:
            return Verdict(0.0, True, f"states only context figures {[c.figure.text for c in context][:5]} "
                                      f"({context[0].why})")
        if [c for c in reading.claims if c.role == OPERAND and c.figure in of_kind]:
            return Verdict(0.0, True, "shows working without a result")
        wrong_unit = [f.text for f in stated_all if any(_loosely_equal(f, r) for r in refs)]
        if wrong_unit:  # "7.8 percentage points" for a 7.8% change: committed, in the wrong unit
            return Verdict(0.0, False, f"states {wrong_unit[0]} in the wrong unit, asked {[r.text for r in refs]}")
        return Verdict(0.0, True, "states no figure of the asked kind")
    stated = {i: [f for f in cands if value_matches(f, r, answer)] for i, r in enumerate(refs)}
    inputs_ = _input_values(inputs)
    about_refs = [f for f in cands if any(value_matches(f, r, answer) or _loosely_equal(f, r) for r in refs)]
    extras = [f for f in cands if f not in about_refs
              and not any(value_matches(f, r, answer) or _loosely_equal(f, r) for r in inputs_)]
    if extras and len(extras) + len(about_refs) >= 2:
        return Verdict(0.0, True, f"states several candidate figures {[f.text for f in extras + about_refs][:5]}")
    if extras:
        return Verdict(0.0, False, f"states {extras[0].text}, the answer is {[r.text for r in refs]}")
    missing = [r for i, r in enumerate(refs) if not stated[i]]
    if missing and not any(_loosely_equal(f, r) for f in cands for r in refs):
        return Verdict(0.0, True, f"quotes only the inputs {[f.text for f in cands][:5]}, not the asked value")
    if missing:
        wrong_scale = [r.text for r in missing if any(_loosely_equal(f, r) for f in cands)]
        if wrong_scale:
            return Verdict(0.0, False, f"states {wrong_scale} at the wrong scale, unit or sign")
        return Verdict(0.0, False, f"does not state {[r.text for r in missing]}")
    swapped = _swapped_labels(reading, refs, inputs, stated, answer)
    if swapped:
        return Verdict(0.0, False, swapped)
    if asked_years and not any(reading.claim_of(f).period for f in cands):
        # no figure names its period: the answer's years must not all be other years (attributed by sentence)
        named = years_in(answer)
        if named and not named & asked_years and not reading.with_role(CONTEXT):
            return Verdict(0.0, False, f"attributes the value to {sorted(named)}, asked {sorted(asked_years)}")
    return Verdict(1.0, False, "states every asked value; other figures are context or working"
                   if len(reading.claims) > len(cands) else "states every asked value and nothing else")


# ---------------------------------------------------------------------------------------------
# Evidence: figures with the scale their text declares and the period of their column


@dataclass(frozen=True)
class EvidenceFigure:
    """A figure of the cited evidence. ``scale_known`` is False for a bare number in a text that
    declares no scale (then only the same printed number grounds it); ``year`` is the period of
    its table column ("2022: 394,328", a header line of years) or of its sentence (one year named)."""

    figure: Figure
    scale_known: bool
    year: int | None


_SENTENCE_RE = re.compile(r"(?<=[.;])\s+(?=[A-Z(])")


def evidence_figures(text: str) -> list[EvidenceFigure]:
    """Figures of one evidence text: table-row chunks ("Label | 2022: 394,328 | 2021: 365,817 | USD
    millions"), whole-table chunks (a header line of years, then "label | v1 | v2"), and prose."""
    declared = scale_of_text(text)
    scale = declared or 1.0
    out: list[EvidenceFigure] = []
    header_years: list[int | None] = []

    def add(segment: str, year: int | None) -> None:
        for f in parse_figures(segment, scale=scale):
            known = declared is not None or f.explicit_scale or f.percent or f.points or f.per_share
            out.append(EvidenceFigure(f, known, year))

    for line in (text or "").splitlines():
        segs = [s.strip() for s in line.split("|")]
        if len(segs) > 1:
            values = segs[1:]
            labelled = [s for s in segs if ":" in s and years_in(s.rsplit(":", 1)[0])]
            if labelled:
                for s in segs:
                    left, _, right = s.rpartition(":")
                    if left and years_in(left):
                        add(right, max(years_in(left)))
                    elif not years_in(s):
                        add(s, None)
                continue
            if all(years_in(s) for s in values if s) and any(values):
                # a header line of periods ("| September 24, 2022 | September 25, 2021")
                header_years = [max(years_in(s)) if years_in(s) else None for s in values]
                continue
            if header_years and len(values) == len(header_years):
                for value, year in zip(values, header_years, strict=True):
                    add(value, year)
                continue
        for sentence in _SENTENCE_RE.split(line):
            years = years_in(sentence)
            add(sentence, next(iter(years)) if len(years) == 1 else None)
    return out


def _grounded_by(a: Figure, e: EvidenceFigure) -> bool:
    """The evidence figure states the answer's figure at a compatible scale and unit (sign aside:
    "(334)" in a table is "a decrease of $334 million" in words)."""
    f = e.figure
    if (a.percent or a.points) != (f.percent or f.points):
        # a fraction in the answer for a printed percent: 0.433 for 43.3%
        if f.percent and a.kind == "plain" and abs(a.value) < 1:
            return _close(abs(a.value) * 100, abs(f.value), max(a.half_ulp * 100, f.half_ulp))
        return False
    if (not e.scale_known or (not a.explicit_scale and a.scale == 1.0)) and not a.percent:
        # evidence of unknown scale, or an answer quoting a bare number: only the same printed number
        return _close(a.magnitude, f.magnitude, 0.5 * 10 ** -min(a.decimals, f.decimals))
    allowed = max(min(a.half_ulp, MAX_ROUNDING * abs(f.value)), f.half_ulp)
    return _close(abs(a.value), abs(f.value), allowed)


# the shown computations (checked arithmetic) are read in core/scoring/answer_claims.py
_shown_computations = checked_computations


def _derived(a: Figure, grounded: Sequence[Figure]) -> bool:
    """``a`` is computed from grounded figures the answer states: a difference, sum or average of two
    (amounts); a ratio, percent change or share of two, or a ratio to the average of two ("revenue /
    average PP&E", percent or plain); days ("365 x receivables / revenue")."""
    target = abs(a.value)
    tol = max(a.half_ulp, 1e-9)
    values = [x.value for x in grounded]

    def div(x: float, y: float) -> float:
        return x / y if y else math.nan

    candidates: list[float] = []
    for i, x in enumerate(values):
        for j, y in enumerate(values):
            if i == j:
                continue
            averages = [div(y + z, 2) for k, z in enumerate(values) if k not in (i, j)]
            if a.percent:
                candidates += [div(x, y) * 100, div(x - y, abs(y)) * 100, *(div(x, m) * 100 for m in averages)]
            elif a.currency or a.explicit_scale or a.per_share:
                candidates += [x - y, x + y, (x + y) / 2]
            else:                      # a plain ratio, a multiple or a number of days
                candidates += [div(x, y), *(div(x, m) for m in averages), 365 * div(x, y),
                               *(365 * div(m, y) for m in averages)]
    return any(not math.isnan(v) and _close(abs(v), target, tol) for v in candidates)


def grounding(answer: str, cited_texts: Iterable[str]) -> tuple[float | None, str]:
    """1 when every figure of the answer is grounded in the evidence it cites, else 0.

    Grounded = the cited evidence holds it at a compatible scale and unit ("12" is NOT in "$12,345
    million"; "$394.3 billion" IS in "394,328 | USD millions"), or the answer shows how it was
    computed from grounded figures ("394,328 - 365,817 = 28,511", or a change/ratio of two grounded
    figures it states). None when the answer states no figure."""
    shown = _shown_computations(answer)
    constants = [span for _, _, span in shown if span]
    figures = [f for f in _candidates(answer) if not any(a <= f.start < b for a, b in constants)]
    if not figures:
        return None, "the answer states no figure"
    evidence = [e for t in cited_texts for e in evidence_figures(t)]
    direct = [a for a in figures if any(_grounded_by(a, e) for e in evidence)]
    grounded_mags = [abs(a.magnitude) for a in direct]
    ungrounded = []
    for a in figures:
        if a in direct:
            continue
        via_expr = any(_close(abs(r), a.magnitude, a.half_ulp / a.scale + 1e-9)
                       and all(any(_close(o, g, 0.5) for g in grounded_mags) for o in ops)
                       for ops, r, _ in shown)
        if not (via_expr or _derived(a, direct)):
            ungrounded.append(a.text)
    if ungrounded:
        return 0.0, f"not in the cited evidence at a compatible scale: {ungrounded[:5]}"
    return 1.0, "every figure is in the cited evidence or computed from figures that are"


def period_check(answer: str, asked_periods: Sequence[str], cited_texts: Iterable[str] = ()
                 ) -> tuple[float | None, str]:
    """1 when the answer's figures come from the asked period, 0 when one comes from another.

    The period of a figure is the column (or sentence) of the cited evidence that holds it, never a
    year the answer merely mentions. None when no period is asked, or when no figure of the answer
    sits in a period-labelled place of the cited evidence (with the reason)."""
    asked = set().union(*(years_in(p) for p in asked_periods)) if asked_periods else set()
    if not asked:
        return None, "the question asks for no period"
    figures = _candidates(answer)
    if not figures:
        return None, "the answer states no figure"
    texts = list(cited_texts)
    if not texts:
        return 0.0, "no cited evidence shows the period of the answer's figures"
    evidence = [e for t in texts for e in evidence_figures(t) if e.year is not None]
    located = 0
    for a in figures:
        years = {e.year for e in evidence if _grounded_by(a, e)}
        if not years:
            continue
        located += 1
        if not years & asked:
            return 0.0, f"{a.text} is the {sorted(years)} figure of the cited evidence, asked {sorted(asked)}"
    if not located:
        return None, "no figure of the answer is in a period-labelled place of the cited evidence"
    return 1.0, f"{located} figure(s) come from the asked period(s) {sorted(asked)}"


def citation_scores(cited_pages: Iterable[tuple[str, int]],
                    gold_groups: Sequence[Iterable[tuple[str, int]]]) -> tuple[tuple[float | None, str],
                                                                               tuple[float | None, str]]:
    """Page-level citation precision and recall.

    precision = cited pages that hold gold evidence (any alternative) / distinct cited pages;
    recall = required evidence groups with at least one cited page / number of groups (the
    grouping of retrieval recall). None when there is nothing to divide by.
    """
    return _set_scores({(str(f), int(p)) for f, p in cited_pages},
                       [{(str(f), int(p)) for f, p in g} for g in gold_groups], "page")


def block_citation_scores(cited_blocks: Iterable[str | None], gold_groups: Sequence[Iterable[str | None]] | None
                          ) -> tuple[tuple[float | None, str], tuple[float | None, str]]:
    """Block-level citation precision and recall: the cited table-row / fact / prose chunks against
    the evidence chunks (a table row is the block that proves a figure). None when the gold evidence
    is known by page only or the answer cites no block."""
    if gold_groups is None:
        reason = "gold evidence is known by page only"
        return (None, reason), (None, reason)
    return _set_scores({b for b in cited_blocks if b}, [{b for b in g if b} for g in gold_groups], "block")


def _set_scores(cited: set, groups: list[set], what: str) -> tuple[tuple[float | None, str], tuple[float | None, str]]:
    groups = [g for g in groups if g]
    gold = set().union(*groups) if groups else set()
    if not cited:
        precision: tuple[float | None, str] = (None, f"no {what} cited")
    elif not gold:
        precision = (None, f"no gold evidence {what}")
    else:
        precision = (len(cited & gold) / len(cited), f"{len(cited & gold)}/{len(cited)} cited {what}s hold evidence")
    if not groups:
        recall: tuple[float | None, str] = (None, f"no gold evidence {what}")
    else:
        found = sum(1 for g in groups if g & cited)
        recall = (found / len(groups), f"{found}/{len(groups)} evidence groups cited at {what} level")
    return precision, recall


# ---------------------------------------------------------------------------------------------
# Key-fact recall (judge-free, for narrative answers)

NO_KEY_FACTS = "the reference has no key facts (figures, entities, causes) to recall"
KEY_FACT_WORD_SHARE = 0.6   # a worded fact is stated when 60% of its content words are (at least one)
# A figure dump: more figures than an answer of a few sentences states (the narrative answer, lead and quoted cause,
# states at most 12 on the analysts' sets; a sentence followed by the tables of its pages, 30 to 230), and more than
# this many per figure the reference asks for. Recall by pasting every table figure is no answer: 0, as a bare list.
DUMP_MIN_FIGURES = 20
DUMP_FIGURES_PER_FACT = 5


def key_fact_recall(answer: str, key_facts: Sequence[str], question: str = "") -> tuple[float | None, str]:
    """Share of the reference's key facts the answer states: a figure at any scale or unit it may be
    written in ("$473 million" = "$0.47 billion"; sign aside), a worded fact (entity, named cause) when
    most of its content words are in the answer ("higher net sales of iPhone" ~ "iPhone sales rose").
    None with the reason when the reference has no key facts; 0 for an echo of the question or a bare
    list of figures or a dump of more figures than a few sentences state (lazy answers recall by listing)."""
    from finrag_pipeline.core.asked import content_words, unit_of_figure

    facts = [f for f in key_facts or [] if str(f).strip()]
    if not facts:
        return None, NO_KEY_FACTS
    if is_echo(answer, question):
        return 0.0, "echoes the question"
    listed = _candidates(answer)
    if len(listed) >= 3 and read_claims(answer, listed).is_list:
        return 0.0, f"a bare list of {len(listed)} figures explains nothing"
    figure_facts = sum(bool(parse_figures(f)) for f in facts)
    if len(listed) > max(DUMP_MIN_FIGURES, DUMP_FIGURES_PER_FACT * figure_facts):
        return 0.0, f"states {len(listed)} figures for {figure_facts} asked: a figure dump explains nothing"
    answer_figs = parse_figures(answer or "", scale=scale_of_text(answer or "") or 1.0)
    words = content_words(answer)
    found, missed = [], []
    for fact in facts:
        figs = parse_figures(fact)
        if figs:
            ref = ReferenceValue(abs(figs[0].value), unit_of_figure(figs[0]), None, 0.0, fact, figs[0].half_ulp)
            hit = any(_close(abs(a), ref.value, max(min(r, MAX_ROUNDING * ref.value), ref.half_ulp))
                      for f in answer_figs for a, r in _stated_values(f, ref.unit))
        else:
            need = content_words(fact)
            hit = bool(need) and len(need & words) >= max(1.0, KEY_FACT_WORD_SHARE * len(need))
        (found if hit else missed).append(fact)
    reason = f"{len(found)}/{len(facts)} key facts stated" + (f"; missing {missed[:5]}" if missed else "")
    return len(found) / len(facts), reason


# ---------------------------------------------------------------------------------------------
# LLM as judge


FAITHFULNESS_PROMPT = """You check an answer against its evidence. Split the ANSWER into atomic factual claims
(each figure with its period is one claim). For each claim say whether the EVIDENCE supports it.
Return JSON only: {{"claims": [{{"claim": "...", "supported": true, "reason": "..."}}]}}

QUESTION: {question}

EVIDENCE:
{evidence}

ANSWER: {answer}"""

RELEVANCY_PROMPT = """Rate how directly the ANSWER addresses the QUESTION (not whether it is true):
1.0 = answers exactly what was asked, 0.5 = partly or with the wrong focus, 0.0 = off topic or refuses.
Return JSON only: {{"score": 0.0, "reason": "..."}}

QUESTION: {question}

ANSWER: {answer}"""


class LLMJudge:
    """Faithfulness and answer relevancy through a configurable judge model.

    ``client`` is an ``LLMClient`` (``complete(messages, json=True, **params)`` returning
    ``.state``, ``.parsed_json``, ``.text``, ``.error``). A judge failure yields None with the reason:
    it says nothing about the answer, so it must not score it (coverage shows the gap).
    """

    def __init__(self, client: Any, *, max_evidence_chars: int = 6000, **params: Any) -> None:
        self.client = client
        self.max_evidence_chars = max_evidence_chars
        self.params = {"temperature": 0.0, **params}

    @property
    def name(self) -> str:
        return str(getattr(self.client, "name", getattr(self.client, "model", "judge")))

    def _ask(self, prompt: str, required: tuple[str, ...]) -> tuple[Any | None, str]:
        resp = self.client.complete([{"role": "user", "content": prompt}], json=True, **self.params)
        if getattr(resp, "state", "ok") != "ok" or not isinstance(resp.parsed_json, dict):
            return None, f"judge {getattr(resp, 'state', '?')}: {getattr(resp, 'error', None) or resp.text[:200]}"
        if getattr(resp, "json_truncated", False) and not resp.json_complete(required):
            return None, f"judge output truncated before {', '.join(required)} ended"  # a partial verdict is none
        return resp.parsed_json, ""

    def faithfulness(self, question: str, answer: str, evidence: Sequence[str]) -> tuple[float | None, Any]:
        """supported claims / claims, with the judge's verdict per claim as the reasons."""
        ev = "\n---\n".join(evidence)[: self.max_evidence_chars]
        data, err = self._ask(FAITHFULNESS_PROMPT.format(question=question, evidence=ev, answer=answer), ("claims",))
        if data is None:
            return None, err
        claims = data.get("claims")
        if not isinstance(claims, list) or not claims:
            return None, "judge found no claims"
        verdicts = [{"claim": str(c.get("claim", "")), "supported": _truthy(c.get("supported")),
                     "reason": str(c.get("reason", ""))} for c in claims if isinstance(c, dict)]
        if not verdicts:
            return None, "judge returned malformed claims"
        return sum(v["supported"] for v in verdicts) / len(verdicts), verdicts

    def relevancy(self, question: str, answer: str) -> tuple[float | None, str]:
        data, err = self._ask(RELEVANCY_PROMPT.format(question=question, answer=answer), ("score",))
        if data is None:
            return None, err
        try:
            score = float(data.get("score"))
        except (TypeError, ValueError):
            return None, f"judge gave no numeric score: {data!r}"[:300]
        if math.isnan(score):
            return None, "judge score is NaN"
        return min(1.0, max(0.0, score)), str(data.get("reason", ""))


def _truthy(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("true", "yes", "supported", "1")
    return bool(v)


# ---------------------------------------------------------------------------------------------
# Scoring one answer under the response-state policy


@dataclass(frozen=True)
class AnswerKey:
    """What an answer is scored against: the QA item's contract and evidence."""

    question: str = ""
    answer_values: Sequence[Mapping[str, Any]] = ()
    answer_choice: str | None = None
    choice_options: Sequence[str] = ()
    inputs: Sequence[Mapping[str, Any]] = ()
    asked_periods: Sequence[str] = ()
    gold_page_groups: Sequence[Iterable[tuple[str, int]]] = ()
    gold_block_groups: Sequence[Iterable[str | None]] | None = None
    required_terms: Sequence[str] = ()     # an entity the reference names as its answer ("Corporate")
    key_facts: Sequence[str] = ()          # the reference's figures, entities and causes (key_fact_recall)
    contract_note: str = ""                # how the contract was derived, or why it could not be

    @property
    def answerable(self) -> bool:
        return any(True for g in self.gold_page_groups for _ in g)


def score_answer(*, answer: str, response_state: str, citations: Sequence[tuple[str, int, str | None]],
                 cited_texts: Sequence[str], key: AnswerKey, judge: LLMJudge | None = None
                 ) -> tuple[dict[str, float | None], dict[str, Any]]:
    """All answer metrics of one answer -> (metrics, notes with the reason for each value).

    Policy (so that no failure vanishes from a mean):
    * answerable item, backend_error / invalid_output / abstained / insufficient_context / no_evidence:
      every score 0 (``non_committal`` and ``abstention_correct`` are rates, None; the judge's scores are
      None without a judge: not computed, so never a mean of zeros);
    * unanswerable item (no gold evidence): ``abstention_correct`` and ``state_correct`` are 1 for a
      non-answer and 0 for an answer or a failure; every other metric None (nothing to compare);
    * answered an answerable item: each metric computed; None only when not computable, with why.
    """
    if response_state not in RESPONSE_STATES:
        raise ValueError(f"unknown response state {response_state!r}")
    notes: dict[str, Any] = {}
    metrics: dict[str, float | None] = dict.fromkeys(ANSWER_METRICS)
    if not key.answerable:
        abstained = response_state in NON_ANSWER_STATES
        metrics["abstention_correct"] = metrics["state_correct"] = 1.0 if abstained else 0.0
        why = ("unanswerable question, correctly not answered" if abstained
               else f"unanswerable question, {response_state}")
        return metrics, dict.fromkeys(ANSWER_METRICS, why)
    if response_state != ANSWERED:
        reason = f"{response_state}: scored 0"
        metrics = unanswered_scores(judged=judge is not None,   # the rule of failure_scoring.py
                                    has_key_facts=bool(key.key_facts))
        notes = dict.fromkeys(ANSWER_METRICS, reason)
        notes.update({m: NO_KEY_FACTS for m in KEY_FACT_METRICS if metrics[m] is None})
        notes["abstention_correct"] = "answerable question"
        notes["non_committal"] = f"{response_state}: not an answer"
        if judge is None:
            notes.update(dict.fromkeys(JUDGE_METRICS, "no judge configured"))
        return metrics, notes
    verdict = correctness(answer, question=key.question, answer_values=key.answer_values,
                          answer_choice=key.answer_choice, choice_options=key.choice_options, inputs=key.inputs,
                          required_terms=key.required_terms)
    metrics["correctness"], notes["correctness"] = verdict.correct, verdict.reason
    if verdict.correct is None and key.contract_note:
        notes["correctness"] = f"{verdict.reason}: {key.contract_note}"
    metrics["key_fact_recall"], notes["key_fact_recall"] = key_fact_recall(answer, key.key_facts, key.question)
    if verdict.correct is None:
        metrics["non_committal"], notes["non_committal"] = None, verdict.reason
    else:
        metrics["non_committal"] = 1.0 if verdict.non_committal else 0.0
        notes["non_committal"] = verdict.reason
    metrics["grounded"], notes["grounded"] = grounding(answer, cited_texts)
    metrics["period_ok"], notes["period_ok"] = period_check(answer, key.asked_periods, cited_texts)
    (p, p_note), (r, r_note) = citation_scores([(c[0], c[1]) for c in citations], key.gold_page_groups)
    metrics["citation_precision"], notes["citation_precision"] = p, p_note
    metrics["citation_recall"], notes["citation_recall"] = r, r_note
    (bp, bp_note), (br, br_note) = block_citation_scores([c[2] for c in citations], key.gold_block_groups)
    metrics["block_citation_precision"], notes["block_citation_precision"] = bp, bp_note
    metrics["block_citation_recall"], notes["block_citation_recall"] = br, br_note
    notes["abstention_correct"] = "answerable question"
    if judge is None:
        notes.update(dict.fromkeys(JUDGE_METRICS, "no judge configured"))
    else:
        metrics["faithfulness"], notes["faithfulness"] = judge.faithfulness(key.question, answer, cited_texts)
        metrics["answer_relevancy"], notes["answer_relevancy"] = judge.relevancy(key.question, answer)
    metrics["state_correct"], notes["state_correct"] = 1.0, "answered an answerable question"
    return metrics, notes
