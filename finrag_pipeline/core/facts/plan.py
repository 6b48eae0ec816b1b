"""Read an analyst's question into a plan: which quantity, which fiscal years, which arithmetic.

"What was Microsoft's operating margin in fiscal 2022?" -> quantity ``operating_income / revenue``
(the lexicon's formula for operating_margin), years [2022], operation ``value``, unit percent.
"What is Apple's fixed asset turnover in FY2022, defined as revenue / average PP&E?" -> the
definition given in the question wins: ``revenue / avg(ppe)``.
"By what percentage did Amazon's operating income change from 2021 to 2022?" -> ``operating_income``,
years [2022, 2021], operation ``pct_change``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from finrag_pipeline.core.facts.formula import Formula, FormulaError, parse_formula
from finrag_pipeline.core.facts.labels import normalize_label
from finrag_pipeline.core.numbers import SCALE_WORDS
from finrag_pipeline.core.retrieval.lexicon import Concept, Lexicon, normalize_text

Operation = str  # value | change | pct_change | sum_years | average_years | max_year | min_year | list

_DEFINITION_RE = re.compile(
    r"\b(?:defined|calculated|computed|measured|derived)\s+as\s+(?:the\s+)?(?P<def>[^?;]+?)\s*(?:[?;)]|\.(?:\s|$)|$)",
    re.IGNORECASE)
_PCT_CHANGE_RE = re.compile(
    r"(percent(?:age)?|%)\s*(?:change|increase|decrease|growth|decline|drop|rise)|growth rate|\bby what percent"
    r"|\bhow much .*\b(?:grow|grew|increase|decrease|decline|change|rise|fall|fell)\w*\b.*\b(?:percent|%)"
    r"|\b(?:year[- ]over[- ]year|yoy)\b|\bgrowth\b", re.IGNORECASE)
_CHANGE_RE = re.compile(r"\b(change[ds]?|increase[ds]?|decrease[ds]?|difference|grow|grew|declined?|rose|rise"
                        r"|fell|drop(?:ped)?)\b", re.IGNORECASE)
_EXTREME_RE = re.compile(r"\bwhich\b.{0,40}\b(?:year|period)\b.*?\b(highest|lowest|largest|smallest|most|least|"
                         r"strongest|weakest|maximum|minimum|peak)\b", re.IGNORECASE)
_COMPARE_RE = re.compile(r"\b(higher|lower|larger|smaller|greater|bigger|more|less)\b.*\bor\b", re.IGNORECASE)
_SUM_RE = re.compile(r"\b(sum|combined|together|in total|total of|cumulative)\b", re.IGNORECASE)
_AVERAGE_RE = re.compile(r"\baverage\b|\bavg\b|\bmean\b", re.IGNORECASE)
_PER_SHARE_RE = re.compile(r"\bper (?:diluted )?share\b", re.IGNORECASE)
_PERCENT_WORDS = re.compile(r"\b(percent(?:age)?|margin|rate)\b|%|\bas a share of\b", re.IGNORECASE)
_RATIO_OF_RE = re.compile(r"\bratio of (?P<a>.+?) to (?P<b>.+?)(?:\s+(?:in|for|during|at|as of)\b|[?,.]|$)",
                          re.IGNORECASE)
_AS_PCT_OF_RE = re.compile(r"(?P<a>[\w&' ,-]+?) as a (?:percent(?:age)?|share|proportion|fraction) of "
                           r"(?:its |the )?(?P<b>[\w&' ,-]+?)(?:\s+(?:in|for|during|at)\b|[?,.]|$)", re.IGNORECASE)
_DECIMALS_RE = re.compile(r"\b(?:to|with)\s+(?P<n>one|two|three|four|zero|no|\d)\s+decimal(?:\s+places?|s)?\b",
                          re.IGNORECASE)
_NEAREST_RE = re.compile(r"\bnearest\s+(?:whole\s+)?(?P<what>tenth|hundredth|thousandth|percent(?:age point)?|"
                         r"integer|whole number|dollar|day|million|billion|thousand|cent)\b", re.IGNORECASE)
_IN_SCALE_RE = re.compile(r"\b(?:in|USD|\$)\s*(?P<scale>thousands|millions|billions)\b", re.IGNORECASE)
# words before a line item that do not narrow it to a segment ("average total assets", "annual revenue")
_MODIFIERS = frozenset(["a", "an", "the", "its", "their", "total", "net", "consolidated", "reported", "annual", "yearly", "fiscal", "year", "full", "gaap", "non-gaap", "adjusted", "average", "avg", "mean", "percentage", "percent", "change", "growth", "increase", "decrease", "combined", "cumulative", "company", "companys", "group", "groups", "diluted", "basic", "overall", "sum", "difference", "ratio", "much", "many", "what", "was", "were", "is", "are", "how", "did", "does", "do", "by", "of", "for", "in", "on", "to", "from", "and", "at", "as", "highest", "lowest", "largest", "smallest", "biggest", "strongest", "weakest", "peak", "higher", "lower", "report", "reports", "reported", "record", "level", "amount", "value", "expense", "expenses", "costs", "spending", "figure", "balance", "balances", "position", "line", "item", "items", "account", "number", "outstanding"])
_SEGMENT_WORD_RE = re.compile(r"\b([a-z0-9&']+)\s+(?:segment|business|division|reportable segment)\b", re.I)
_NUM_WORDS = {"zero": 0, "no": 0, "one": 1, "two": 2, "three": 3, "four": 4}
_NEAREST = {"tenth": 1, "hundredth": 2, "thousandth": 3, "cent": 2}

_TERM_SPLIT_RE = re.compile(r"\s*(\bdivided by\b|\bover\b|\bminus\b|\bless\b|\bplus\b|\btimes\b|\bmultiplied by\b"
                            r"|[/*+()]|\s-\s)\s*", re.IGNORECASE)
_OPS = {"divided by": "/", "over": "/", "minus": "-", "less": "-", "plus": "+", "times": "*",
        "multiplied by": "*", "/": "/", "*": "*", "+": "+", "-": "-", "(": "(", ")": ")"}


class PlanError(ValueError):
    """The question names no quantity this answerer can compute (says which part it could not read)."""


@dataclass
class Plan:
    quantity: str                       # what is asked, in words ("operating margin")
    formula: str                        # over lexicon keys: "operating_income / revenue"
    years: list[int]                    # fiscal years, latest first
    operation: Operation = "value"
    unit: str = "USD"                   # result unit: USD | percent | ratio | days | USD per share | shares
    decimals: int | None = None         # rounding asked; None = the unit's default
    display_scale: int | None = None    # "in billions" -> 10**9
    definition_given: bool = False      # the formula came from the question itself
    concept_key: str | None = None
    notes: list[str] = field(default_factory=list)
    qualifier: str | None = None        # words narrowing the line item ("iphone" net sales, "aws" operating income)
    also: list[str] = field(default_factory=list)    # operation "list": more formulas answered beside the first
    labels: list[str] = field(default_factory=list)  # their names as asked

    @property
    def parsed(self) -> Formula:
        return parse_formula(self.formula)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _decimals_asked(question: str) -> int | None:
    m = _DECIMALS_RE.search(question)
    if m:
        n = m.group("n").lower()
        return _NUM_WORDS[n] if n in _NUM_WORDS else int(n)
    m = _NEAREST_RE.search(question)
    if m:
        return _NEAREST.get(m.group("what").lower(), 0)
    return None


def resolve_term(term: str, lexicon: Lexicon, *, allow_formulas: bool = False) -> Concept | None:
    """The lexicon concept a phrase names: an exact alias/line item of a base line item first
    ("gross margin" in a definition is the statement line), then any alias inside the phrase."""
    t = normalize_label(re.sub(r"^(?:the|its|total|net)\s+(?=\w)", "", term.strip().lower())) or normalize_label(term)
    full = normalize_label(term)
    for c in lexicon.concepts.values():
        if c.formula and not allow_formulas:
            continue
        names = {normalize_label(x) for x in [*c.aliases, *c.line_items]}
        if full in names or t in names:
            return c
    for m in lexicon.match(term):
        if allow_formulas or not m.concept.formula:
            return m.concept
    return None


def definition_formula(definition: str, lexicon: Lexicon) -> str:
    """'revenue / average PP&E' -> 'revenue / avg(ppe)'; 'cost of sales divided by average inventory
    times 365' -> 'cost_of_revenue / avg(inventory) * 365'. Raises PlanError naming an unread term."""
    parts = [p for p in _TERM_SPLIT_RE.split(definition.strip().rstrip(".")) if p and p.strip()]
    out: list[str] = []
    for part in parts:
        p = part.strip()
        if p.lower() in _OPS:
            out.append(_OPS[p.lower()])
            continue
        if re.fullmatch(r"\d+(?:\.\d+)?", p.replace(",", "")):
            out.append(p.replace(",", ""))
            continue
        avg = re.match(r"^(?:the\s+)?(?:average|avg\.?|mean)\s+(?:of\s+)?(?:the\s+)?(.+)$", p, re.IGNORECASE)
        concept = resolve_term(avg.group(1) if avg else p, lexicon)
        if concept is None:
            raise PlanError(f"cannot read {p!r} in the definition {definition!r} as a statement line item")
        out.append(f"avg({concept.key})" if avg else concept.key)
    text = " ".join(out)
    try:
        parse_formula(text)
    except FormulaError as exc:
        raise PlanError(f"cannot read the definition {definition!r}: {exc}") from exc
    return text


