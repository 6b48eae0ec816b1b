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
from decimal import Decimal
from typing import Any

from finrag_pipeline.core.analyst.definitions import (
    DefinitionError,
    ParseContext,
    clean_question,
    find_definitions,
    parse_expression,
    resolve_operand,
    statement_hints,
    strip_statement_hints,
    unit_asked,
)
from finrag_pipeline.core.analyst.formula import Formula, parse_formula
from finrag_pipeline.core.analyst.labels import normalize_label
from finrag_pipeline.core.analyst.lexicon import Concept, Lexicon, normalize_text
from finrag_pipeline.core.asked import requested_units
from finrag_pipeline.core.question_kind import classify_question

__all__ = ["Plan", "PlanError", "make_plan", "resolve_term", "definition_formula", "trailing_words",
           "written_formula_plan", "term_definitions", "strip_statement_hints", "UnreadOperand"]

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
                         r"strongest|weakest|maximum|minimum|peak|fastest|slowest)\b", re.IGNORECASE)
# "Which year saw the highest revenue growth", "grew the most": the extreme is over the year's growth, not the level
_GROWTH_WORDS_RE = re.compile(r"\b(?:grow|grew|grown|growth|increase[ds]?|rose|rise)\b", re.IGNORECASE)
# a rate asked ("growth rate", "in percentage terms", "fastest"): relative growth, else the change in amount
_RATE_WORDS_RE = re.compile(r"\b(?:rate|percent(?:age)?|relative|fastest|slowest|faster|slower)\b|%|\bgrowth\b",
                            re.IGNORECASE)
_COMPARE_RE = re.compile(r"\b(higher|lower|larger|smaller|greater|bigger|more|less|faster|slower)\b.*\bor\b", re.IGNORECASE)
_SUM_RE = re.compile(r"\b(sum|combined|together|in total|total of|cumulative)\b", re.IGNORECASE)
_AVERAGE_RE = re.compile(r"\baverage\b|\bavg\b|\bmean\b", re.IGNORECASE)
_PER_SHARE_RE = re.compile(r"\bper (?:diluted )?share\b", re.IGNORECASE)
_PERCENT_WORDS = re.compile(r"\b(percent(?:age)?|margin|rate)\b|%|\bas a share of\b", re.IGNORECASE)
_RATIO_OF_RE = re.compile(r"\bratio of (?P<a>.+?) to (?P<b>.+?)(?:\s+(?:in|for|during|at|as of)\b|[?,.]|$)",
                          re.IGNORECASE)
_AS_PCT_OF_RE = re.compile(r"(?P<a>[\w&' ,-]+?) as a (?:percent(?:age)?|share|proportion|fraction) of "
                           r"(?:its |the )?(?P<b>[\w&' ,-]+?)(?:\s+(?:in|for|during|at)\b|[?,.]|$)", re.IGNORECASE)
# words before a line item that do not narrow it to a segment ("average total assets", "annual revenue")
_MODIFIERS = frozenset(["a", "an", "the", "its", "their", "total", "net", "consolidated", "reported", "annual", "yearly", "fiscal", "year", "full", "gaap", "non-gaap", "adjusted", "average", "avg", "mean", "percentage", "percent", "change", "growth", "increase", "decrease", "combined", "cumulative", "company", "companys", "group", "groups", "diluted", "basic", "overall", "sum", "difference", "ratio", "much", "many", "what", "was", "were", "is", "are", "how", "did", "does", "do", "by", "of", "for", "in", "on", "to", "from", "and", "at", "as", "highest", "lowest", "largest", "smallest", "biggest", "strongest", "weakest", "peak", "higher", "lower", "report", "reports", "reported", "record", "level", "amount", "value", "expense", "expenses", "costs", "spending", "figure", "balance", "balances", "position", "line", "item", "items", "account", "number", "outstanding",
    # words of where a line is printed ("restructuring costs directly outlined in the income statement"): no segment
    "directly", "explicitly", "separately", "outlined", "shown", "disclosed", "presented", "stated", "listed",
    "printed", "itemized", "itemised", "broken",
    # verbs of a change ("did net income grow in FY2022"): no segment
    "grow", "grew", "grown", "growing", "rise", "rose", "risen", "fall", "fell", "fallen", "decline", "declined",
    "increased", "decreased", "changed", "improve", "improved", "expand", "expanded", "shrink", "shrank",
    "drop", "dropped", "jump", "jumped", "move", "moved", "come", "came", "end", "ended", "stand", "stood",
    "book", "booked", "record", "recorded", "spend", "spent", "generate", "generated", "pay", "paid", "year-end",
    "unadjusted", "gross", "yoy", "year-over-year", "calculate", "compute", "give", "find", "determine",
    "estimate", "show", "tell", "please", "provide", "rate", "pay", "pays", "out", "cagr", "compound", "compounded",
    # words of an extreme ("grow the most", "fastest"): no segment
    "attributable", "most", "least", "more", "less", "fastest", "slowest", "faster", "slower", "greatest", "terms", "relative"])
