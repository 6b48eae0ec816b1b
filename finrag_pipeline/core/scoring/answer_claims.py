"""Read an answer as claims: each stated figure with its label, period, kind and role.

A careful grader does not count every number of an answer as a competing guess. In

    "It was $394,328 million in FY2022, compared with $365,817 million in 2021."
    "$3,676.2 - $460.8 = $3,215.4 million"
    "Net sales rose to $394.3 billion in 2022 from $365.8 billion in 2021."

the answer is $394,328 million, $3,215.4 million and $394.3 billion; the other figures are context
(attributed to another period, or introduced by "compared with" / "from" / "vs") or operands of the
working the answer shows. :func:`read_claims` gives every figure one role:

* ``operand`` - a term of a shown computation ("A - B = R": A and B; "x 100" too);
* ``context`` - a figure the answer itself attributes elsewhere: to a period that is not asked, after
  a comparison marker ("compared with", "from", "up from", "vs", "than"), or, when a level is asked,
  a change ("up $28.5 billion", "an increase of 8%"), or, when a change is asked, a level ("to $394.3
  billion", "from $365.8 billion");
* ``answer`` - everything else: the figures that compete for the asked slot.

Also working, or context (docs/METRICS.md "What else a careful grader reads past"): the intermediate
result of working that a later step uses ("= 40,778.5; 394,328 / 40,778.5 = 9.67"), a figure naming an
operand of working that ends in a result, the parts (or averaged inputs) of a stated total, and every
figure outside a line marked as the answer ("**Answer:** $111,443 million" under a table).

An answer that is a bare list ("FY2022: $394,328 million; FY2021: $365,817 million"), with no
statement and no comparison marker, commits to none of its figures: :attr:`ClaimReading.is_list`, and
every figure stays a candidate. This module parses nothing itself: figures come from core/numbers.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from finrag_pipeline.core.numbers import Figure, parse_cell, parse_figures, years_in

ANSWER, OPERAND, CONTEXT = "answer", "operand", "context"
LEVEL, CHANGE = "level", "change"


@dataclass(frozen=True)
class Claim:
    """One stated figure: ``role`` (answer / operand / context), the ``period`` (a year) the answer
    attributes it to (None when it names none), its ``kind`` (a ``level`` or a ``change``, None when
    the wording says neither), the ``label`` words before it, and ``why`` it got its role."""

    figure: Figure
    role: str
    period: int | None
    kind: str | None
    label: str
    why: str


@dataclass(frozen=True)
class ClaimReading:
    claims: list[Claim] = field(default_factory=list)
    is_list: bool = False      # a bare list of figures: no statement, nothing singled out

    def with_role(self, role: str) -> list[Claim]:
        return [c for c in self.claims if c.role == role]

    @property
    def answers(self) -> list[Figure]:
        return [c.figure for c in self.claims if c.role == ANSWER]

    def claim_of(self, f: Figure) -> Claim | None:
        return next((c for c in self.claims if c.figure is f), None)


# ---------------------------------------------------------------------------------------------
# Shown working

# What may stand between two terms of one computation: an operator (sign or word), brackets, a
# year or short label in brackets ("394,328 (2022) - 365,817 (2021)").
_BRACKET_LABEL = r"(?:\((?:[^()\d]{0,30}|(?:FY\s?)?(?:19|20)\d\d)\)|\[(?:[^\[\]\d]{0,30})\])"
_OPERATOR = (r"(?:[-\u2212\u2013+*/\u00d7\u00f7x]|minus|plus|less|times|divided\s+by|multiplied\s+by|over)")
# a word operator may name the next term: "($170,782 million) divided by net sales ($394,328 million)"
# "$122.2 billion of operating cash flow less $10.7 billion of capex": a label may stand before "less",
# "minus", "plus" (not before "over" or "times": "$394.3 billion in 2022 over $365.8 billion" compares)
_OP_GAP_RE = re.compile(rf"^(?:[\s()\[\]$]|{_BRACKET_LABEL}|million|billion|thousand)*"
                        rf"(?:(?:[A-Za-z&'\-]+\s+){{1,4}}(?=(?:less|minus|plus)\b))?{_OPERATOR}"
                        rf"(?:[\s()\[\]$]|{_BRACKET_LABEL})*(?:(?<=[a-z] )(?:[A-Za-z&'\-]+\s+){{0,4}}[\s($]*)?$",
                        re.IGNORECASE)
_RESULT_GAP_RE = re.compile(rf"^(?:[\s()\[\]$*]|{_BRACKET_LABEL}|million|billion|thousand)*"
                            r",?\s*(?:(?:which|that|this)\s+)?(?:=|\u2248|~=|\u2192|->|equals?|is\s+(?:about\s+|approximately\s+)?|gives|yields|"
                            r"results?\s+in)"
                            r"(?:[\s()\[\]$*]|approximately|about|roughly|~)*$", re.IGNORECASE)
_MINUS_SIGNS = ("-", "\u2212", "\u2013")


_LATEX_SUBS = [
    (re.compile(r"\\(?:text|mathrm|textbf|mathbf|operatorname)\s*\{([^{}]*)\}"), r"\1"),
    (re.compile(r"\\d?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}"), r"[\1] / [\2]"),
    (re.compile(r"\\(?:times|cdot)(?![a-z])"), "\u00d7"), (re.compile(r"\\div(?![a-z])"), "\u00f7"),
    (re.compile(r"\\approx(?![a-z])"), "\u2248"), (re.compile(r"\\(?:left|right)(?=[()\[\]])"), ""),
    (re.compile(r"\\([%$])"), r"\1"), (re.compile(r"\{,\}"), ","), (re.compile(r"(?<=\d)\\,(?=\d{3})"), ","),
    (re.compile(r"\\[\[\]()]|\$\$"), " "),
]


def plain_latex(text: str) -> str:
    """An answer's LaTeX read as the plain text it shows, as LLM answers write their working:
    "\\[ \\frac{135,405}{153,982} \\approx 0.88 \\]" -> "(135,405) / (153,982) \u2248 0.88", "43.3\\%" -> "43.3%",
    "\\text{Revenue}" -> "Revenue". Text without a backslash is returned as is."""
    if "\\" not in (text or "") and "{,}" not in (text or ""):
        return text or ""
    for pattern, repl in _LATEX_SUBS:
        for _ in range(3):       # nested \text inside \frac
            text, n = pattern.subn(repl, text)
            if not n:
                break
    return text


def _plain(text: str) -> str:
    """Markdown emphasis blanked (same length, so figure spans still hold): "**$394.3 billion**"."""
    return re.sub(r"\*\*|__|`", lambda m: " " * len(m.group(0)), text)


def _gap(text: str, a: Figure, b: Figure) -> str:
    return text[a.end:b.start]


def _subtraction_swallowed(text: str, a: Figure, b: Figure) -> bool:
    """"394,328 - 365,817": the figure parser reads "- 365,817" as a negative figure; right after
    another figure, with only blanks between, the minus is an operator."""
    return not _gap(text, a, b).strip() and b.text.lstrip("($ ").startswith(_MINUS_SIGNS)


def computations(text: str, figures: Sequence[Figure]) -> list[tuple[list[Figure], Figure | None]]:
    """The computations an answer shows, as (operands, result): figures joined by operators
    ("$3,676.2 - $460.8", "170,782 / 394,328 x 100", "... divided by ..."), and the figure after
    "=" / "equals" / "gives" as their result (None when the working states none)."""
    out: list[tuple[list[Figure], Figure | None]] = []
    text = _plain(text)
    figs = sorted(figures, key=lambda f: f.start)
    i = 0
    while i < len(figs):
        chain = [figs[i]]
        j = i
        while j + 1 < len(figs):
            gap = _gap(text, figs[j], figs[j + 1])
            if _OP_GAP_RE.match(gap) or _subtraction_swallowed(text, figs[j], figs[j + 1]):
                chain.append(figs[j + 1])
                j += 1
                continue
            break
        if len(chain) < 2:     # "A = B" alone restates a figure; it computes nothing
            i += 1
            continue
        result = None
        if j + 1 < len(figs) and _RESULT_GAP_RE.match(_gap(text, figs[j], figs[j + 1])):
            result = figs[j + 1]
        out.append((chain, result))
        i = j + 2 if result is not None else j + 1
    return out


# ---------------------------------------------------------------------------------------------
# Shown computations checked against their arithmetic (grounding uses these: a wrong result grounds
# nothing)

_OPS = {"-": lambda x, y: x - y, "\u2212": lambda x, y: x - y, "+": lambda x, y: x + y,
        "*": lambda x, y: x * y, "x": lambda x, y: x * y, "\u00d7": lambda x, y: x * y,
        "/": lambda x, y: x / y if y else math.nan, "\u00f7": lambda x, y: x / y if y else math.nan}
_EXPR_RE = re.compile(r"\(?\s*(?P<a>[\$\d.,]+)\s*(?P<op>[-\u2212+*x\u00d7/\u00f7])\s*(?P<b>[\$\d.,]+)\s*\)?"
                      r"(?:\s*(?:/\s*(?P<c>[\$\d.,]+)))?(?P<pct>\s*(?:\*|x)\s*100)?\s*=\s*(?P<r>[-\u2212]?[\$\d.,]+)")
# Rounding a shown result may carry beyond its last digit: at most 0.5% of the value.
_MAX_ROUNDING = 0.005


def _num(text: str) -> float | None:
    """An operand of a shown computation ("$1,234.5", "-12"; a sentence's full stop dropped)."""
    return parse_cell(text.rstrip("."), dash_value=None)


def checked_computations(answer: str) -> list[tuple[list[float], float, tuple[int, int] | None]]:
    """Computations written in the answer whose arithmetic holds: "394,328 - 365,817 = 28,511" ->
    ([394328, 365817], 28511, None); a wrong result is not a computation. The third item is the span
    of a "x 100" (a constant, not a figure to ground)."""
    out = []
    for m in _EXPR_RE.finditer(answer or ""):
        a, b, r = _num(m.group("a")), _num(m.group("b")), _num(m.group("r").replace("\u2212", "-"))
        if a is None or b is None or r is None:
            continue
        value = _OPS[m.group("op")](a, b)
        operands = [a, b]
        if m.group("c"):
            c = _num(m.group("c"))
            if c is None or not c:
                continue
            value, operands = value / c, [a, b, c]
        if m.group("pct"):
            value *= 100
        decimals = len(m.group("r").split(".")[1]) if "." in m.group("r") else 0
        if abs(value - r) <= 0.5 * 10 ** -decimals + _MAX_ROUNDING * abs(r) + 1e-9:
            out.append((operands, r, m.span("pct") if m.group("pct") else None))
    return out


# ---------------------------------------------------------------------------------------------
# Periods, comparison markers, levels and changes

_YEAR = r"(?:(?:FY\s?'?|fiscal\s+(?:year\s+)?|calendar\s+(?:year\s+)?|year\s+)?(?:19|20)\d\d|FY\s?'?\d\d(?!\d))"
# a year right after a figure attributes it: "$394.3 billion in 2022", "(FY2021)", "for fiscal 2021"
_YEAR_AFTER_RE = re.compile(rf"^[\s,*)\]]*(?:\(|\[)?\s*(?:(?:in|for|during|as\s+of|at|at\s+the\s+end\s+of|by|"
                            rf"through|of|ending|ended)\s+)?(?:the\s+)?(?:(?:fiscal\s+)?(?:year|period|quarter)\s+end(?:ed|ing)\s+"
                            rf"(?:[A-Za-z]+\.?\s+\d{{1,2}},?\s+)?)?(?P<y>{_YEAR})\b", re.IGNORECASE)
# markers that introduce a figure as the other side of a comparison
# markers that introduce a figure as the other side of a comparison. "from", "over", "than", "against"
# must be followed by the figure itself (a year or "the prior year's" between): "revenue from iPhone was
# $205.5 billion" is a label, "rose from $365.8 billion" a comparison. "compared with", "versus", "vs",
# "relative to", "prior", "previous", "a year earlier" may name it first: "versus last year's revenue of $X".
_APPROX = r"(?:about\s+|approximately\s+|roughly\s+|nearly\s+|~)?"
_OF_YEAR = rf"(?:the\s+)?(?:(?:{_YEAR})(?:'s|\u2019s)?\s*)?(?:(?:prior|previous|preceding|last)\s+(?:fiscal\s+)?year(?:'s|\u2019s)?\s*)?"
_CONTEXT_BEFORE_RE = re.compile(
    rf"(?:\b(?:from|over|than|against|up\s+from|down\s+from|rising\s+from|falling\s+from)\s*{_OF_YEAR}"
    rf"(?:(?:level|figure|total|amount|value)\s+(?:of\s+)?)?{_APPROX}[\s*(:]*$"
    rf"|\b(?:compar(?:ed|es|ing)\s+(?:with|to)|comparison\s+(?:with|to)|versus|vs\.?|relative\s+to|"
    rf"previous(?:ly)?|prior(?!\s+to\b)|earlier|last\s+year|a\s+year\s+(?:earlier|ago|before)|year-ago)"
    rf"\s*{_OF_YEAR}(?:[a-z&\-]+[\s:]+){{0,3}}?(?:of\s+)?(?:was\s+|were\s+)?{_APPROX}[\s*(:]*$)",
    re.IGNORECASE)
_CONTEXT_AFTER_RE = re.compile(r"^[\s,*)]*(?:in|for|during)?\s*(?:the\s+)?(?:prior|previous|preceding|last)\s+"
                               r"(?:fiscal\s+)?year\b|^[\s,*)]*(?:a\s+year\s+(?:earlier|ago|before)|year-ago)",
                               re.IGNORECASE)
_TO_BEFORE_RE = re.compile(r"\bto\s*(?:about\s+|approximately\s+|roughly\s+|~)?[\s*(]*$", re.IGNORECASE)
_CHANGE_WORDS = (r"increas\w*|decreas\w*|grew|grow(?:n|th|s)?|rose|risen|rise|fell|fallen|fall|declin\w*|dropp?\w*|"
                 r"jump\w*|climb\w*|gained|up|down|higher|lower|more|less|chang\w*|improv\w*|expan\w*|"
                 r"reduc\w*|shr[ai]nk\w*|contract\w*|swing|variance|difference|delta")
_CHANGE_BEFORE_RE = re.compile(rf"\b(?:{_CHANGE_WORDS})\s+(?:(?:by|of|was|is|were|amounted\s+to)\s+)?"
                               r"(?:about\s+|approximately\s+|roughly\s+|nearly\s+|almost\s+|some\s+|~)?"
                               r"[\s*(]*$", re.IGNORECASE)
# "$28.5 billion higher", "a $28.5 billion increase"; not "$394.3 billion, up from ..." (a level)
_CHANGE_AFTER_RE = re.compile(r"^[\s*)]*(?:year-over-year\s+|yoy\s+)?"
                              r"(?:increase|decrease|higher|lower|more|less|rise|decline|drop|gain|growth|"
                              r"improvement|reduction|change|up|down)\b(?!\s+(?:from|to)\b)", re.IGNORECASE)
# a level, whatever a change is: "rose to $394.3 billion", "from $365.8 billion", "reached ..."
_LEVEL_BEFORE_RE = re.compile(rf"(?:\b(?:{_CHANGE_WORDS}|rising|falling)\s+to|\bfrom|\breach\w*|\bstood\s+at|"
                              r"\btotall?(?:ed|ing)|\bbalance\s+of|^[^A-Za-z]*(?:(?:in\s+)?(?:fiscal\s+|FY\s?)?\d{4}[\s,]+)?to)\s*"
                              r"(?:about\s+|approximately\s+|roughly\s+|~)?[\s*(]*$", re.IGNORECASE)
_WORKING_SECTION_RE = re.compile(r"(?:^|\n|[.;]\s+|\(|\[)\W*(?:formula|calculation|computation|working|workings|"
                                 r"inputs?|sources?|derivation|breakdown|how\s+it\s+was\s+computed)\W*\s*[:\-\u2014]",
                                 re.IGNORECASE)
# a figure joined to the previous one as its restatement: "8% or $28.5 billion", "$394.3 billion (i.e. ..."
_RESTATED_RE = re.compile(r"^[\s,(]*(?:or|i\.e\.,?|that\s+is,?)[\s(]*$", re.IGNORECASE)
# a clause ends at a full stop (not a decimal point, nor the dot of "vs.", "approx.", "Inc.", "U.S.", "i.e."),
# a semicolon, a line break or a table bar
_CLAUSE_END_RE = re.compile(r"(?<!\d)(?<!vs)(?<!approx)(?<!Inc)(?<!Corp)(?<!\b\w)[.;!?](?!\d)|\n|\|",
                            re.IGNORECASE)
# a verb or preposition that makes a clause a statement rather than a list entry
_STATEMENT_RE = re.compile(r"\b(?:was|were|is|are|had|has|have|totall?ed|amounted|reached|stood|came|reported|"
                           r"recorded|generated|rose|fell|increased|decreased|grew|declined|dropped|climbed|"
                           r"compar\w*|versus|vs\.?|from|up|down|equals?|gives|yields)\b", re.IGNORECASE)


def _clause_start(text: str, pos: int) -> int:
    last = 0
    for m in _CLAUSE_END_RE.finditer(text, 0, pos):
        last = m.end()
    return last


def _clause_end(text: str, pos: int) -> int:
    m = _CLAUSE_END_RE.search(text, pos)
    return m.start() if m else len(text)


def _words_before(text: str, f: Figure, prev_end: int) -> str:
    start = max(_clause_start(text, f.start), prev_end)
    return text[start:f.start]


def _period_of(text: str, f: Figure, prev_end: int, next_start: int) -> int | None:
    """The year the answer attributes ``f`` to: right after it ("$394.3 billion in 2022", "(FY2021)"),
    else the last year between the previous figure and it in the same clause ("FY2021: $365,817",
    "In fiscal 2021 net sales were ..."). A year elsewhere in the sentence attributes nothing: in
    "$394.3 billion, an increase of 8% over 2021" 2021 is the comparison's."""
    after = text[f.end:min(next_start, _clause_end(text, f.end))]
    m = _YEAR_AFTER_RE.match(after)
    if m:
        return _year_of(m.group("y"))
    before = _words_before(text, f, prev_end)
    found = [_year_of(y.group(0)) for y in re.finditer(
        r"(?<![\d,.$])(?:FY\s?'?)?(?:19|20)\d\d(?!\d|,\d)|\bFY\s?'?\d\d(?!\d)", before, re.IGNORECASE)]
    return found[-1] if found else None


def _year_of(text: str) -> int | None:
    """"FY2022", "fiscal 2022" -> 2022; "FY22", "FY'22" -> 2022."""
    years = years_in(text)
    if years:
        return max(years)
    m = re.search(r"(\d\d)\s*$", text)
    return 2000 + int(m.group(1)) if m else None


def _kind_of(text: str, f: Figure, before: str) -> str | None:
    after = text[f.end:f.end + 40]
    if _CHANGE_BEFORE_RE.search(before) or _CHANGE_AFTER_RE.match(after) or f.points:
        return CHANGE
    if f.text.lstrip("($ ").startswith("+"):
        return CHANGE
    if _LEVEL_BEFORE_RE.search(before):
        return LEVEL
    return None


def _label(before: str) -> str:
    words = re.findall(r"[A-Za-z&][A-Za-z&'\-]*", before)
    return " ".join(words[-6:])


def read_claims(text: str, figures: Sequence[Figure], *, asked_years: set[int] | frozenset[int] = frozenset(),
                asked_kind: str | None = None, working_sections: bool = True) -> ClaimReading:
    """The role of every figure of ``text`` (``figures``: parsed from ``text`` by core/numbers.py).

    ``asked_years``: the periods the question asks about (a figure attributed to another is context);
    ``asked_kind``: ``"change"`` when a change is asked (then a figure worded as a level is context),
    ``"level"`` when a level is (then a figure worded as a change is), None when either may answer.
    Figures after a working heading ("Formula:", "Calculation:", "Sources:") are its inputs when the
    answer states a competing figure before it ("40.03 - inventory turnover. Formula: ... [cost of
    revenue = 212,981 million; ...]")."""
    text = _plain(text or "")
    figs = sorted(figures, key=lambda f: f.start)
    roles: dict[int, tuple[str, str]] = {}
    # working is read over every number, small constants too ("/ 2", "x 100"), then mapped by position
    # (matched by where they end: a sign the blanked emphasis exposes may move a start)
    by_end = {f.end: f for f in figs}
    every = {f.end: f for f in parse_figures(text)} | by_end
    shown = computations(text, list(every.values()))
    # (figures only: the constants of "/ 2" and "x 100" name no input)
    operand_numbers = {round(o.magnitude, 9) for operands, _ in shown for o in operands if o.end in by_end}
    for n, (operands, result) in enumerate(shown):
        for o in operands:
            if o.end in by_end:
                roles[id(by_end[o.end])] = (OPERAND, "an operand of the working shown")
        if result is None or result.end not in by_end:
            continue
        later = {round(o.magnitude, 9) for ops, _ in shown[n + 1:] for o in ops}
        if round(result.magnitude, 9) in later:
            # "(42,117 + 39,440) / 2 = 40,778.5; 394,328 / 40,778.5 = 9.67": a step, not the answer
            roles[id(by_end[result.end])] = (OPERAND, "an intermediate result, an operand of later working")
        else:
            roles.setdefault(id(by_end[result.end]), (ANSWER, "the result of the working shown"))
    # the inputs named in words before or after working that ends in a result ("operating cash flow was
    # $122,151 million and capex $10,708 million. 122,151 - 10,708 = 111,443"): the same numbers as its
    # operands. Working without a result leaves them alone ("The average is 0.13%: (0.11% + 0.13% + 0.16%) / 3")
    has_result = any(role == ANSWER for role, _ in roles.values())
    for f in figs:
        if has_result and id(f) not in roles and round(f.magnitude, 9) in operand_numbers:
            roles[id(f)] = (OPERAND, "names an operand of the working shown")
    # an answer marked as such ("**Answer:** $111,443 million" under a table of both years): the one
    # figure of the marked line is the answer, the others are context (a marked list marks nothing)
    marked_span = _marked_answer(text, [f for f in figs if roles.get(id(f), (ANSWER,))[0] != OPERAND])
    # figures of a working section ("Formula: ...", "Calculation: ...", "Sources: ...") are its inputs
    section = _WORKING_SECTION_RE.search(text) if working_sections else None
    section_start = section.start() if section else len(text)
    claims: list[Claim] = []
    marked = 0
    for n, f in enumerate(figs):
        prev_end = figs[n - 1].end if n else 0
        next_start = figs[n + 1].start if n + 1 < len(figs) else len(text)
        before = _words_before(text, f, prev_end)
        period = _period_of(text, f, prev_end, next_start)
        kind = _kind_of(text, f, before)
        label = _label(before)
        if id(f) in roles:
            role, why = roles[id(f)]
            if role == ANSWER and asked_years and period is not None and period not in asked_years:
                # "122,151 - 10,708 = 111,443 in fiscal 2021": the result, for another year
                role, why = CONTEXT, f"the result of the working, attributed to {period}, asked {sorted(asked_years)}"
        elif f.start >= section_start:
            role, why = OPERAND, f"an input in the working section ({section.group(0).strip()!r})"
        elif claims and _RESTATED_RE.match(before) and claims[-1].role == CONTEXT:
            # "an increase of 8% or $28.5 billion over ...": the same change restated in another unit
            role, why, kind = CONTEXT, f"restates {claims[-1].figure.text} ({claims[-1].why})", claims[-1].kind
        elif _CONTEXT_BEFORE_RE.search(before) and not _TO_BEFORE_RE.search(before):
            role, why = CONTEXT, f"introduced as the other side of a comparison ({before.strip()[-30:]!r})"
            marked += 1
        elif _CONTEXT_AFTER_RE.match(text[f.end:f.end + 40]):
            role, why = CONTEXT, "attributed to the prior year"
            marked += 1
        elif asked_years and period is not None and period not in asked_years:
            role, why = CONTEXT, f"attributed to {period}, asked {sorted(asked_years)}"
        elif asked_kind == LEVEL and kind == CHANGE:
            role, why = CONTEXT, "a change, a level is asked"
        elif asked_kind == CHANGE and kind == LEVEL:
            role, why = CONTEXT, "a level, a change is asked"
        else:
            role, why = ANSWER, "competes for the asked slot"
        if marked_span and role == ANSWER and not (marked_span[0] < f.end and f.start < marked_span[1]):
            role, why = CONTEXT, "outside the line marked as the answer"
            marked += 1
        claims.append(Claim(f, role, period, kind, label, why))
    if section and not any(c.role == ANSWER and c.figure.start < section_start for c in claims):
        # the working section holds the only answer: its figures are read as any others
        return read_claims(text, figures, asked_years=asked_years, asked_kind=asked_kind, working_sections=False)
    bare = not _STATEMENT_RE.search(_without_figures(text, figs))
    with_parts = _parts_of_a_stated_total(claims, bare=bare)
    marked += with_parts is not claims
    claims = with_parts
    free = [c for c in claims if c.role != OPERAND]
    is_list = len(free) >= 2 and not marked and not _STATEMENT_RE.search(_without_figures(text, figs))
    return ClaimReading(claims, is_list)


# "Answer: ...", "**Final answer:** ...", "The answer is ...", a heading "## Answer" over its line
_ANSWER_MARK_RE = re.compile(r"(?:^|(?<=[\n|.;]))[\s#>*_-]*(?:the\s+)?(?:final\s+|short\s+)?answer[\s*_]*(?:[:\u2014=]|is\b|\n)",
                             re.IGNORECASE)


def _marked_answer(text: str, figs: Sequence[Figure]) -> tuple[int, int] | None:
    """The span of the line an answer marks as its answer, when that line states exactly one figure."""
    m = _ANSWER_MARK_RE.search(text)
    if not m:
        return None
    start = m.end()
    while start < len(text) and text[start] in " \t\n*_":
        start += 1
    end = min([i for i in (text.find("\n", start), text.find(". ", start)) if i >= 0], default=len(text))
    inside = [f for f in figs if start < f.end and f.start < end]   # a figure's span may open on a blank
    return (start, end) if len(inside) == 1 else None


_TOTAL_LABEL_RE = re.compile(r"\b(?:total|sum|combined|overall|altogether|aggregate)\b", re.IGNORECASE)


def _parts_of_a_stated_total(claims: list[Claim], *, bare: bool = False) -> list[Claim]:
    """Figures that add up to (or average to) another figure of the answer are its parts: "Products $316,199 million;
    Services $78,129 million; Total $394,328 million", "free cash flow $111.4 billion ($122.2 billion
    of operating cash flow less $10.7 billion of capex)". Two to four competing figures of one kind that
    sum, with signs, to a fifth (within their rounding) become context; the total still competes.
    The answer's own words decide, not the reference: a list of unrelated figures stays a list, and in
    a verbless list ("316,199; 78,129; 394,328") the total must be labelled one ("Total: ...") or lead
    the answer."""
    answers = [c for c in claims if c.role == ANSWER]
    if not 3 <= len(answers) <= 5:
        return claims
    for total in answers:
        if bare and total is not answers[0] and not _TOTAL_LABEL_RE.search(total.label):
            continue
        parts = [c for c in answers if c is not total and c.figure.kind == total.figure.kind]
        if len(parts) != len(answers) - 1 or total.figure.kind in ("percent", "points"):
            continue
        slack = total.figure.half_ulp + sum(p.figure.half_ulp for p in parts) + 1e-9 * abs(total.figure.value)
        mean = sum(p.figure.value for p in parts) / len(parts)
        if abs(mean - total.figure.value) <= total.figure.half_ulp + sum(p.figure.half_ulp for p in parts) / len(parts):
            # "average net PP&E $40,778.5 million (FY2022 $42,117 million, FY2021 $39,440 million)"
            why = f"averaged into the stated {total.figure.text}"
            ids = {id(p) for p in parts}
            return [Claim(c.figure, CONTEXT, c.period, c.kind, c.label, why) if id(c) in ids else c for c in claims]
        for signs in _signs(len(parts)):
            if abs(sum(s * p.figure.value for s, p in zip(signs, parts, strict=True)) - total.figure.value) <= slack:
                why = f"a part of the stated total {total.figure.text}"
                ids = {id(p) for p in parts}
                return [Claim(c.figure, CONTEXT, c.period, c.kind, c.label, why) if id(c) in ids else c
                        for c in claims]
    return claims


def _signs(n: int) -> list[tuple[int, ...]]:
    """Sign patterns of n parts, the first one positive: a total is a sum less some parts."""
    out: list[tuple[int, ...]] = [(1,)]
    for _ in range(n - 1):
        out = [(*s, x) for s in out for x in (1, -1)]
    return out


def _without_figures(text: str, figs: Sequence[Figure]) -> str:
    out, last = [], 0
    for f in figs:
        out.append(text[last:f.start])
        last = f.end
    out.append(text[last:])
    return " ".join(out)