def _unit_of_formula(formula: str, question: str) -> str:
    if re.match(r"^\s*365\b|\*\s*365\b", formula):
        return "days"
    if "/" in formula:
        return "percent" if _PERCENT_WORDS.search(question) else "ratio"
    return "USD"


def make_plan(question: str, years: list[int], lexicon: Lexicon, line_item: Concept | None = None) -> Plan:
    """The plan for a question whose fiscal years are already known (latest first, may be empty).

    ``line_item``: a statement line the caller found printed in the filing under the question's own
    words (a row label outside the lexicon, "deferred revenue"); it is the quantity then."""
    notes: list[str] = []
    decimals = _decimals_asked(question)
    scale_m = _IN_SCALE_RE.search(question)
    display_scale = int(SCALE_WORDS[scale_m.group("scale").lower()]) if scale_m else None
    definition = _DEFINITION_RE.search(question)
    rest = question[:definition.start()] if definition else question
    years = list(years)

    if definition and line_item is None:
        formula = definition_formula(definition.group("def"), lexicon)
        named = [m for m in lexicon.match(rest)]
        quantity = named[0].alias if named else definition.group("def")
        unit = _unit_of_formula(formula, rest)
        plan = Plan(quantity, formula, years[:1] or [], "value", unit, decimals, display_scale, True,
                    named[0].concept.key if named else None, notes)
        return plan

    ratio = (_RATIO_OF_RE.search(rest) or _AS_PCT_OF_RE.search(rest)) if line_item is None else None
    if ratio:
        a, b = resolve_term(ratio.group("a"), lexicon), resolve_term(ratio.group("b"), lexicon)
        if a and b:
            pct = bool(re.search(r"percent|%|share|proportion", ratio.group(0), re.IGNORECASE))
            return Plan(f"{a.key} to {b.key}", f"{a.key} / {b.key}", years[:1], "value",
                        "percent" if pct else "ratio", decimals, display_scale, False, None, notes)

    if line_item is not None:
        matches = []
        concepts, main, alias, qualifier = [line_item], line_item, line_item.line_items[0], None
    else:
        matches = lexicon.match(rest)
        if not matches:
            raise PlanError("no line item or financial metric named in the question")
        concepts = [m.concept for m in matches]
        main = concepts[0]
        alias = matches[0].alias
        qualifier = " ".join(filter(None, [_qualifier(_raw_prefix(rest, matches[0].start), rest), trailing_words(
            normalize_label(rest[len(_raw_prefix(rest, matches[0].end)):]))])) or None
    if main.formula:
        formula, unit = main.formula, main.unit or _unit_of_formula(main.formula, rest)
    else:
        formula, unit = main.key, main.unit or "USD"
        others = [c for c in concepts[1:] if not c.formula]
        if others and _SUM_RE.search(rest) and " and " in rest.lower():
            formula = " + ".join([main.key] + [c.key for c in others])
            alias = " + ".join([alias] + [m.alias for m in matches[1:] if not m.concept.formula])
        elif others and re.search(r"\bdifference between\b", rest, re.IGNORECASE):
            formula = f"{main.key} - {others[0].key}"
        elif len(matches) >= 2 and not matches[1].concept.formula and re.fullmatch(
                r"\s*(?:and|,)\s+(?:its\s+|the\s+|their\s+)?",
                normalize_text(rest)[matches[0].end:matches[1].start]):
            # "What were Apple's cost of sales and its research and development in 2022?": both figures
            also = [f"abs({m.concept.key})" if m.concept.outflow else m.concept.key for m in matches[1:2]]
            plan = Plan(alias, f"abs({main.key})" if main.outflow else main.key, years[:1], "list", unit,
                        decimals, display_scale, False, main.key, notes, qualifier)
            plan.also = also
            plan.labels = [alias, matches[1].alias]
            return plan
        if formula == main.key and main.outflow:
            formula = f"abs({main.key})"  # "capital expenditure was $23,886 million", not "-$23,886 million"
        if _PER_SHARE_RE.search(rest) and unit == "USD":
            formula, unit = f"({formula}) / diluted_shares", "USD per share"
        if _AVERAGE_RE.search(rest) and main.statement == "balance_sheet" and len(years) <= 1:
            formula = f"avg({formula})"
            notes.append("average of the fiscal year's end and the prior year's end")

    operation: Operation = "value"
    extreme = _EXTREME_RE.search(rest)
    if extreme and len(years) >= 2:
        low = extreme.group(1).lower() in ("lowest", "smallest", "least", "weakest", "minimum")
        years = list(range(max(years), min(years) - 1, -1))  # "from 2020 to 2022" covers 2021 too
        return Plan(alias, formula, years, "min_year" if low else "max_year", unit, decimals, display_scale,
                    False, main.key, notes, qualifier)
    compare = _COMPARE_RE.search(rest)
    if compare and len(years) == 2:
        low = compare.group(1).lower() in ("lower", "smaller", "less")
        return Plan(alias, formula, sorted(years, reverse=True), "min_year" if low else "max_year", unit, decimals,
                    display_scale, False, main.key, notes, qualifier)
    if _PCT_CHANGE_RE.search(rest) and not main.formula or (
            _PCT_CHANGE_RE.search(rest) and re.search(r"percent(?:age)?\s+change|%\s*change|growth rate", rest, re.I)):
        operation = "pct_change"
    elif _CHANGE_RE.search(rest) and (len(years) >= 2 or re.search(r"\bfrom\b|\bprior\b|\bprevious\b", rest, re.I)):
        operation = "change"
    elif _SUM_RE.search(rest) and len(years) >= 2 and main.key in formula and "+" not in formula:
        operation = "sum_years"
    elif _AVERAGE_RE.search(rest) and len(years) >= 2 and "avg(" not in formula:
        operation = "average_years"
    if operation in ("change", "pct_change"):
        if len(years) == 1:
            years = [years[0], years[0] - 1]
            notes.append(f"compared with the prior fiscal year FY{years[1]}")
        years = sorted(set(years), reverse=True)[:2] if len(set(years)) >= 2 else years
    elif operation == "value":
        years = years[:1]
    if operation == "pct_change":
        result_unit = "percent"
    elif operation == "change" and unit == "percent":
        result_unit = "percentage points"
    else:
        result_unit = unit
    return Plan(alias, formula, years, operation, result_unit, decimals, display_scale, False, main.key, notes,
                qualifier)