_SEGMENT_WORD_RE = re.compile(r"\b([a-z0-9&']+)\s+(?:segment|business|division|reportable segment)\b", re.I)


# questions that ask for a name, not a figure (a cause is the question-kind rule's: core/question_kind.py)
_ASKS_WHICH_RE = re.compile(r"^\s*(?:which|what)\s+(?:of\s+[\w.&'\u2019]+\s+)?(?:[\w&'\u2019]+\s+){0,2}?(?:segments?|divisions?"
                            r"|businesses|business\s+units?|regions?|geograph\w*|products?|product\s+lines?|customers?"
                            r"|countries|markets?|subsidiar\w+)\b", re.IGNORECASE)


# "How much did Apple's inventories decrease in FY2022?": a change against the prior year
_HOW_MUCH_CHANGED_RE = re.compile(r"\bhow\s+much\s+(?:did|has|have|had)\b.*\b(?:increase|decrease|grow|decline|change"
                                  r"|rise|fall|drop|shrink|expand|jump)(?:d|s)?\b", re.IGNORECASE)
# "operating cash flow to net income ratio": A / B (unless the words are a metric's own name, "debt to equity ratio")
_A_TO_B_RATIO_RE = re.compile(r"(?P<a>\b[\w&'\- ]+?)\s+to\s+(?P<b>[\w&'\- ]+?)\s+ratio\b", re.IGNORECASE)


_CAGR_RE = re.compile(r"(?:\b(?P<n>\d|two|three|four|five|ten)[\s-]+years?\s+)?(?:[\w&' ]+\s+)?(?:\bcagr\b|"
                      r"\bcompound(?:ed)?\s+annual(?:ized)?\s+growth(?:\s+rate)?\b)", re.IGNORECASE)
_NUMBER_OF = {"two": 2, "three": 3, "four": 4, "five": 5, "ten": 10}


_YEAR_RANGE_RE = re.compile(r"(?:fy|fiscal(?:\s+year)?)?\s*'?(?:19|20)\d\d\s*(?:-|–|to|through|thru)\s*(?:fy|fiscal"
                            r"(?:\s+year)?)?\s*'?(?:19|20)\d\d|\bbetween\s+(?:fy|fiscal(?:\s+years?)?)?\s*(?:19|20)\d\d\s+and\b",
                            re.IGNORECASE)


class PlanError(ValueError):
    """The question names no quantity this answerer can compute (says which part it could not read)."""


class UnreadOperand(PlanError):
    """The question writes a formula with an operand that is no line item of the lexicon: the answer
    abstains naming it (``operand``), rather than quoting text or computing another formula."""

    def __init__(self, message: str, operand: str | None):
        super().__init__(message)
        self.operand = operand


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
    statements: list[str] = field(default_factory=list)  # statements the question points at ("using the balance sheet")
    definition: str | None = None       # the words the formula was read from (a definition or the question's own)

    @property
    def parsed(self) -> Formula:
        return parse_formula(self.formula)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _decimals_asked(question: str) -> int | None:
    """The rounding the question asks for: the one reader the scorer uses too (core/asked.py)."""
    return requested_units(question).decimals


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


def definition_formula(definition: str, lexicon: Lexicon, year: int | None = None) -> str:
    """'revenue / average PP&E' -> 'revenue / avg(ppe)'; 'cost of sales divided by average inventory
    times 365' -> 'cost_of_revenue / avg(inventory) * 365' (core/analyst/definitions.parse_expression).
    Raises UnreadOperand naming a term that is no line item, PlanError for other unread wording."""
    try:
        return parse_expression(definition, ParseContext(lexicon, year))
    except DefinitionError as exc:
        if exc.operand:
            raise UnreadOperand(f"{exc} in the definition {definition!r}", exc.operand) from exc
        raise PlanError(f"cannot read the definition {definition!r}: {exc}") from exc


def _unit_of_formula(formula: str, question: str) -> str:
    if re.match(r"^\s*365\b|\*\s*365\b", formula):
        return "days"
    if "/" in formula:
        return "percent" if _PERCENT_WORDS.search(question) else "ratio"
    return "USD"


def make_plan(question: str, years: list[int], lexicon: Lexicon, line_item: Concept | None = None) -> Plan:
    """The plan for a question (see ``_make_plan``), with the statements it points at. The quantity is
    read from the question without its instructions (``clean_question``); rounding, units, statement
    hints and definitions from the whole question. "Excluding the one-time $10.2 billion tax charge" is
    read apart (``_excluding``)."""
    excluded = _EXCLUDING_RE.search(question)
    if excluded is not None and line_item is None:
        rest = question[:excluded.start()] + " " + question[excluded.end():]
        rest = re.sub(r"^\s*,\s*", "", re.sub(r"\s+", " ", rest)).strip()
        return _excluding(make_plan(rest[:1].upper() + rest[1:], years, lexicon), excluded, lexicon)
    plan = _make_plan(clean_question(question), years, lexicon, line_item, full=question)
    plan.statements = statement_hints(question)
    return plan


# "Excluding the one-time $10.2 billion State Aid tax charge", "adjusted for a $1.5 billion impairment charge",
# "ignoring the $300 million gain on sale": an amount the question states, taken out of the figure
_EXCLUDING_RE = re.compile(
    r"\b(?:excluding|exclusive\s+of|ex|adjusted\s+for|adjusting\s+for|ignoring|setting\s+aside|without|leaving\s+out"
    r"|stripping\s+out|removing)\s+(?:the\s+(?:effect|impact)\s+of\s+)?(?:the\s+|a\s+|an\s+|its\s+)?"
    r"(?:(?:one[\s-]+time|one[\s-]+off|non[\s-]+recurring|nonrecurring|discrete|special|unusual)\s+)?"
    r"(?P<amount>(?:us)?\$\s*\d[\d,]*(?:\.\d+)?\s*(?:billion|million|thousand|bn|mm|m|b)?)\s+"
    r"(?P<what>(?:[\w&'\u2019-]+\s+){0,8}?(?P<kind>charges?|expenses?|costs?|loss(?:es)?|impairments?|write[\s-]?(?:downs?|offs?)"
    r"|gains?|benefits?|income)(?:\s+(?:charges?|costs?|expenses?|loss(?:es)?))?)\b\s*,?", re.I)


def _excluding(plan: Plan, excluded: re.Match, lexicon: Lexicon) -> Plan:
    """The plan with a stated one-time amount taken out of its figure (the numerator of a ratio): a charge leaves a
    cost smaller (tax expense less the tax charge) and a profit larger; a gain the reverse. A formula whose figure
    is no single line raises PlanError (the answer abstains rather than guess where the amount belongs)."""
    from finrag_pipeline.core.numbers import parse_figure

    figure = parse_figure(excluded.group("amount"))
    m = re.fullmatch(r"(?P<num>abs\((?P<k1>\w+)\)|(?P<k2>\w+))(?P<rest>\s*/\s*\S.*)?", plan.formula.strip())
    key = m and (m.group("k1") or m.group("k2"))
    concept = lexicon.concepts.get(key) if key else None
    if figure is None or concept is None or plan.operation != "value":
        raise PlanError(f"cannot take {excluded.group(0).strip(' ,')!r} out of {plan.formula!r}")
    amount = Decimal(str(figure.value)).normalize()
    amount_text = f"{amount:f}".rstrip("0").rstrip(".") if "." in f"{amount:f}" else f"{amount:f}"
    cost = concept.expense or concept.outflow   # the lexicon says which lines are costs (never the key's words)
    charge = not re.match(r"gain|benefit|income", excluded.group("kind"), re.I)
    sign = "-" if charge == cost else "+"
    plan.formula = f"({m.group('num')} {sign} {amount_text}){m.group('rest') or ''}"
    plan.quantity = f"{plan.quantity} excluding {excluded.group('amount').strip()} {excluded.group('what').strip()}"
    plan.notes.append(f"{excluded.group(0).strip(' ,')}: {m.group('num')} {sign} {amount_text}")
    return plan