def _qualifier(before: str, question: str) -> str | None:
    """Words right before the line item that narrow it ("apples iphone net sales" -> "iphone"), or
    the name before "segment"; company names are removed by the caller, which knows them."""
    m = _SEGMENT_WORD_RE.search(question)
    if m:
        named = _tail_words(question[:m.end(1)])
        if named:
            return named
    return _tail_words(before)


_BOUNDARY = frozenset(["in", "for", "during", "at", "as", "from", "between", "compared", "vs", "versus", "over", "and", "of", "on", "by", "when", "while", "than", "with", "within", "since", "through", "ended", "ending", "or"])


def trailing_words(after: str) -> str | None:
    """Words right after a line item that narrow it ("dividends paid to preferred shareholders" ->
    "preferred shareholders"), up to a preposition that starts the period or the company. "to" ends
    it only before a year ("from 2021 to 2022")."""
    tokens = after.split()
    out: list[str] = []
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok in _BOUNDARY or re.fullmatch(r"(?:19|20)\d\d|fy\d+", tok):
            break
        if tok == "to" and (not nxt or re.fullmatch(r"(?:19|20)\d\d|fy\d+|fiscal|the|its", nxt)):
            break
        out.append(tok)
    words = [w for w in out if w not in _MODIFIERS and w != "to"]
    return " ".join(words[:4]) or None


def _raw_prefix(text: str, norm_end: int) -> str:
    """The part of ``text`` before offset ``norm_end`` of its normalize_text form (which drops quotes)."""
    kept = 0
    for i, ch in enumerate(text):
        if kept >= norm_end:
            return text[:i]
        if ch not in "'\u2019":
            kept += 1
    return text


def _tail_words(text: str) -> str | None:
    """The last words of a text back to the first modifier: "what was apples iphone" -> "apples iphone"."""
    tail: list[str] = []
    for tok in reversed(normalize_label(re.sub(r"['\u2019]s\b", "", text)).split()):
        if tok in _MODIFIERS or len(tail) >= 4:
            break
        tail.insert(0, tok)
    return " ".join(tail) or None