def _make_plan(question: str, years: list[int], lexicon: Lexicon, line_item: Concept | None = None,
               written: bool = True, full: str | None = None) -> Plan:
    """The plan for a question whose fiscal years are already known (latest first, may be empty).

    ``line_item``: a statement line the caller found printed in the filing under the question's own
    words (a row label outside the lexicon, "deferred revenue"); it is the quantity then. ``full``:
    the question as asked, when ``question`` is its cleaned form."""
    full = full or question
    notes: list[str] = []
    decimals = _decimals_asked(full)
    asked_scale = requested_units(full).scale   # "in billions" -> 10**9 (core/asked.py: the one reading)
    display_scale = int(asked_scale) if asked_scale else None
    years = list(years)
    if "cause" in classify_question(question).topics and not find_definitions(question):
        raise PlanError("asks for a cause or an explanation, not a figure")
    if _ASKS_WHICH_RE.search(question):
        raise PlanError("asks which segment, product or region, not a figure")
    hints = statement_hints(full)
    if line_item is None and written:
        plan = written_formula_plan(full, years, lexicon, decimals, display_scale, clean=question)
        if plan is not None:
            plan.statements = hints
            return plan
    definition = _DEFINITION_RE.search(question)
    rest = question[:definition.start()] if definition else question

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
        metric_match = next((m for m in matches if m.concept.formula), None)
        listed = len(matches) >= 2 and re.fullmatch(r"\s*(?:and|,)\s+(?:its\s+|the\s+|their\s+)?",
                                                    normalize_text(rest)[matches[0].end:matches[1].start])
        if metric_match is not None and not listed and not matches[0].concept.formula and all(
                m.concept.formula or m.concept.key in parse_formula(metric_match.concept.formula).names for m in matches):
            # "how many times has Amazon sold its inventory? Calculate inventory turnover": the lines named
            # are the metric's own inputs; the metric is asked
            matches = [metric_match] + [m for m in matches if m is not metric_match]
        concepts = [m.concept for m in matches]
        main = concepts[0]
        alias = matches[0].alias
        after = re.split(r"[?;]|\.(?:\s|$)", rest[len(_raw_prefix(rest, matches[0].end)):])[0]  # this sentence only
        qualifier = " ".join(filter(None, [_qualifier(_raw_prefix(rest, matches[0].start), rest), trailing_words(
            normalize_label(after))])) or None
    if main.formula:
        formula, unit = main.formula, main.unit or _unit_of_formula(main.formula, rest)
        if unit in ("percent", "ratio") and unit_asked(full) in ("percent", "ratio"):
            unit = unit_asked(full)  # a ratio asked "as a percentage" (or a percent "in times") is shown so
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

    cagr = _CAGR_RE.search(rest)
    if cagr and "cagr(" not in formula:
        # "2-year revenue CAGR from FY2019 to FY2021": (later / earlier) ** (1 / n) - 1 over the years asked
        n_words = cagr.group("n") or (re.search(r"\b(\d|two|three|four|five|ten)[\s-]+years?\b", rest, re.I) or [None, None])[1]
        n = (int(n_words) if n_words and n_words.isdigit() else _NUMBER_OF.get((n_words or "").lower())) or (
            max(years) - min(years) if len(years) >= 2 else None)
        if n:
            return Plan(alias, f"cagr({formula}, {n})", [max(years)] if years else [], "value", "percent", decimals,
                        display_scale, False, main.key, notes, qualifier)
    operation: Operation = "value"
    extreme = _EXTREME_RE.search(rest)
    compare = _COMPARE_RE.search(rest)
    growth = bool(_GROWTH_WORDS_RE.search(rest)) and ((extreme and len(years) >= 2) or (compare and len(years) == 2))
    if growth:
        # the year's growth over the year before: a rate when one is asked, else the change in amount
        if _RATE_WORDS_RE.search(rest):
            formula, unit = f"change({formula}) / abs(lag({formula}, 1))", "percent"
            alias = f"{alias} growth"
        else:
            formula = f"change({formula})"
            alias = f"change in {alias}"
        notes.append("each year against the year before")
    if extreme and len(years) >= 2:
        low = extreme.group(1).lower() in ("lowest", "smallest", "least", "weakest", "minimum", "slowest")
        years = list(range(max(years), min(years) - 1, -1))  # "from 2020 to 2022" covers 2021 too
        if growth and len(years) >= 3:
            years = years[:-1]  # "between FY2017 and FY2019": the growth years are FY2018 and FY2019
        return Plan(alias, formula, years, "min_year" if low else "max_year", unit, decimals, display_scale,
                    False, main.key, notes, qualifier)
    if compare and len(years) == 2:
        low = compare.group(1).lower() in ("lower", "smaller", "less", "slower")
        return Plan(alias, formula, sorted(years, reverse=True), "min_year" if low else "max_year", unit, decimals,
                    display_scale, False, main.key, notes, qualifier)
    if _PCT_CHANGE_RE.search(rest) and not main.formula or (
            _PCT_CHANGE_RE.search(rest) and re.search(r"percent(?:age)?\s+change|%\s*change|growth rate", rest, re.I)):
        operation = "pct_change"
    elif _CHANGE_RE.search(rest) and (len(years) >= 2 or re.search(r"\bfrom\b|\bprior\b|\bprevious\b", rest, re.I)
                                      or _HOW_MUCH_CHANGED_RE.search(rest)):
        operation = "change"
    elif _SUM_RE.search(rest) and len(years) >= 2 and main.key in formula and "+" not in formula:
        operation = "sum_years"
    elif (len(years) >= 2 and unit == "USD" and _YEAR_RANGE_RE.search(full) and re.search(r"\btotal\b", rest, re.I)
          and not main.formula and not _AVERAGE_RE.search(rest)):
        # "What is the FY2019 - FY2021 total D&A?": an amount over a range of years is their sum (an "average of
        # total revenues" is the average: "total" there is the line's name)
        operation = "sum_years"
    elif _AVERAGE_RE.search(rest) and len(years) >= 2 and "avg(" not in formula and "mean(" not in formula:
        operation = "average_years"
    if operation == "change" and unit in ("USD", "shares", "USD per share") and unit_asked(full) == "percent":
        operation = "pct_change"  # "the change in revenue ... in units of percents" is a percent change
    elif (operation == "pct_change" and unit == "USD" and asked_scale and unit_asked(full) != "percent"
          and not re.search(r"percent|%|\brate\b", rest, re.I)):
        operation = "change"  # "by how much did operating income increase year over year, in USD millions": an amount
    if operation in ("sum_years", "average_years") and len(years) >= 2 and _YEAR_RANGE_RE.search(full):
        years = list(range(max(years), min(years) - 1, -1))  # "FY2020 - FY2022", "from 2020 to 2022": 2021 too
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
        if tok in _MODIFIERS or len(tail) >= 4 or re.fullmatch(r"(?:fy|q[1-4])?(?:19|20)?\d\d", tok):
            break
        tail.insert(0, tok)
    return " ".join(tail) or None


# ---- formulas the question writes ("defined as", "X less Y", "as a % of") -------------------------

_PRONOUNS = frozenset(["it", "this", "that", "the metric", "the ratio", "this metric", "this ratio", "the figure",
                       "the measure", "them"])
_DIVIDES = re.compile(r"/|÷|\bdivid|\bover\b|\bas\s+an?\s+(?:%|percent(?:age)?|share|proportion|fraction)\s+of\b"
                      r"|\bas\s+%\s+of\b|\b365\b|\b360\b", re.I)
# arithmetic written in the question itself (not a definition): "EBITDA less capex", "capex as a % of revenue"
_EXPLICIT_OP = re.compile(r"(?<!\))/(?!\(|(?:loss|gain|benefit|expense|income|deficit|or)\b)|÷|\bdivided\s+by\b|\bminus\b|\bless\b(?!\s+than)|\bplus\b|\s\+\s"
                          r"|\brelative\s+to\s+(?:the\s+|its\s+)?(?!(?:fy|fiscal|prior|previous|last|year|(?:19|20)\d\d))[a-z]"
                          r"|\bas\s+an?\s+(?:%|percent(?:age)?|share|proportion|fraction)\s+of\b|\bas\s+%\s+of\b|\bas\s+an?\s+multiple\s+of\b"
                          r"|\b(?:\d|two|three|four|five|ten)[\s-]+year\s+(?:average|avg|mean)\b", re.I)
_LEAD_RE = re.compile(r"^.*?\b(?:what|how\s+much|how\s+(?:large|big|high|significant)|calculate|compute|give|find|determine|report|estimate|show)\b\s*"
                      r"(?:(?:is|was|are|were|will\s+be|has\s+been|had\s+been)\s+)?(?:(?:the|its|their)\s+)?", re.I)
_POSSESSIVE_RE = re.compile(r"^(?:[A-Z][\w.&-]*\s+){0,2}?[\w.&-]+(?:'s|\u2019s|s')\s+")  # "Best Buy's"
_LEAD_YEARS_RE = re.compile(r"^(?:(?:fy|fiscal(?:\s+year)?)\s*)?'?(?:19|20)\d\d(?:\s*(?:-|–|to|through)\s*"
                            r"(?:(?:fy|fiscal(?:\s+year)?)\s*)?'?(?:19|20)\d\d)?\s+", re.I)
# the period of the question inside a clause ("capex in 2022 as a percentage of ...", "from FY2020 to FY2022")
_PERIOD_RE = re.compile(r"\s*,?\s+(?:in|for|during|at|as\s+of|over|across|from|at\s+the\s+end\s+of)\s+(?:the\s+)?"
                        r"(?:(?:fiscal|calendar)\s+)?(?:years?\s+|fy\s*)?'?(?:(?:19|20)\d\d|fy\d\d)"
                        r"(?:\s*(?:-|–|to|through|and)\s*(?:fiscal\s+|fy\s*)?'?(?:19|20)\d\d)?\b"
                        r"|\s*,?\s+(?:in|for|during)\s+(?:the\s+)?(?:latest|last|most\s+recent|current)\s+(?:fiscal\s+)?year\b",
                        re.I)
# the instructions after a comma: ", in USD millions", ", rounded ...", ", as a percentage with one decimal"
_TAIL_RE = re.compile(r"\s*,\s*(?:in|answer|round|rounded|expressed|give|reported|with|to\s+(?:one|two|three|\d|the\s+nearest)"
                      r"|as\s+an?\s+(?:percent(?:age)?|%|ratio|multiple|fraction|decimal|number)(?!\s+of))\b.*$", re.I)
_CUT_RE = re.compile(r"\s+(?:for|in|at|of|by|from|according\s+to|based\s+on)\s+(?!.*\s(?:for|in|at|of|by|from)\s)", re.I)


def term_definitions(question: str, years: list[int], lexicon: Lexicon) -> tuple[dict[str, str], dict[str, str], list]:
    """Definitions of a term of the formula ("capex = cash paid for PP&E", "counting SG&A as sales and
    marketing plus general and administrative", "DIO is defined as ..." inside a cash conversion cycle
    question): (phrase -> formula, concept key -> formula of the base lines they redefine, the definitions
    of a whole quantity, the one the question asks first)."""
    year = max(years) if years else None
    phrases: dict[str, str] = {}
    keys: dict[str, str] = {}
    whole = []
    defs = find_definitions(question)
    for _ in range(2):  # twice: a definition may use a term defined after it ("CCC = DIO + DSO - DPO. DIO is ...")
        for d in defs:
            target = d.target
            if target is None or normalize_label(target) in _PRONOUNS:
                continue
            own = normalize_label(target)
            try:
                phrases[own] = parse_expression(d.body, ParseContext(
                    lexicon, year, {k: v for k, v in phrases.items() if k != own}))
            except DefinitionError:
                continue
    for d in defs:
        target = d.target
        pronoun = target is None or normalize_label(target) in _PRONOUNS
        concept = None if pronoun else resolve_operand(target, lexicon)
        if pronoun or concept is None or concept.formula or _DIVIDES.search(d.body) or (
                concept.fallback and re.search(r"\+|\bplus\b|\band\b", d.body)):
            # a line made of parts ("total debt", "SG&A") defined as the sum of its parts is the quantity asked
            whole.append(d)
        elif normalize_label(target) in phrases:
            keys[concept.key] = phrases[normalize_label(target)]
        else:
            whole.append(d)  # not read as a term: perhaps the whole quantity in other words
    if len(whole) > 1:
        # the definition of what is asked first: its target named outside the definitions
        outside = question
        for d in defs:
            outside = outside.replace(d.body, " ")
        asked = {m.concept.key for m in lexicon.match(outside)}
        def asked_first(d):
            c = resolve_operand(d.target, lexicon) if d.target else None
            return 0 if (c is not None and c.key in asked) else 1
        whole.sort(key=asked_first)
    # a whole definition's own target is no term of it
    return {k: v for k, v in phrases.items()}, keys, whole


def _substitute(formula: str, keys: dict[str, str]) -> str:
    for key, repl in keys.items():
        repl = repl if re.fullmatch(r"[\w(), ]+", repl) and "+" not in repl and "-" not in repl else f"({repl})"
        formula = re.sub(rf"abs\(\b{re.escape(key)}\b\)|\b{re.escape(key)}\b", repl, formula)
    return formula


_SHARE_SPENT_RE = re.compile(
    r"\b(?:what|which|how\s+much\s+of\s+(?:a|the)?)\s*(?:share|percent(?:age)?|portion|proportion|fraction|%)\s+of\s+"
    r"(?P<b>.+?)\s+(?:did|does|do|was|were|is|has|had|went)\b.*?\b(?:spend|spent|invest|invested|pay|paid|go|goes|went"
    r"|devote|devoted|allocate|allocated|use|used|put)\s+(?:on|to|for|into|toward|towards)\s+(?P<a>[^?.;(]+)", re.I)


def _expression_clauses(question: str, lexicon: Lexicon | None = None) -> list[str]:
    """Clauses of a question that write arithmetic ("Unadjusted EBITDA less capex"), reduced to the
    quantity: without the question words, the company's possessive and the period."""
    out = []
    ratio = _A_TO_B_RATIO_RE.search(question)
    if ratio and lexicon is not None and not any(
            m.concept.formula for m in lexicon.match(ratio.group(0)) if " to " in m.alias or "ratio" in m.alias):
        question = question[:ratio.start()] + f"{ratio.group('a')} divided by {ratio.group('b')}" + question[ratio.end():]
    share = _SHARE_SPENT_RE.search(question)
    if share:  # "What share of its fiscal 2022 revenue did Microsoft spend on capex" = capex as a % of revenue
        question = f"{share.group('a').strip()} as a percentage of {share.group('b').strip()}?" + question[share.end():]
    for clause in re.split(r"[?;:]|\.(?:\s|$)", question):
        clause = re.sub(r"\([^()]*\)", " ", clause).strip()
        if not _EXPLICIT_OP.search(clause):
            continue
        c = strip_statement_hints(clause)
        c = _LEAD_RE.sub("", c) if _LEAD_RE.search(c) else c
        c = _POSSESSIVE_RE.sub("", c.strip())
        c = _LEAD_YEARS_RE.sub("", c.strip())
        c = _TAIL_RE.sub("", _PERIOD_RE.sub(" ", c)).strip(" ,")
        c = re.sub(r"\b(?:of\s+)?[\w.&-]+(?:'s|\u2019s|s')\s+", lambda m: "of " if m.group(0).startswith("of") else "", c)
        # "the change in EBITDA as a % of revenue": the change of the whole ratio (the plan's operation), so the
        # written arithmetic is the ratio alone
        c = re.sub(r"^(?:the\s+)?(?:(?:year[\s-]+over[\s-]+year|yoy|annual)\s+)?(?:change|increase|decrease)\s+(?:in|of)\s+"
                   r"(?:the\s+)?(?=.*(?:\bas\s+an?\s+(?:%|percent)|\bas\s+%|/|\bdivided\s+by\b))", "", c, flags=re.I)
        if c:
            out.append(c)
    return out


_AVERAGE_OF_RATIO_RE = re.compile(
    r"(?<!year\s)(?<!year-)(?<!years\s)\b(?:the\s+)?(?:simple\s+)?(?:average|mean)\s+(?:of\s+)?(?:the\s+|its\s+)?(?=[^?.;]*?\bas\s+an?\s+(?:%|percent(?:age)?|share"
    r"|proportion|fraction)\s+of\b|[^?.;]*?\bas\s+%\s+of\b|[^?.;]*?\s(?:/|divided\s+by|relative\s+to)\s)", re.I)


def written_formula_plan(question: str, years: list[int], lexicon: Lexicon, decimals: int | None,
                         display_scale: int | None, clean: str | None = None) -> Plan | None:
    """The plan when the question writes its formula: a definition ("DPO is defined as ...", "Define X
    as ...", "(operating income / revenue)") or arithmetic over named lines ("EBITDA less capex",
    "3 year average of capex as a % of revenue"). None when it writes none; PlanError naming the
    operand when it writes one this answerer cannot read and names no standard metric either.
    ``clean``: the question without its instructions (arithmetic clauses and the operation are read there)."""
    year = max(years) if years else None
    clean = clean if clean is not None else clean_question(question)
    phrases, keys, whole = term_definitions(question, years, lexicon)
    ctx = ParseContext(lexicon, year, dict(phrases))
    notes: list[str] = []
    formula = written = None
    rest = clean
    named = [m for m in lexicon.match(question[:whole[0].start] if whole else question)]
    metric = next((m.concept for m in named if m.concept.formula), None)
    if whole and whole[0].target:
        # "Define return on assets as ...": the metric the definition names (its unit when the words say none)
        target = resolve_operand(whole[0].target, lexicon)
        metric = target if target is not None and target.formula else metric
    if metric is None and whole:
        after = question[whole[0].start:].replace(whole[0].body, " ")
        metric = next((m.concept for m in lexicon.match(after) if m.concept.formula), None)
    without_defs = clean
    for d in find_definitions(question):
        # the body as written, and as the cleaned question has it (statement hints taken out)
        without_defs = without_defs.replace(d.body, " ").replace(strip_statement_hints(d.body), " ")
    # "average capex as a percentage of revenue over FY2020 to FY2022": the mean of the yearly ratios over the
    # years asked, as "3 year average of capex as a % of revenue" reads
    if years and len(set(years)) >= 2 and _YEAR_RANGE_RE.search(question):
        n_years = max(years) - min(years) + 1
        without_defs = _AVERAGE_OF_RATIO_RE.sub(f"{n_years} year average of ", without_defs)
    # arithmetic the question writes around its definitions ("3 year average unadjusted EBITDA % margin ...
    # Define unadjusted EBITDA as ..."): the defined terms are operands of it
    clause_formula, clause_text, error, clause_percent = _clause_formula(without_defs, lexicon, year, phrases)
    targets = [normalize_label(d.target) for d in whole if d.target and normalize_label(d.target) not in _PRONOUNS]
    if clause_formula is not None and (not whole or any(t and t in normalize_label(clause_text) for t in targets)):
        formula, written, rest = clause_formula, clause_text, without_defs.replace(clause_text, " ")
        ctx.percent = clause_percent
        whole = []
    for d in whole:
        try:
            formula, written = parse_expression(d.body, ParseContext(
                lexicon, year, {k: v for k, v in phrases.items() if k != normalize_label(d.target or "")})), d.body
            rest = without_defs
            break
        except DefinitionError as exc:
            listed = _listed_inputs(d.body, lexicon)
            if metric is not None and metric.formula and listed and listed <= set(parse_formula(metric.formula).names):
                # "Calculate unadjusted EBITDA using unadjusted operating income and D&A": the inputs of the metric
                # named, listed without the arithmetic: its standard formula over them
                notes.append(f"the definition lists the inputs of {metric.key}: its formula")
                continue
            # an operand that is no line item: abstain naming it (never answer another metric's formula);
            # wording the parser cannot follow: the standard formula of the metric named, noted
            if (metric is None or exc.operand) and d.source not in ("paren", "ie"):
                raise UnreadOperand(f"{exc} (in the definition {d.body!r})", exc.operand) from exc
            notes.append(f"definition not read ({exc}); the standard formula of {metric.key if metric else 'the line'}")
    if formula is None and not whole and clause_formula is None and error is not None and error.operand \
            and len(error.operand.split()) <= 5:
        raise UnreadOperand(f"{error} (in the question's arithmetic)", error.operand)
    if formula is None:
        if keys:
            return _with_terms(question, years, lexicon, keys, phrases)
        return None
    asked = unit_asked(question)
    if re.search(r"(?:^|[^\w.])36[05](?:[^\w.]|$)", formula):
        unit = "days"
    elif asked in ("percent", "ratio", "days"):
        unit = asked
    elif ctx.percent:
        unit = "percent"
    elif metric is not None and metric.unit and "/" in formula and metric.unit not in ("USD", "shares") and not (
            metric.unit == "percent" and named and re.search(r"\bratio\b", named[0].alias)
            and not re.search(r"\b(?:margin|percent(?:age)?|rate|share|intensity)\b|%", rest, re.I)):
        # an amount metric named beside a written ratio ("free cash flow conversion, defined as (CFO - capex) /
        # net income") does not make the ratio an amount; a "... ratio" written as A / B with no percent word asked
        # ("dividend payout ratio, defined as dividends paid / net income") is the ratio as written
        unit = metric.unit
    elif "/" in formula:
        unit = "percent" if re.search(r"\b(?:margin|percent(?:age)?|rate|share|intensity)\b|%", rest, re.I) else "ratio"
    else:
        unit = "USD"
    quantity = (whole[0].target if whole and whole[0].target and normalize_label(whole[0].target) not in _PRONOUNS
                else (_named_before(question[:whole[0].start]) or named[0].alias if named and whole else written))
    concept = Concept(key=(metric.key if metric else "asked"), line_items=[quantity], aliases=[quantity],
                      formula=formula, unit=unit)
    plan = _make_plan(rest, years, lexicon, line_item=concept)
    plan.quantity, plan.definition_given, plan.definition = quantity, True, written
    if plan.qualifier is None and _SEGMENT_WORD_RE.search(question):
        # "the operating margin of Amazon's AWS segment, i.e. AWS operating income divided by AWS net sales": the
        # formula is read on the segment named (the calculator drops the company's own name from it)
        plan.qualifier = _qualifier("", question)
    plan.concept_key = metric.key if metric else None
    plan.decimals = decimals if decimals is not None else plan.decimals
    plan.display_scale = display_scale or plan.display_scale
    plan.notes = notes + plan.notes
    if "mean(" in formula or any(w in formula for w in ("lag(", "change(")):
        plan.years = plan.years[:1] if plan.operation == "value" else plan.years
    return plan


def _listed_inputs(body: str, lexicon: Lexicon) -> set[str] | None:
    """The line items a definition lists without arithmetic ("unadjusted operating income and D&A (from the cash
    flow statement)"), as concept keys of base lines; None unless every listed phrase names one."""
    text = re.sub(r"\([^()]*\)|\[[^\[\]]*\]", " ", body)
    parts = [p for p in re.split(r"\s*,\s*(?:and\s+)?|\s+and\s+", text) if p.strip()]
    if len(parts) < 2:
        return None
    keys: set[str] = set()
    for part in parts:
        concept = resolve_operand(part, lexicon)
        if concept is None:
            return None
        keys |= set(parse_formula(concept.formula).names) if concept.formula else {concept.key}
    return keys


def _named_before(text: str) -> str | None:
    """The quantity named just before ", defined as ...": "what was Apple's FY2024 free cash flow conversion" ->
    "free cash flow conversion" (the answer's name; the formula is the definition's)."""
    clause = re.split(r"[?;:]|\.(?:\s|$)", text)[-1]
    c = strip_statement_hints(clause)
    c = _LEAD_RE.sub("", c) if _LEAD_RE.search(c) else ""
    c = _POSSESSIVE_RE.sub("", c.strip())
    c = _LEAD_YEARS_RE.sub("", c.strip())
    c = _TAIL_RE.sub("", _PERIOD_RE.sub(" ", c)).strip(" ,")
    c = re.sub(r"\s+(?:if|when|where|with|using|taking)\b.*$", "", re.sub(r"\s+", " ", c), flags=re.I).strip(" ,")
    return c if c and len(c.split()) <= 12 else None


def _clause_formula(text: str, lexicon: Lexicon, year: int | None, phrases: dict[str, str]
                    ) -> tuple[str | None, str | None, DefinitionError | None, bool]:
    """(formula, its words, the first error, "as a % of" read) of the first clause of ``text`` that writes arithmetic over
    line items; a trailing "for Apple" / "in FY2022" is cut until the clause reads."""
    error: DefinitionError | None = None
    for clause in _expression_clauses(text, lexicon):
        attempt, formula = clause, None
        for _ in range(4):
            attempt = re.sub(r"\s+(?:ratio|multiple)\s*$", "", attempt)  # "cash from operations / net income ratio"
            try:
                pctx = ParseContext(lexicon, year, dict(phrases))
                formula = parse_expression(attempt, pctx)
                percent = pctx.percent
                break
            except DefinitionError as exc:
                error = error or exc
                cut = _CUT_RE.search(attempt)
                if not cut:
                    break
                attempt = attempt[:cut.start()]
        if formula is None or not re.search(r"[-+*/]|mean\(", formula.lstrip("-")):
            continue
        written = attempt
        while (cut := _CUT_RE.search(written)) is not None:  # the name without "for Apple"
            try:
                if parse_expression(written[:cut.start()], ParseContext(lexicon, year, dict(phrases))) != formula:
                    break
            except DefinitionError:
                break
            written = written[:cut.start()]
        return formula, written, None, percent
    return None, None, error, False


def _with_terms(question: str, years: list[int], lexicon: Lexicon, keys: dict[str, str],
                phrases: dict[str, str]) -> Plan | None:
    """The usual plan with the question's own definitions of its terms put in ("SG&A" = S&M + G&A)."""
    try:
        plan = _make_plan(question, years, lexicon, written=False)
    except PlanError:
        return None
    new = _substitute(plan.formula, keys)
    if new == plan.formula:
        return None
    plan.formula, plan.definition_given = new, True
    plan.also = [_substitute(f, keys) for f in plan.also]
    plan.definition = "; ".join(f"{k} = {v}" for k, v in phrases.items())
    return plan


def decimals_asked(question: str) -> int | None:
    """The rounding a question asks ("to one decimal place", "nearest percent"), or None."""
    return _decimals_asked(question)
