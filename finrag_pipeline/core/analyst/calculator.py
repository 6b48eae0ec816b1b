"""The ``calculator`` answerer: statement line items and XBRL facts, exact arithmetic, cited inputs.

For a question it (1) reads the company and fiscal years (query understanding over the corpus
catalog, or the QA item's ``periods``), (2) plans the quantity and the arithmetic
(core/analyst/plan.py: a lexicon formula, a definition given in the question, change, % change,
sum, average, per share, ratio, days), (3) looks every input up in the filing's fact layer
(core/analyst/store.py), (4) computes with exact decimals and rounds as asked, and (5) answers with
one figure, its unit and the formula, citing the table row (chunk id + page) or XBRL fact of every
input. A missing input is an abstention that names it. Plan, inputs, formula and timings are in
``AnswerResult.details``.

Qualitative questions ("what drove ...", "why ...", "which risks ...": the one rule of
core/question_kind.py) go to the narrative answerer, never to a figure; questions that name
no line item or metric otherwise go to the extractive answerer. Both live in core/evaluation, a layer above
this room, so the registered ``calculator`` (core/evaluation/analyst_answerers.py) hands them in.
"""

from __future__ import annotations

import dataclasses
import re
import string
import time
from collections.abc import Callable, Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from finrag_pipeline.core.analyst.definitions import plain_wording, resolve_operand, statement_hints
from finrag_pipeline.core.analyst.formula import FormulaError, MissingInput, evaluate, parse_formula
from finrag_pipeline.core.analyst.judgements import (
    Decision,
    Judgement,
    JudgementConfig,
    decide_trend,
    growth_comparison,
    load_judgement_config,
    metric_name,
    option_choice,
    read_judgement,
    share_of_whole,
    strip_unsuitable_clause,
    threshold_judgement,
    unsuitable_metric,
)
from finrag_pipeline.core.analyst.lexicon import Concept, Lexicon
from finrag_pipeline.core.analyst.model import FactValue
from finrag_pipeline.core.analyst.plan import Plan, PlanError, UnreadOperand, decimals_asked, make_plan
from finrag_pipeline.core.analyst.store import FactStore, FilingFacts, normalize_label, plain_label
from finrag_pipeline.core.answering import AnswerResult, Citation
from finrag_pipeline.core.chunking.text import short_company
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.numbers import SCALE_NAME, format_figure
from finrag_pipeline.core.query_understanding import QueryParser

# a cash-flow row printed as a payment: an operand of a written formula is the amount paid ("- principal
# repayments of finance leases" subtracts 7,941, not -7,941), like the lexicon's outflow lines (capex)
_PAYMENT_LABEL_RE = re.compile(r"^(?:principal\s+)?(?:payments?|purchases?|repayments?|repurchases?|acquisitions?"
                               r"|cash\s+paid|dividends\s+paid)\b", re.I)

# "If restructuring costs are not explicitly outlined then state 0": a missing line is the question's 0
_ZERO_IF_ABSENT_RE = re.compile(r"\bif\b[^.?]*?\b(?:not|no)\b[^.?]*?\b(?:outlined|reported|disclosed|presented|shown|stated"
                                r"|listed|broken\s+out|itemi[sz]ed|separately\s+\w+|explicitly\s+\w+)\b[^.?]*?\b(?:state|answer"
                                r"|report|respond\s+with|write|put|return|enter|give)\s+(?:a\s+|the\s+value\s+)?(?:0|zero|\$0)\b", re.I)

# an income-statement row that is a cost: "Cost of services", "Total costs and expenses", "Fulfillment expense"
_COST_LABEL_RE = re.compile(r"^(?:total\s+)?(?:costs?|expenses?)\b|\b(?:costs?|expenses?)$", re.I)

_ACTIVITIES = (("operating_cash_flow", r"\boperat"), ("investing_cash_flow", r"\binvest"),
               ("financing_cash_flow", r"\bfinanc"))
# "Which segment saw operating income fall in fiscal 2025?", "Which of Amazon's segments grew net sales the most?"
_WHICH_MOVED_RE = re.compile(r"^\s*(?:which|what)\s+(?:of\s+)?(?:[\w.&'\u2019]+\s+){0,2}?(?:reportable\s+|business\s+|operating\s+)?"
                             r"(?:segments?|divisions?)\b(?P<rest>.*\b(?:fall|fell|fallen|declin\w*|decreas\w*|drop\w*|shr[ai]nk"
                             r"|grow|grew|grown|ris[ei]n?|rose|increas\w*)\b.*)$", re.I)
_DOWN_WORDS_RE = re.compile(r"\b(?:fall|fell|fallen|declin\w*|decreas\w*|drop\w*|shr[ai]nk)\b", re.I)
_CAUSE_WORDS_RE = re.compile(r"\b(?:why|because|drove|driven|explain\w*|reason\w*|cause\w*)\b", re.I)
_FIGURE_ASKED_RE = re.compile(r"\b(?:give|provide|report|show|state)\s+(?:us\s+|me\s+)?(?:the|its|their)\b", re.I)

DEFAULT_DECIMALS = {"percent": 1, "percentage points": 1, "ratio": 2, "days": 1, "USD per share": 2, "shares": 0}


def _strip_company(question: str, filing: FilingFacts) -> str:
    """The question without the company's own name (so "Apple Inc." is never read as a row label)."""
    names = [w for w in normalize_label(filing.meta.company).split() if len(w) > 2] + [filing.meta.ticker or ""]
    out = normalize_label(question)
    for n in names:
        if n:
            out = re.sub(rf"\b{re.escape(n.lower())}s?\b", " ", out)
    return out


def _without_company(qualifier: str | None, filing: FilingFacts) -> str | None:
    """The qualifier minus the company's own name ("apples iphone" -> "iphone" for Apple Inc.)."""
    if not qualifier:
        return None
    names = set(normalize_label(filing.meta.company).split()) | {(filing.meta.ticker or "").lower()}
    words = [w for w in qualifier.split() if w not in names and not (w.endswith("s") and w[:-1] in names)]
    return " ".join(words) or None


def explanation(details: dict[str, Any]) -> dict[str, Any] | None:
    """The plan and the operands of a calculator answer, for `finrag ask --explain` and the web explorer:
    {"plan": [(field, value)], "operands": [{line_item, period, value, scale, page, label, statement, kind}]}.
    None for another answerer's details (nothing planned)."""
    plan = details.get("plan")
    judgement = details.get("judgement")
    if not plan and not judgement:
        return None
    fields: list[tuple[str, Any]] = []
    if plan:
        fields += [("quantity", plan.get("quantity")), ("formula", details.get("formula") or plan.get("formula")),
                   ("written in the question", plan.get("definition")), ("operation", plan.get("operation")),
                   ("fiscal years", ", ".join(f"FY{y}" for y in plan.get("years") or [])),
                   ("unit", plan.get("unit")), ("decimals", plan.get("decimals")),
                   ("statements asked", ", ".join(plan.get("statements") or [])),
                   ("segment", details.get("segment")), ("line read", details.get("line_read")),
                   ("notes", "; ".join(plan.get("notes") or []))]
    if judgement:
        fields += [("judgement", judgement.get("kind")), ("metric", judgement.get("metric")),
                   ("rule", judgement.get("rule")), ("answer", judgement.get("answer"))]
    if details.get("missing_operand"):
        fields.append(("operand not read", details["missing_operand"]))
    if details.get("missing"):
        fields.append(("missing", "; ".join(details["missing"])))
    operands = []
    for i in details.get("inputs", []):
        src = i.get("source") or {}
        operands.append({"line_item": i.get("line_item"), "period": i.get("period"), "value": i.get("value"),
                         "scale": SCALE_NAME.get(i.get("scale"), ""), "unit": i.get("unit"),
                         "page": src.get("page"), "filing_id": src.get("filing_id"),
                         "label": src.get("row_label") or src.get("concept"), "column": src.get("column_header"),
                         "statement": src.get("statement_type"), "kind": src.get("kind"),
                         "chunk_id": src.get("chunk_id")})
    return {"plan": [(k, v) for k, v in fields if v not in (None, "", [])], "operands": operands}


def explanation_lines(details: dict[str, Any]) -> list[str]:
    """`finrag ask --explain`: the plan, then one line per operand (page, label, period, value)."""
    ex = explanation(details)
    if ex is None:
        return ["explain: no plan (not a calculator answer, or a narrative question it passed on)"]
    lines = ["plan:"] + [f"  {k}: {v}" for k, v in ex["plan"]]
    lines.append("operands:" if ex["operands"] else "operands: none read")
    lines += [f"  {o['line_item']} {o['period']} = {o['value']}{(' ' + o['scale']) if o['scale'] else ''}"
              f" {o['unit'] or ''} <- {o['filing_id']} p.{o['page']} \"{o['label']}\""
              f" [{o['column'] or o['kind']}] ({o['statement'] or o['kind']})" for o in ex["operands"]]
    return lines


_AMOUNT_IN_LABEL_RE = re.compile(r"\s*,?\s*(?:of|and)\s+\$\s?[\d,]+(?:\.\d+)?(?:\s+(?:million|billion|thousand))?")


def sources_text(inputs: Sequence[FactValue], filing_id: str | None = None) -> str:
    """'FY2022 Total net sales: p.32 row "Total net sales" [...]; ...' with amounts printed inside a row
    label dropped ("net of accumulated depreciation of $59,660 and $51,351"): they are no answer figure.
    An input read in another filing than ``filing_id`` (an earlier 10-K) names it."""
    return "; ".join(_AMOUNT_IN_LABEL_RE.sub("", f"{i.period} {i.label}: "
                                             + (f"{i.source.filing_id} " if filing_id and i.source.filing_id != filing_id else "")
                                             + i.source.describe()) for i in inputs)


def cited(inputs: Sequence[FactValue]) -> list[Citation]:
    """The citations of an answer computed from ``inputs``: each (filing, page, chunk) once, in input order."""
    return list(dict.fromkeys((i.source.filing_id, int(i.source.page or 0), i.source.chunk_id) for i in inputs))


def display_company(company: str) -> str:
    """The company as an answer names it: "Apple", "Boston Properties" (an all-caps registrant name in
    title case)."""
    short = short_company(company)
    return string.capwords(short.lower()) if short.isupper() else short


def _hinted(concept: Concept, statements: Sequence[str]) -> Concept:
    """The concept read from the statement the question points at ("primarily using the balance sheet"),
    when it names none itself; a line with a statement of its own keeps it (COGS stays on the income
    statement in a DPO question "using the balance sheet")."""
    if not statements or concept.statement in statements or concept.statement is not None:
        return concept
    return dataclasses.replace(concept, statement=statements[0])


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


_COST_WORDS_RE = re.compile(r"^(?:total\s+)|\s+(?:expenses?|costs?|spend(?:ing)?|charges?)$")


def combined_line_note(asked: str, fact: FactValue) -> str | None:
    """The line read when it is a combined line of which the figure asked is one part: "marketing expense" read
    from "Sales and marketing" (the filer prints no line of its own for marketing), "depreciation" from
    "Depreciation and amortization". None when the line is the figure asked ("Total revenue" for revenue)."""
    label = next((s.row_label for s in [fact.source, *fact.corroborated_by] if getattr(s, "row_label", None)),
                 fact.label)
    want = _COST_WORDS_RE.sub("", normalize_label(asked)).strip()
    # the line's parts as printed: "Sales and marketing", "Depreciation, amortization, and other"
    parts = [_COST_WORDS_RE.sub("", plain_label(normalize_label(p))).strip()
             for p in re.split(r",|&|\band\b", label, flags=re.I)]
    parts = [p for p in parts if p]
    if len(parts) < 2 or want not in parts:
        return None
    return f'read from the line "{label}": the filing prints no {want} line of its own'


def round_decimal(value: Decimal, decimals: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def format_result(value: Decimal, unit: str, decimals: int, scale: int = 1) -> str:
    """'42.1%', '-50.8%', '$12,248 million', '1.53', '45.2 days', '$6.11 per share' (core/numbers.py)."""
    return format_figure(value, unit, decimals, scale)


# A year-end date written right after a fiscal-year label, as its gloss: "fiscal 2021 (year ended January 29,
# 2022)", "FY2023 (the fiscal year ended May 31, 2023)", "fiscal 2021, the year ended ...".
_GLOSS_RE = re.compile(r"^[\s,(\u2013\u2014-]*(?:i\.e\.,?\s*|that is,?\s*)?(?:(?:the\s+)?(?:\d{2}-week\s+)?(?:fiscal\s+)?"
                       r"(?:year|period)\s+(?:that\s+)?end(?:ed|ing|s)\s*(?:on\s+)?)?$", re.I)


def glossed_fiscal_years(question: str, periods: Sequence[Any]) -> list[int]:
    """The fiscal years a question names when each of its dates only glosses a fiscal label written just
    before it; [] when there is no such gloss (the dates then count as periods of their own)."""
    labels = [p for p in periods if p.kind == "fiscal_year"]
    dates = [p for p in periods if p.kind == "date"]
    if not labels or not dates or len(labels) + len(dates) != len(periods):
        return []
    for d in dates:
        at = question.find(d.text)
        before = [lab for lab in labels if 0 <= question.find(lab.text) < at]
        if not before:
            return []
        last = max(before, key=lambda lab: question.find(lab.text))
        between = question[question.find(last.text) + len(last.text):at]
        if not _GLOSS_RE.match(between):
            return []
    return sorted({p.year for p in labels}, reverse=True)


def _plans_metric(plan: Plan, metric: Concept) -> bool:
    """The plan computes ``metric``: its concept, or (a definition read with row operands has no concept) the
    quantity named by one of the metric's names ("Take total debt as current portion ... plus notes payable ...")."""
    if plan.concept_key is not None:
        return plan.concept_key == metric.key
    names = {normalize_label(n) for n in [metric.key.replace("_", " "), *metric.aliases]}
    return normalize_label(plan.quantity or "") in names


def tax_expense(filing: FilingFacts, year: int, printed: Decimal) -> Decimal:
    """The income tax expense (a benefit negative) from the tax line as printed. Filers print it either as the
    expense ("Provision for income taxes 1,648.0", McDonald's) or as its effect on earnings ("Provision for income
    taxes (437,954)", Netflix; "Income tax (expense) benefit"). The statement's own arithmetic tells which: when
    income before taxes PLUS the printed line gives net income (and minus does not), the line is the effect and the
    expense is its negative. Otherwise (no such check possible) the line is read as printed."""
    pre, net = filing.lookup("income_before_taxes", year), filing.lookup("net_income", year)
    if pre is None or net is None:
        return printed
    tolerance = max(abs(pre.base_value) * Decimal("0.001"), Decimal(pre.scale or 1))
    plus, minus = abs(pre.base_value + printed - net.base_value), abs(pre.base_value - printed - net.base_value)
    return -printed if plus <= tolerance < minus else printed


class CalculatorAnswerer:
    """Offline analyst answerer. ``store`` gives the facts (default: the warehouse of FINRAG_HOME,
    read per filing on first use); without hits the question's company picks the filing.

    ``route_qualitative(question, hits, periods)`` answers a qualitative question first (or returns None),
    and ``fallback`` answers a question with nothing to compute; without them the calculator abstains
    there. Both are answerers of a higher layer (core/evaluation), handed in by
    ``core/evaluation/analyst_answerers.calculator_answerer``: the registered ``calculator``."""

    name = "calculator"

    def __init__(self, store: FactStore | None = None, *, lexicon: Lexicon | None = None,
                 fallback: Any = None, warehouse: Any = None,
                 route_qualitative: Callable[..., AnswerResult | None] | None = None) -> None:
        self.lexicon = lexicon or (store.lexicon if store else Lexicon.load_default())
        if store is None:
            if warehouse is None:
                from finrag_pipeline.core.paths import FinragPaths
                from finrag_pipeline.core.warehouse import Warehouse

                warehouse = Warehouse(FinragPaths.from_env().warehouse)
            store = FactStore(warehouse=warehouse, lexicon=self.lexicon)
        self.store = store
        self.fallback = fallback
        self.route_qualitative = route_qualitative
        self._parser: QueryParser | None = None
        self._judgement_config: JudgementConfig | None = None

    @property
    def judgement_config(self) -> JudgementConfig:
        if self._judgement_config is None:
            self._judgement_config = load_judgement_config()
        return self._judgement_config

    @property
    def parser(self) -> QueryParser:
        if self._parser is None:
            self._parser = QueryParser(self.store.catalog())
        return self._parser

    # ---- steps ----------------------------------------------------------------------------------

    def _years_and_company(self, question: str, periods: Sequence[str] | None) -> tuple[list[str], dict[str, list[int]]]:
        qu = self.parser.parse(question)
        years = dict(qu.fiscal_years)
        glossed = glossed_fiscal_years(question, qu.periods)
        if glossed:
            # "fiscal 2021 (year ended January 29, 2022)": the date glosses the company's own label, which
            # the fact layer reads in the filer's labels; the date adds no second year
            years = {k: glossed for k in (qu.companies or list(years) or ["*"])}
        if periods:
            from finrag_pipeline.core.numbers import years_in

            asked = sorted(set().union(*(years_in(p) for p in periods)), reverse=True)
            if asked:
                years = {k: asked for k in (qu.companies or list(years) or ["*"])}
        return qu.companies, years

    def _candidate_filings(self, companies: list[str], years: list[int], hits: Sequence[Hit]) -> list[FilingFacts]:
        metas = self.store.metas()
        hit_order = {h.filing_id: i for i, h in reversed(list(enumerate(sorted(hits, key=lambda h: h.rank))))}

        def company_ok(m) -> bool:
            return not companies or (m.ticker or m.company) in companies

        pool = [m for m in metas.values() if company_ok(m) and (companies or m.filing_id in hit_order)]
        latest = max(years) if years else None

        def order(m):
            # the filing OF the latest asked year, then later filings that still report it (comparatives)
            gap = (m.fiscal_year - latest) if latest is not None else 0
            fits = 0 if gap == 0 else (1 if 0 < gap <= 2 else 2)
            recency = -m.fiscal_year if latest is None else 0
            return (fits, recency, hit_order.get(m.filing_id, 10**6), m.filing_id)

        out = []
        for m in sorted(pool, key=order):
            f = self.store.filing(m.filing_id)
            if f is not None:
                out.append(f)
        return out

    def _earlier_filings(self, filing: FilingFacts, year: int) -> list[FilingFacts]:
        """The same company's other filings that can report fiscal year ``year`` (its own 10-K first, then
        later ones up to two years after), excluding ``filing``."""
        key = filing.meta.ticker or filing.meta.company
        metas = [m for m in self.store.metas().values() if (m.ticker or m.company) == key
                 and m.filing_id != filing.filing_id and 0 <= m.fiscal_year - year <= 2]
        out = []
        for m in sorted(metas, key=lambda m: (m.fiscal_year - year, m.filing_id)):
            sib = self.store.filing(m.filing_id)
            if sib is not None:
                out.append(sib)
        return out

    def _compute(self, plan: Plan, filing: FilingFacts, segment: str | None = None,
                 extra: dict[str, Concept] | None = None) -> tuple[Decimal, list[FactValue], int, list[Decimal]]:
        """The planned figure in base units (percent as a fraction), its inputs, the display scale, and
        the figures shown beside it (the other years of a choice, the other items of a list)."""
        inputs: dict[tuple[str, int], FactValue] = {}

        def resolve_part(name: str, label: str, whole: Concept, year: int) -> Decimal:
            part = Concept(key=f"{name}: {label}", line_items=[label], statement=whole.statement, expense=whole.expense)
            if (part.key, year) not in inputs:
                fact = filing.lookup(part, year)
                if fact is None:
                    raise MissingInput(name, year)
                inputs[(part.key, year)] = fact
            value = inputs[(part.key, year)].base_value
            return abs(value) if whole.expense or whole.outflow else value

        def resolve(name: str, year: int) -> Decimal:
            if (name, year) not in inputs:
                concept = (extra or {}).get(name) or self.lexicon.concepts.get(name)
                if concept is None:
                    raise PlanError(f"unknown line item {name!r} in formula {plan.formula!r}")
                concept = _hinted(concept, plan.statements)
                fact = filing.lookup(concept, year, segment=segment)
                if fact is None and concept.fallback and not segment:
                    # a line the filing does not print as one row: its parts ("SG&A" = S&M + G&A)
                    return evaluate(parse_formula(concept.fallback), year, resolve)
                if concept.parts_labelled and concept.statement and not segment:
                    # printed only as its kinds ("Cost of services" + "Cost of wireless equipment", Boeing's "Cost of
                    # products" + "Cost of services"): their sum, never one kind read as the whole
                    parts = filing.labels_starting(concept.parts_labelled, concept.statement)
                    named = {normalize_label(x) for c in (extra or {}).values() for x in c.line_items}
                    # a formula naming a part itself ("cost of products plus cost of services") reads the parts as named
                    if parts and not named & set(parts) and (fact is None or normalize_label(fact.label) in parts):
                        return sum((resolve_part(name, label, concept, year) for label in parts), Decimal(0))
                if fact is None and year < filing.meta.fiscal_year - 1:
                    # an earlier year than the filing's comparatives (a 3-year average of balances, a CAGR):
                    # the same company's earlier 10-K that reports it, cited as such
                    fact = next((f for sib in self._earlier_filings(filing, year)
                                 if (f := sib.lookup(concept, year, segment=segment)) is not None), None)
                if fact is None:
                    raise MissingInput(name + (f" (segment {segment})" if segment else ""), year)
                inputs[(name, year)] = fact
            value = inputs[(name, year)].base_value
            # an amount spent is an amount: a filer printing its costs in parentheses (Boeing's "(2,249)"
            # research and development) gives the same margins and ratios as one printing them plain
            spent = (extra or {}).get(name) or self.lexicon.concepts.get(name)
            if name == "income_tax" and not segment:
                return tax_expense(filing, year, value)
            return abs(value) if spent is not None and (spent.outflow or spent.expense) else value

        formula = plan.parsed
        values = [evaluate(formula, y, resolve) for y in plan.years] if plan.years else []
        shown: list[Decimal] = []
        if plan.operation == "list" and values:
            # several figures asked at once: each one computed and cited
            shown = [values[0]] + [evaluate(parse_formula(f), plan.years[0], resolve) for f in plan.also]
        if not values:
            raise PlanError("no fiscal year to compute")
        if plan.operation == "change":
            result = values[0] - values[1]
        elif plan.operation == "pct_change":
            if values[1] == 0:
                raise FormulaError("percent change from zero")
            result = (values[0] - values[1]) / abs(values[1])
        elif plan.operation == "sum_years":
            result = sum(values, Decimal(0))
        elif plan.operation == "average_years":
            result = sum(values, Decimal(0)) / len(values)
        elif plan.operation in ("max_year", "min_year"):
            # a choice between years: the answer is the year; its value and the others support it
            pick = max if plan.operation != "min_year" else min
            # "a lower net loss" is a smaller loss: losses (all <= 0) compare by size
            size = abs if "loss" in plan.quantity.lower() and all(v <= 0 for v in values) else (lambda v: v)
            best = pick(range(len(values)), key=lambda i: size(values[i]))
            plan.years = [plan.years[best]] + [y for i, y in enumerate(plan.years) if i != best]
            values = [values[best]] + [v for i, v in enumerate(values) if i != best]
            shown = values
            result = values[0]
        else:
            result = values[0]
        base = "shares" if plan.unit == "shares" else "USD"
        scales = [f.scale for f in inputs.values() if f.unit == base]
        scale = plan.display_scale or (max(set(scales), key=scales.count) if scales else 1)
        return result, list(inputs.values()), scale, shown

    # ---- the answer -----------------------------------------------------------------------------

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        moved = _WHICH_MOVED_RE.search(question)
        if moved is not None and not _CAUSE_WORDS_RE.search(question):
            # "Which NVIDIA segment saw operating income fall in fiscal 2025?": computed over the segments the filing
            # reports, before the qualitative route (a "which segment" question is no cause question)
            found = self._segments_moved(question, moved, hits, periods)
            if found is not None:
                return found
        # "... if X is not a useful metric, state that and explain why" asks no cause: routed without that clause
        asked = strip_unsuitable_clause(question) if unsuitable_metric(question) else question
        routed = self.route_qualitative(asked, hits, periods) if self.route_qualitative is not None else None
        if routed is not None:  # "what drove / why / which risks" is never answered with a bare figure
            return routed
        question = plain_wording(question)
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        if self._parser is None:  # first answer only: the corpus catalog (company names, fiscal calendars)
            _ = self.parser
            timings["catalog"] = _ms(t0)
        t_plan = time.perf_counter()
        companies, years_by_company = self._years_and_company(question, periods)
        all_years = sorted({y for ys in years_by_company.values() for y in ys}, reverse=True)
        plan: Plan | None
        choice = option_choice(question)
        if choice is not None:
            chosen = self._choose(choice, companies, all_years, hits, timings, t0)
            if chosen is not None:
                return chosen
        share = share_of_whole(question)
        if share is not None:
            shared = self._share_of_whole(share, question, companies, all_years, hits, timings, t0)
            if shared is not None:
                return shared
        faster = growth_comparison(question)
        if faster is not None:
            compared = self._compare_growth(faster, question, companies, all_years, hits, timings, t0)
            if compared is not None:
                return compared
        unsuited = unsuitable_metric(question)
        try:
            # "If gross margin is not a useful metric ..., state that": the condition is no part of the plan
            plan, plan_error = make_plan(strip_unsuitable_clause(question), all_years, self.lexicon), None
        except PlanError as exc:
            plan, plan_error = None, exc
        timings["plan"] = _ms(t_plan)
        row_operands: dict[str, Concept] = {}
        row_filing: FilingFacts | None = None
        if isinstance(plan_error, UnreadOperand):
            rescued = self._plan_with_row_operands(question, all_years, companies, hits, plan_error)
            if isinstance(rescued, UnreadOperand):
                plan_error = rescued  # the operand neither the lexicon nor the filing's rows read
            else:
                plan, row_filing, row_operands = rescued
                plan_error = None
        judgement = read_judgement(question, self.lexicon)
        defined_metric = (judgement is not None and judgement.metric is not None and plan is not None
                          and plan.definition_given and _plans_metric(plan, judgement.metric)
                          and judgement.kind in ("liquidity", "trend", "sign", "threshold")
                          and re.sub(r"\s+", "", plan.formula) != re.sub(r"\s+", "", judgement.metric.formula or ""))
        if defined_metric:
            # the question defines the metric its judgement rests on ("Define the quick ratio as (cash + short-term
            # and other investments + receivables) / current liabilities"): that definition is the metric
            judgement.metric = dataclasses.replace(judgement.metric, formula=plan.formula)
        elif plan is not None and plan.definition_given and (judgement is None or judgement.kind not in (
                "compare", "threshold", "capital_intensive", "high_growth")):
            # a comparison with a number of a quantity the question defines ("Take the liquidity ratio as ...")
            standard = (judgement is not None and judgement.kind in ("sign", "trend", "liquidity")
                        and judgement.metric is not None and plan.concept_key == judgement.metric.key
                        # "Was Boeing liquid? Give the current ratio (...)": the figure is what is asked
                        and not (judgement.kind == "liquidity" and _FIGURE_ASKED_RE.search(question)))
            judgement = threshold_judgement(question, Concept(
                key=plan.concept_key or "asked", aliases=[plan.quantity], formula=plan.formula, unit=plan.unit)) \
                or (judgement if standard else None)
            # "Has free cash flow been positive? Take free cash flow as CFO - capex" (the standard formula): judged
            defined_metric = standard and judgement is not None and judgement.kind in ("sign", "trend", "liquidity")
        if judgement is not None and (defined_metric or judgement.kind in ("capital_intensive", "high_growth")
                                      or not (plan is not None and plan.definition_given
                                              and judgement.kind not in ("compare", "threshold"))):
            # "Is NVIDIA capital-light? Use capex as a % of revenue": the arithmetic named is the rule's own series
            judged = self._judge(question, judgement, companies, all_years, hits, timings, t0,
                                 rows=row_operands, row_filing=row_filing)
            if judged is not None:
                return judged
        if isinstance(plan_error, UnreadOperand):
            # the question wrote a formula this answerer cannot read: say which operand, quote nothing
            return self._abstain(f"cannot compute the formula the question writes: {plan_error}",
                                 {"plan": None, "companies": companies, "missing_operand": plan_error.operand},
                                 timings, t0)
        t_load = time.perf_counter()
        filings = [row_filing] if row_filing is not None else \
            self._candidate_filings(companies, plan.years if plan else all_years[:1], hits)
        timings["load_facts"] = _ms(t_load)  # ~0 once the filings' facts are in memory
        details: dict[str, Any] = {"plan": plan.as_dict() if plan else None, "companies": companies}
        if unsuited:
            details["unsuitable_asked"] = unsuited
        missing: list[str] = []
        tried: list[str] = []
        for filing in filings:
            t1 = time.perf_counter()
            try:
                fplan, segment, extra = self._plan_for(question, plan, all_years, filing)
                if fplan is None:
                    if plan is not None:  # a qualifier that names nothing this filing reports
                        details["unresolved_qualifier"] = extra
                        missing.append(f"{plan.quantity} of '{extra}' (not a segment or line item it reports) "
                                       f"in {filing.filing_id}")
                        tried.append(filing.filing_id)
                    continue
                extra = {**extra, **row_operands}
                if not fplan.years:
                    fplan.years = [filing.meta.fiscal_year]
                    if fplan.operation in ("change", "pct_change"):
                        fplan.years.append(fplan.years[0] - 1)
                if segment:
                    details["segment"] = segment
                if fplan is not plan:
                    details["plan"] = fplan.as_dict()
                value, inputs, scale, supporting = self._compute(fplan, filing, segment, extra)
            except MissingInput as exc:
                label = self._label(exc.name.split(" (segment")[0], extra) + (f" (segment {segment})" if segment else "")
                missing.append(f"{label} for FY{exc.fiscal_year} in {filing.filing_id}")
                tried.append(filing.filing_id)
                continue
            except (FormulaError, PlanError) as exc:
                details["error"] = str(exc)
                return self._abstain(f"cannot compute {fplan.quantity}: {exc}", details, timings, t0)
            finally:
                timings[f"lookup:{filing.filing_id}"] = _ms(t1)
            return self._answered(fplan, filing, value, inputs, scale, supporting, details, timings, t0)
        if plan is None and not missing:
            if self.fallback is None:
                return self._abstain(f"nothing to compute: {plan_error}", details, timings, t0)
            # nothing to compute: a narrative question (or a line the filings do not print) -> quote instead
            result = self.fallback.answer(question, hits, periods)
            result.details = {**result.details, "fallback": getattr(self.fallback, "name", "fallback"),
                              "plan_error": str(plan_error)}
            return result
        if not filings:
            who = ", ".join(companies) or "the retrieved evidence"
            return self._abstain(f"not in the corpus: no filing of {who}", details, timings, t0)
        details["filings_tried"] = tried
        if unsuited and plan is not None and filings:
            return self._unsuitable(unsuited, plan.formula, filings[0], missing[0], details, timings, t0)
        if plan is not None and filings and not details.get("unresolved_qualifier") and plan.years \
                and self.unsuited_for(plan.formula, filings[0], plan.years[0]):
            # gross margin asked of a filer that prints no cost of sales (FedEx): not a useful metric for it
            return self._unsuitable(plan.quantity, plan.formula, filings[0], missing[0], details, timings, t0)
        if (plan is not None and _ZERO_IF_ABSENT_RE.search(question) and plan.operation == "value"
                and not details.get("unresolved_qualifier")   # only a line the statements lack, never a misread
                and len(plan.parsed.names) == 1 and plan.unit == "USD"):
            # "If restructuring costs are not explicitly outlined then state 0": the question's own answer for a line
            # the statements do not print (said so, with where it was looked for)
            timings["total"] = _ms(t0)
            reason = f"{plan.quantity} is not a line of {', '.join(tried)} (not in the filing: {missing[0]})"
            return AnswerResult(f"$0 — {reason}; the question asks for 0 then.", [], "answered",
                                latency_ms=timings["total"], details={**details, "missing": missing, "zero_if_absent": True,
                                                                      "plan": plan.as_dict(), "timings_ms": timings})
        return self._abstain(f"not in the filing: {missing[0]}", {**details, "missing": missing}, timings, t0)

    def _plan_for(self, question: str, plan: Plan | None, years: list[int], filing: FilingFacts):
        """(plan, segment, extra concepts) for one filing. A qualifier must name a segment of the filing,
        or, with the line item, a row label it prints ("deferred revenue"); a question naming no lexicon
        line item may name a row label directly. (None, None, qualifier) when neither resolves."""
        if plan is not None:
            label = filing.find_label_phrase(_strip_company(question, filing))
            if plan.concept_key and label and plan.quantity in label and len(label) > len(plan.quantity):
                # "sales and maturities of marketable securities" is a line of its own, not "sales"
                concept = Concept(key="row_" + re.sub(r"\W+", "_", label).strip("_"), line_items=[label],
                                  statement=filing.label_statement(label, question, plan.statements))
                try:
                    return make_plan(question, years, self.lexicon, line_item=concept), None, {concept.key: concept}
                except PlanError:
                    pass
            qualifier = _without_company(plan.qualifier, filing)
            if not qualifier:
                return plan, None, {}
            # the words as asked ("amazon web services"), else without the company's name ("iphone")
            segment = next((q for q in (plan.qualifier, qualifier) if filing.find_segment(q) == q), None)
            if segment is not None:
                return plan, segment, {}
        label = filing.find_label_phrase(_strip_company(question, filing))
        if label is None:
            return None, None, (_without_company(plan.qualifier, filing) if plan else {})
        concept = Concept(key="row_" + re.sub(r"\W+", "_", label).strip("_"), line_items=[label],
                          statement=filing.label_statement(label, question, plan.statements if plan else ()))
        try:
            return make_plan(question, years, self.lexicon, line_item=concept), None, {concept.key: concept}
        except PlanError:
            return None, None, {}

    def _plan_with_row_operands(self, question: str, years: list[int], companies: list[str], hits: Sequence[Hit],
                                error: UnreadOperand) -> tuple[Plan, FilingFacts, dict[str, Concept]] | UnreadOperand:
        """A formula the question writes with operands that are no lexicon line ("commercial paper plus
        term debt"): each such operand read as the statement row the filing prints under exactly those
        words, and the plan made again. When an operand is no row label of the filing either, the error
        naming it (the answer abstains naming that operand)."""
        hints = statement_hints(question)
        unread, depth = error, 0
        for filing in self._candidate_filings(companies, years[:1], hits):
            lexicon = Lexicon(self.lexicon.concepts.values())  # the shared lexicon is never extended
            rows: dict[str, Concept] = {}
            err: UnreadOperand = error
            for _ in range(8):
                label = filing.statement_label(err.operand or "")
                if label is None:
                    unread = err if len(rows) >= depth else unread
                    depth = max(depth, len(rows))
                    break
                # the key and alias keep the words asked: "non-current term debt" is the row after
                # "Total current liabilities" of the label printed twice
                asked = (err.operand or "").strip().lower()
                key = "row_" + re.sub(r"\W+", "_", normalize_label(asked)).strip("_")
                statement = filing.label_statement(label, question, hints)
                # a cash-flow line the question subtracts ("... less purchases of property and equipment and change in
                # other assets") is the amount paid, as capex is: its printed sign is the statement's, not the formula's
                subtracted = re.search(r"\b(?:less|minus|subtract(?:ing)?|net\s+of)\b[^.;?]{0,120}?(?<![\w&])"
                                       + re.escape(asked) + r"(?![\w&])", question, re.I) is not None
                concept = Concept(key=key, line_items=[label], aliases=[asked], statement=statement,
                                  outflow=statement == "cash_flow" and (bool(_PAYMENT_LABEL_RE.match(label)) or subtracted),
                                  # "Cost of services" printed "(9,283)" is a cost of 9,283, as lexicon costs are
                                  expense=statement == "income_statement" and bool(_COST_LABEL_RE.search(label)))
                lexicon.add(concept)
                rows[key] = concept
                try:
                    plan = make_plan(strip_unsuitable_clause(question), years, lexicon)
                except UnreadOperand as exc:
                    err = exc
                    continue
                except PlanError:
                    break
                plan.notes.append("read as row labels of " + filing.filing_id + ": "
                                  + ", ".join(c.line_items[0] for c in rows.values()))
                return plan, filing, rows
        return unread

    def _label(self, key: str, extra: Any = None) -> str:
        c = (extra or {}).get(key) if isinstance(extra, dict) else None
        c = c or self.lexicon.concepts.get(key)
        return (c.line_items[0] if c and c.line_items else (c.aliases[0] if c and c.aliases else key))

    def _abstain(self, reason: str, details: dict, timings: dict, t0: float) -> AnswerResult:
        timings["total"] = _ms(t0)
        return AnswerResult(f"{reason[:1].upper()}{reason[1:]}.", [], "abstained", latency_ms=timings["total"],
                            details={**details, "reason": reason, "timings_ms": timings})

    def _answered(self, plan: Plan, filing: FilingFacts, value: Decimal, inputs: list[FactValue], scale: int,
                  supporting: list[Decimal], details: dict, timings: dict, t0: float) -> AnswerResult:
        unit = plan.unit
        shown = self._shown(value, unit, scale)
        if unit in ("USD", "shares") and plan.decimals is None:
            # an amount shown in a larger scale than printed ("in USD billions") keeps two decimals: $21.81 billion
            decimals = 0 if shown == shown.to_integral() else (2 if plan.display_scale else 1)
        else:
            decimals = plan.decimals if plan.decimals is not None else DEFAULT_DECIMALS.get(unit, 2)
        rounded = round_decimal(shown, decimals)
        figure = format_result(rounded, unit, decimals, scale)
        if plan.operation == "list":
            figure = "; ".join(
                f"{name}: {format_result(round_decimal(self._shown(v, unit, scale), decimals), unit, decimals, scale)}"
                for name, v in zip(plan.labels, supporting, strict=False))
        if plan.operation in ("max_year", "min_year"):
            word = ("highest" if plan.operation == "max_year" else "lowest") if len(plan.years) > 2 else (
                "higher" if plan.operation == "max_year" else "lower")
            others = ", ".join(f"{format_result(round_decimal(self._shown(v, unit, scale), decimals), unit, decimals, scale)}"
                               f" in FY{y}" for y, v in zip(plan.years[1:], supporting[1:], strict=True))
            figure = f"FY{plan.years[0]} ({word}): {figure} in FY{plan.years[0]} vs {others}"
            details["choice"] = f"FY{plan.years[0]}"
        expression = self._expression(plan, inputs)
        periods = " vs ".join(f"FY{y}" for y in plan.years)
        if plan.operation in ("sum_years", "average_years") and len(plan.years) >= 2:
            # one figure over a range of years, not a comparison: "FY2017 to FY2019" ("vs" reads as two results)
            periods = f"{'average' if plan.operation == 'average_years' else 'sum'} of FY{min(plan.years)} to FY{max(plan.years)}"
        company = display_company(filing.meta.company)
        seg = f" (segment: {details['segment']})" if details.get("segment") else ""
        derived = [] if details.get("segment") else self.derivations(plan.formula, filing, plan.years, inputs)
        if derived:
            details["derived"] = derived
            plan.notes = [*plan.notes, *(d for d in derived if d not in plan.notes)]
            details["plan"] = plan.as_dict()
        # one line asked, read from a combined line ("marketing" from "Sales and marketing"): the answer says so
        combined = (combined_line_note(plan.quantity, inputs[0]) if plan.concept_key and plan.formula == plan.concept_key
                    and len(inputs) == 1 else None)
        if combined:
            details["line_read"] = combined
            periods = f"{periods} ({combined})"
        text = (f"{figure} — {plan.quantity} of {company}{seg}, {periods}. Formula: {expression}"
                + "".join(f"; {d}" for d in derived) + ". "
                "Sources: " + sources_text(inputs, filing.filing_id) + ".")
        unsuited = details.get("unsuitable_asked")
        if unsuited and derived:
            # "If gross margin is not a useful metric for a company like this, state that": the filing prints no line
            # of it; said first, the mechanical figure after
            text = (f"{unsuited[:1].upper()}{unsuited[1:]} is not a useful metric for {company}: its financial "
                    f"statements print no line of it ({'; '.join(derived)}). (Mechanically: {text})")
            details["unsuitable_metric"] = unsuited
        citations = cited(inputs)
        timings["total"] = _ms(t0)
        formula = "; ".join([plan.formula, *plan.also])
        details = {**details, "filing_id": filing.filing_id, "formula": formula, "expression": expression,
                   "operation": plan.operation, "value": str(value), "rounded": str(rounded), "unit": unit,
                   "scale": scale, "figure": figure, "inputs": [i.as_dict() for i in inputs],
                   "disagreements": [d.as_row() for d in filing.disagreements], "timings_ms": timings}
        return AnswerResult(text, citations, "answered", latency_ms=timings["total"], details=details)

    @staticmethod
    def _shown(value: Decimal, unit: str, scale: int) -> Decimal:
        return value * 100 if unit in ("percent", "percentage points") else (
            value / scale if unit in ("USD", "shares") else value)

    def _expression(self, plan: Plan, inputs: list[FactValue]) -> str:
        """'operating income (83,383) / revenue (198,270), USD millions' style, per year."""
        def fmt(f: FactValue) -> str:
            return f"{f.value:,}" + ("" if f.scale == 1 else f" {SCALE_NAME[f.scale]}")

        values = "; ".join(f"{i.line_item} {i.period} = {fmt(i)}" for i in inputs)
        op = {"change": "change = later - earlier", "pct_change": "% change = (later - earlier) / |earlier|",
              "sum_years": "sum over years", "average_years": "average over years"}.get(plan.operation)
        return f"{plan.formula}" + (f"; {op}" if op else "") + f" [{values}]"

    # ---- judgement questions (core/analyst/judgements.py) -------------------------------------------------

    def derivations(self, formula: str, filing: FilingFacts, years: Sequence[int],
                    inputs: Sequence[FactValue] | None = None) -> list[str]:
        """How each line of ``formula`` the filing does not print as one row was derived from its parts (the
        lexicon's ``fallback``): "gross profit derived as revenue - cost_of_revenue (NFLX-2020-10K prints no
        gross profit line)". Said in the answer, its plan and its explanation: a derived figure is never shown as
        if it were printed."""
        out: list[str] = []
        try:
            names = list(parse_formula(formula).names)
        except FormulaError:
            return out
        for name in dict.fromkeys(names):
            concept = self.lexicon.concepts.get(name)
            if concept is None or not concept.fallback or not years:
                continue
            if any(filing.lookup(concept, y) is None for y in years if y is not None):
                out.append(f"{metric_name(concept).lower()} derived as {concept.fallback} ({filing.filing_id} prints "
                           f"no {metric_name(concept).lower()} line)")
                names += parse_formula(concept.fallback).names   # its parts may be derived in turn
        for name in dict.fromkeys(names):
            concept = self.lexicon.concepts.get(name)
            if (concept is not None and concept.parts_labelled and concept.statement and years
                    and any((f := filing.lookup(concept, y)) is None or normalize_label(f.label) in
                            filing.labels_starting(concept.parts_labelled, concept.statement) for y in years if y is not None)):
                parts = filing.labels_starting(concept.parts_labelled, concept.statement)
                summed = inputs is None or any(i.line_item.startswith(name + ": ") for i in inputs)
                if parts and summed:   # (the parts as read by _compute.resolve_part)
                    out.append(f"{metric_name(concept).lower()} derived as the sum of " + " + ".join(
                        f'"{p}"' for p in parts) + f" ({filing.filing_id} prints no total line)")
        return out

    def unsuited_for(self, formula: str, filing: FilingFacts, year: int) -> str | None:
        """The line whose absence makes ``formula`` no useful metric for the filing (the lexicon's
        ``unsuited_without``: gross profit without any cost of sales, printed whole or as its kinds), when the filing's
        income statement was read (its revenue found: a parse that lost the statement abstains instead); else None."""
        try:
            names = list(parse_formula(formula).names)
        except FormulaError:
            return None
        revenue = self.lexicon.concepts.get("revenue")
        for name in dict.fromkeys(names):
            concept = self.lexicon.concepts.get(name)
            needed = self.lexicon.concepts.get(concept.unsuited_without or "") if concept else None
            if needed is None or filing.lookup(concept, year) is not None:
                continue
            if (filing.lookup(needed, year) is None and revenue is not None and filing.lookup(revenue, year) is not None
                    and not (needed.parts_labelled and needed.statement
                             and filing.labels_starting(needed.parts_labelled, needed.statement))):
                return needed.key
        return None

    def _value(self, formula: str, unit: str, year: int, filing: FilingFacts,
               rows: dict[str, Concept] | None = None, segment: str | None = None) -> tuple[Decimal, list[FactValue], int]:
        plan = Plan(formula, formula, [year], "value", unit)
        value, inputs, scale, _ = self._compute(plan, filing, segment, extra=rows)
        return value, inputs, scale

    def _fmt(self, value: Decimal, unit: str, scale: int, asked: int | None = None) -> str:
        """A supporting figure; ``asked``: the rounding the question asks, for a ratio or a percentage (an amount
        keeps its printed form)."""
        decimals = asked if asked is not None and unit not in ("USD", "shares") else DEFAULT_DECIMALS.get(unit, 0)
        return format_result(round_decimal(self._shown(value, unit, scale), decimals), unit, decimals, scale)

    def _judge(self, question: str, judgement: Judgement, companies: list[str], years: list[int],
               hits: Sequence[Hit], timings: dict, t0: float, rows: dict[str, Concept] | None = None,
               row_filing: FilingFacts | None = None) -> AnswerResult | None:
        """Yes/No with the figures it rests on; None when the rule's series cannot be read (the usual
        plan then answers or abstains). ``rows``: operands of the question's own definition read as row
        labels of ``row_filing`` (the one filing they were read in)."""
        cfg = self.judgement_config
        decimals = decimals_asked(question)   # the rounding asked: the judged ratios and percentages are shown at it
        details: dict[str, Any] = {"judgement": {"kind": judgement.kind, "direction": judgement.direction,
                                                 "metric": judgement.metric.key if judgement.metric else None,
                                                 "either": judgement.either},
                                   "companies": companies}
        if judgement.kind == "customer_concentration":
            return self._concentration(hits, details, timings, t0)
        missing: list[str] = []
        filing: FilingFacts | None = None
        for filing in [row_filing] if row_filing is not None else self._candidate_filings(companies, years[:1], hits):
            year = years[0] if years else filing.meta.fiscal_year
            inputs: list[FactValue] = []
            segment = None
            if judgement.segment:
                # "Amazon's International segment": the segment this filing reports under those words
                asked = _without_company(normalize_label(judgement.segment), filing) or ""
                segment = next((q for q in (normalize_label(judgement.segment), asked) if q and filing.find_segment(q) == q),
                               None)
                if segment is None:
                    missing.append(f"segment '{judgement.segment}' (not a segment it reports) in {filing.filing_id}")
                    continue
                details["segment"] = segment
            try:
                decision, series = self._decide(judgement, cfg, year, filing, inputs, years, rows, segment, decimals)
            except MissingInput as exc:
                name, _, seg = exc.name.partition(" (segment")
                missing.append(f"{self._label(name)}{' (segment' + seg if seg else ''} for FY{exc.fiscal_year} in "
                               f"{filing.filing_id}")
                continue
            except (FormulaError, PlanError) as exc:
                missing.append(f"{exc} in {filing.filing_id}")
                continue
            details["judgement"].update({"answer": decision.answer, "rule": decision.rule, "series": series})
            unsuited = unsuitable_metric(question)
            derived = [n for n in judgement.notes if " derived as " in n]
            if unsuited and derived and judgement.kind == "trend":
                # the question allows the metric to be unsuitable and the filing prints no line of it (Amazon prints
                # no gross profit): said, with the mechanical series derived from the lines it does print
                company = display_company(filing.meta.company)
                timings["total"] = _ms(t0)
                text = (f"{unsuited[:1].upper()}{unsuited[1:]} is not a useful metric for {company}: its financial "
                        f"statements print no line of it ({'; '.join(derived)}). (Mechanically: {decision.reason}.) "
                        "Sources: " + sources_text(inputs, filing.filing_id) + ".")
                return AnswerResult(text, cited(inputs), "answered", latency_ms=timings["total"], details={
                    **details, "unsuitable_metric": unsuited, "derived": derived, "filing_id": filing.filing_id,
                    "inputs": [i.as_dict() for i in inputs], "timings_ms": timings})
            return self._judged(decision, filing, inputs, details, timings, t0)
        if missing:
            details["missing"] = missing
            unsuited = unsuitable_metric(question)
            if (not unsuited and judgement.metric is not None and filing is not None and judgement.metric.formula
                    and self.unsuited_for(judgement.metric.formula, filing, years[0] if years else filing.meta.fiscal_year)):
                unsuited = metric_name(judgement.metric).lower()   # a gross margin trend of a filer without cost of sales
            if unsuited and judgement.metric is not None and filing is not None:
                # "If operating margin is not a useful metric for a company like this, state that": the filing
                # prints no line the judged metric needs (Nike reports no operating income)
                metric = judgement.metric
                return self._unsuitable(unsuited, metric.formula or metric.key, filing, missing[0], details, timings, t0)
            return self._abstain(f"cannot judge ({judgement.kind.replace('_', ' ')}): not in the filing: {missing[0]}",
                                 details, timings, t0)
        return None

    def _decide(self, judgement: Judgement, cfg: JudgementConfig, year: int, filing: FilingFacts,
                inputs: list[FactValue], asked: Sequence[int] = (),
                rows: dict[str, Concept] | None = None, segment: str | None = None,
                decimals: int | None = None) -> tuple[Decision, list[dict]]:
        def fmt(v: Decimal, unit: str, scale: int) -> str:  # ratios and percentages at the rounding asked
            return self._fmt(v, unit, scale, decimals)

        def value(formula: str, unit: str, y: int) -> tuple[Decimal, int]:
            v, used, scale = self._value(formula, unit, y, filing, rows, segment)
            inputs.extend(i for i in used if i not in inputs)
            return v, scale

        if judgement.kind == "trend":
            metric = judgement.metric
            unit = metric.unit or "USD"
            formula = metric.formula or (f"abs({metric.key})" if metric.outflow else metric.key)
            # the years asked; else a profile over the configured years; else the year against the prior one
            first = min(asked) if len(asked) >= 2 else (year - cfg.trend.years + 1 if judgement.profile else year - 1)

            def series(f: str) -> tuple[list[tuple[int, Decimal]], int]:
                points: list[tuple[int, Decimal]] = []
                scale = 1
                for y in range(first, year + 1):
                    try:
                        v, scale = value(f, unit, y)
                        points.append((y, v))
                    except MissingInput:
                        if y == year:
                            raise
                return points, scale

            points, scale = series(formula)
            if len(points) < 2 and "avg(" in formula:
                # a 10-K prints two balance sheets: an average balance has one year only; the trend is read
                # on year-end balances instead (said in the answer)
                inputs.clear()
                formula = re.sub(r"avg\((\w+)\)", r"\1", formula)
                points, scale = series(formula)
                judgement.notes.append("year-end balances (the filing prints two balance sheets)")
            if len(points) < 2:
                raise MissingInput(metric.key, year - 1)
            judgement.notes += [d for d in self.derivations(formula, filing, [y for y, _ in points], inputs)
                                if d not in judgement.notes and not segment]
            decision = decide_trend(points, metric, judgement.direction, unit, cfg.trend,
                                    lambda v: fmt(v, unit, scale), material=judgement.profile)
            if judgement.notes:
                decision.reason += "; " + "; ".join(judgement.notes)
            return decision, [{"fiscal_year": y, "value": str(v)} for y, v in points]
        if judgement.kind == "capital_intensive":
            rule = cfg.capital_intensive
            found: list[tuple[str, Decimal, float]] = []
            unread: list[MissingInput] = []
            for name, formula, floor in (("capex / revenue", "abs(capital_expenditure) / revenue", rule.capex_to_revenue_min),
                                         ("net PP&E / total assets", "ppe / total_assets", rule.ppe_to_assets_min)):
                try:
                    found.append((name, value(formula, "percent", year)[0], floor))
                except MissingInput as exc:
                    unread.append(exc)
            yes = any(v >= Decimal(str(floor)) for _, v, floor in found)
            if unread and not yes:
                # either test says Yes: a No needs both, so a missing one makes the answer abstain naming it (a No on
                # half the rule would be a guess)
                raise unread[0]
            reason = "; ".join(f"{n} {fmt(v, 'percent', 1)} in FY{year} ({'at or above' if v >= Decimal(str(f)) else 'below'}"
                               f" {f:.0%})" for n, v, f in found)
            light = judgement.direction == "down"  # "capital-light", "asset-light": the same rule, inverted
            return Decision("Yes" if yes != light else "No", reason,
                            f"{'capital light: not ' if light else ''}capital intensive: capex / revenue >= "
                            f"{rule.capex_to_revenue_min:.0%} or net PP&E / total assets >= {rule.ppe_to_assets_min:.0%}"), [
                {"metric": n, "fiscal_year": year, "value": str(v)} for n, v, _ in found]
        if judgement.kind == "high_growth":
            rule = cfg.high_growth
            now, scale = value("revenue", "USD", year)
            before, _ = value("revenue", "USD", year - 1)
            growth = (now - before) / abs(before)
            floor = judgement.threshold if judgement.threshold is not None else Decimal(str(rule.revenue_growth_min))
            strict = judgement.strict
            yes = growth > floor if strict else growth >= floor
            reason = (f"revenue grew {fmt(growth, 'percent', 1)} in FY{year} ({fmt(now, 'USD', scale)} vs "
                      f"{fmt(before, 'USD', scale)} in FY{year - 1})")
            return Decision("Yes" if yes else "No", reason,
                            f"high growth: year-over-year revenue growth {'>' if strict else '>='} {floor:.0%}"
                            + (" (the question's threshold)" if judgement.threshold is not None else "")), [
                {"metric": "revenue growth", "fiscal_year": year, "value": str(growth)}]
        if judgement.kind == "compare":
            a, b = judgement.metric, judgement.other
            unit = a.unit or "USD"
            if (b.unit or "USD") != unit:
                raise PlanError(f"{a.key} ({unit}) and {b.key} ({b.unit or 'USD'}) are not comparable")
            va, scale = value(a.formula or (f"abs({a.key})" if a.outflow else a.key), unit, year)
            vb, _ = value(b.formula or (f"abs({b.key})" if b.outflow else b.key), unit, year)
            yes = va > vb if judgement.direction == "up" else va < vb
            reason = (f"{metric_name(a).lower()} {fmt(va, unit, scale)} vs {metric_name(b).lower()} "
                      f"{fmt(vb, unit, scale)} in FY{year}")
            return Decision("Yes" if yes else "No", reason,
                            f"compare: {a.key} {'>' if judgement.direction == 'up' else '<'} {b.key}",
                            "Higher" if va > vb else ("Lower" if va < vb else "Equal")), [
                {"metric": a.key, "fiscal_year": year, "value": str(va)},
                {"metric": b.key, "fiscal_year": year, "value": str(vb)}]
        if judgement.kind == "threshold":
            metric = judgement.metric
            unit = metric.unit or "USD"
            v, scale = value(metric.formula or (f"abs({metric.key})" if metric.outflow else metric.key), unit, year)
            # an amount: "10,000 million" in base units; a bare "50,000" in the statements' own unit
            given = judgement.threshold_scale or scale
            threshold = judgement.threshold * given if unit == "USD" else judgement.threshold
            yes = v > threshold if judgement.direction == "up" else v < threshold
            reason = (f"{metric_name(metric).lower()} was {fmt(v, unit, scale)} in FY{year}, "
                      f"{'above' if v > threshold else ('below' if v < threshold else 'equal to')} "
                      f"{fmt(threshold, unit, scale)}")
            return Decision("Yes" if yes else "No", reason,
                            f"threshold: {metric.key} {'>' if judgement.direction == 'up' else '<'} {threshold}",
                            "Higher" if v > threshold else ("Lower" if v < threshold else "Equal")), [
                {"metric": metric.key, "fiscal_year": year, "value": str(v)}]
        if judgement.kind == "sign":
            metric = judgement.metric
            unit = metric.unit or "USD"
            v, scale = value(metric.formula or (f"abs({metric.key})" if metric.outflow else metric.key), unit, year)
            positive = v > 0
            yes = positive == (judgement.direction == "up")
            where = f" of the {segment} segment" if segment else ""
            reason = f"{metric_name(metric).lower()}{where} was {fmt(v, unit, scale)} in FY{year}"
            try:  # the year before, for "did it become profitable"
                before, _ = value(metric.formula or (f"abs({metric.key})" if metric.outflow else metric.key), unit, year - 1)
                reason += f", after {fmt(before, unit, scale)} in FY{year - 1}"
            except (MissingInput, FormulaError):
                pass
            return Decision("Yes" if yes else "No", reason, f"sign: {metric.key} {'>' if judgement.direction == 'up' else '<'} 0"), [
                {"metric": metric.key, "fiscal_year": year, "value": str(v)}]
        if judgement.kind == "liquidity":
            rule = cfg.liquidity
            metric = judgement.metric or self.lexicon.concepts["current_ratio"]
            # the ratio the question names; one whose input the filing does not print abstains naming it (a verdict
            # on another ratio than the one asked would be a guess)
            ratio, _ = value(metric.formula or metric.key, "ratio", year)
            floor = judgement.threshold if judgement.threshold is not None else (
                rule.quick_ratio_min if metric.key == "quick_ratio" else rule.current_ratio_min)
            yes = ratio > Decimal(str(floor)) if judgement.strict else ratio >= Decimal(str(floor))
            reason = (f"{metric_name(metric).lower()} {fmt(ratio, 'ratio', 1)} at the end of FY{year} "
                      f"({('above' if judgement.strict else 'at or above') if yes else ('not above' if judgement.strict else 'below')}"
                      f" {floor:.2f}: current obligations "
                      f"{'covered' if yes else 'not covered'} by {'quick' if metric.key == 'quick_ratio' else 'current'} assets)")
            if judgement.notes:
                reason += "; " + "; ".join(judgement.notes)
            return Decision("Yes" if yes else "No", reason,
                            f"healthy liquidity: {metric.key} {'>' if judgement.strict else '>='} {floor}"), [
                {"metric": metric.key, "fiscal_year": year, "value": str(ratio)}]
        raise PlanError(f"no rule for the judgement {judgement.kind!r}")

    def _segments_moved(self, question: str, moved: re.Match, hits: Sequence[Hit],
                        periods: Sequence[str] | None) -> AnswerResult | None:
        """The segments whose line moved in the asked direction in the asked year (against the year before), each
        with its two figures; with "the most" only the largest move. None when the question names no line or the
        filing reports no segment figures of it (the usual route then answers)."""
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        rest = moved.group("rest")
        line = next((m.concept for m in self.lexicon.match(rest) if not m.concept.formula), None)
        if line is None:
            return None
        down = bool(_DOWN_WORDS_RE.search(rest))
        most = bool(re.search(r"\b(?:most|largest|biggest|fastest|highest|greatest)\b", rest, re.I))
        companies, years_by_company = self._years_and_company(question, periods)
        years = sorted({y for ys in years_by_company.values() for y in ys}, reverse=True)
        for filing in self._candidate_filings(companies, years[:1], hits):
            year = years[0] if years else filing.meta.fiscal_year
            seen: set[tuple] = set()
            moves: list[tuple[str, Decimal, FactValue, FactValue]] = []
            # reporting segments report an operating result; product lines, regions and customer groups that also
            # break a total down (net service sales, Germany, Government) do not
            profit = self.lexicon.concepts["operating_income"]
            for seg, printed in sorted(filing.segments().items()):
                if line.key != profit.key and filing.lookup(profit, year, segment=seg) is None:
                    continue
                now, before = filing.lookup(line, year, segment=seg), filing.lookup(line, year - 1, segment=seg)
                if now is None or before is None:
                    continue
                key = (now.source.table_id, now.source.row_index, now.source.concept, now.base_value)
                if key in seen:
                    continue  # the same row under two names ("aws" and "amazon web services")
                seen.add(key)
                moves.append((printed, now.base_value - before.base_value, now, before))
            if len(moves) < 2:
                continue
            chosen = [m for m in moves if (m[1] < 0 if down else m[1] > 0)]
            if most and chosen:
                # "grew the most in percentage terms", "fastest", "growth rate": the largest relative move
                rate = re.search(r"\b(?:rate|percent(?:age)?|relative|fastest|slowest)\b|%", question, re.I)
                chosen = [max(chosen, key=lambda m: abs(m[1]) / abs(m[3].base_value) if rate and m[3].base_value
                              else abs(m[1]))]
            name = metric_name(line).lower()
            said = "; ".join(
                f"{seg}: {name} {self._fmt(now.base_value, 'USD', now.scale)} in FY{year} vs "
                f"{self._fmt(before.base_value, 'USD', now.scale)} in FY{year - 1}"
                + (f", {'down' if d < 0 else 'up'} {self._fmt(abs(d) / abs(before.base_value), 'percent', 1)}"
                   if before.base_value else "") for seg, d, now, before in chosen)
            word = "fell" if down else "rose"
            text = (said + "." if chosen else f"None: no segment's {name} {word} in FY{year}.") + (
                f" Segments read: {', '.join(m[0] for m in moves)}.")
            inputs = [f for m in (chosen or moves) for f in (m[2], m[3])]
            citations = cited(inputs)
            timings["total"] = _ms(t0)
            return AnswerResult(text, citations, "answered", latency_ms=timings["total"],
                                details={"segments_moved": [m[0] for m in chosen], "metric": line.key,
                                         "filing_id": filing.filing_id, "inputs": [f.as_dict() for f in inputs],
                                         "timings_ms": timings})
        return None

    def _share_of_whole(self, asked, question: str, companies: list[str], years: list[int], hits: Sequence[Hit],
                        timings: dict, t0: float) -> AnswerResult | None:
        """"What percentage of Apple's net sales came from iPhone?": the part's line (a segment or a row of the
        filing) over the consolidated line, percent. None when the whole names no lexicon line (the usual
        plan then answers); an abstention naming the part when no filing reports it apart from the total."""
        line = next((m.concept for m in self.lexicon.match(asked.whole) if not m.concept.formula), None)
        if any(line is None or m.concept.key != line.key for m in self.lexicon.match(asked.part)):
            return None  # "cost of sales as a % of total net sales": a ratio of two lines, the usual plan reads it
        printed_total = line is None
        if printed_total:
            # a whole outside the lexicon ("Boeing's total backlog at the end of 2021"): the total row a table
            # prints, whose part is a component row of the same table
            label = re.sub(r"^(?:[\w.&-]+(?:\s+[\w.&-]+)?['’]s|its|the|their)\s+", "", asked.whole.strip(), flags=re.I)
            label = re.split(r"\s+(?:at|as\s+of|in|for|during|over|on)\s+", label, maxsplit=1)[0]
            label = normalize_label(re.sub(r"\b(?:fy|fiscal)?\s*'?\d{4}\b", " ", label, flags=re.I))
            if not label:
                return None
            line = Concept(key="row_" + re.sub(r"\W+", "_", label).strip("_"), aliases=[label],
                           line_items=list(dict.fromkeys([label if label.startswith("total") else f"total {label}",
                                                          label])))
        details: dict[str, Any] = {"share_of_whole": {"whole": line.key, "part": asked.part}, "companies": companies}
        missing: list[str] = []
        for filing in self._candidate_filings(companies, years[:1], hits):
            year = years[0] if years else filing.meta.fiscal_year
            part, whole = self._option_fact(filing, line, asked.part, year), filing.lookup(line, year)
            if (part is None or whole is None or whole.base_value == 0 or part.source == whole.source
                    or (printed_total and part.source.table_id != whole.source.table_id)):
                missing.append(f"'{asked.part}' apart from the total {metric_name(line).lower()} for FY{year} in "
                               f"{filing.filing_id}")
                continue
            name = f"share of {metric_name(line).lower()} from {asked.part}"
            plan = Plan(name, f"{line.key} ({asked.part}) / {line.key}", [year], "value", "percent",
                        decimals=decimals_asked(question))
            value = abs(part.base_value) / abs(whole.base_value)
            return self._answered(plan, filing, value, [part, whole], 1, [], details, timings, t0)
        if missing:
            return self._abstain(f"cannot compute the share: no {missing[0]}", {**details, "missing": missing},
                                 timings, t0)
        return None

    def _compare_growth(self, asked, question: str, companies: list[str], years: list[int], hits: Sequence[Hit],
                        timings: dict, t0: float) -> AnswerResult | None:
        """"Did Services grow faster than Products in FY2021?": each one's year-over-year growth of the line the
        question names (revenue when it names none), each a segment or a row of the filing; Yes/No by which grew
        faster. None when an option is neither (the usual plan then answers or abstains)."""
        line = next((m.concept for m in self.lexicon.match(question) if not m.concept.formula
                     and m.concept.statement == "income_statement"), self.lexicon.concepts["revenue"])
        details: dict[str, Any] = {"judgement": {"kind": "growth_comparison", "metric": line.key,
                                                 "options": [asked.first, asked.second]}, "companies": companies}
        missing: list[str] = []
        for filing in self._candidate_filings(companies, years[:1], hits):
            year = years[0] if years else filing.meta.fiscal_year
            growth: list[tuple[str, Decimal, FactValue, FactValue]] = []
            for option in (asked.first, asked.second):
                # a line item of its own ("net sales" vs "operating income"), else a segment or row of the line
                own = resolve_operand(option, self.lexicon)
                if not _without_company(normalize_label(option), filing):
                    own = line  # "Did Nike's revenue grow faster than its cost of sales": the company's own line
                    option = metric_name(line).lower()
                if own is not None and not own.formula:
                    now, before = (filing.lookup(own, y) for y in (year, year - 1))
                else:
                    now, before = (self._option_fact(filing, line, option, y) for y in (year, year - 1))
                if now is None or before is None or before.base_value == 0:
                    missing.append(f"'{option}' for FY{year - 1} and FY{year} in {filing.filing_id}")
                    break
                growth.append((option, (now.base_value - before.base_value) / abs(before.base_value), now, before))
            if len(growth) < 2:
                continue
            if growth[0][2].source == growth[1][2].source:
                # both options read as the same row (a total): nothing to compare, never a forced answer
                missing.append(f"'{asked.first}' and '{asked.second}' apart (both read as "
                               f"{growth[0][2].source.row_label!r}) in {filing.filing_id}")
                continue
            (a, ga, a1, a0), (b, gb, b1, b0) = growth
            yes = ga < gb if asked.slower else ga > gb
            scale = a1.scale

            said = [f"{name} {'grew' if g >= 0 else 'fell'} {self._fmt(abs(g), 'percent', 1)} "
                    f"({self._fmt(old.base_value, 'USD', scale)} in FY{year - 1} to "
                    f"{self._fmt(new.base_value, 'USD', scale)} in FY{year})" for name, g, new, old in growth]
            decision = Decision("Yes" if yes else "No", f"{said[0]} while {said[1]}",
                                f"growth comparison: year-over-year growth of {a} {'<' if asked.slower else '>'} {b}")
            details["judgement"].update({"answer": decision.answer, "rule": decision.rule,
                                         "series": [{"option": n, "growth": str(g)} for n, g, _, _ in growth]})
            return self._judged(decision, filing, [a1, a0, b1, b0], details, timings, t0)
        if missing:
            return self._abstain(f"cannot compare growth: no segment or line item {missing[0]}",
                                 {**details, "missing": missing}, timings, t0)
        return None

    def _judged(self, decision: Decision, filing: FilingFacts, inputs: list[FactValue], details: dict,
                timings: dict, t0: float) -> AnswerResult:
        company = display_company(filing.meta.company)
        said = decision.word if (details.get("judgement") or {}).get("either") and decision.word else decision.answer
        text = (f"{said}, because {decision.reason} ({company}). Rule: {decision.rule}. Sources: "
                + sources_text(inputs, filing.filing_id) + ".")
        citations = cited(inputs)
        timings["total"] = _ms(t0)
        details = {**details, "filing_id": filing.filing_id, "figure": decision.answer,
                   "inputs": [i.as_dict() for i in inputs], "timings_ms": timings}
        return AnswerResult(text, citations, "answered", latency_ms=timings["total"], details=details)

    _CUSTOMER_SHARE_RE = re.compile(r"(?P<pct>\d{1,2}(?:\.\d+)?)\s*%\s+(?:or\s+more\s+)?of\s+(?:our\s+|the\s+company'?s\s+|"
                                    r"its\s+|total\s+|consolidated\s+)*(?:net\s+)?(?:revenue|revenues|sales|net\s+sales)", re.I)
    _NO_CUSTOMER_RE = re.compile(r"\bno\s+(?:single\s+|one\s+|individual\s+)?customer\b[^.]{0,80}?\b(?:accounted|represented|"
                                 r"exceeded|comprised)", re.I)

    def _concentration(self, hits: Sequence[Hit], details: dict, timings: dict, t0: float) -> AnswerResult:
        """Customer concentration from the retrieved text: a customer at or above the configured share
        of revenue (10%, the SEC's disclosure threshold) is a Yes; "no customer accounted for ..." a No."""
        floor = self.judgement_config.customer_concentration.share_min * 100
        for hit in sorted(hits, key=lambda h: h.rank):
            for sentence in re.split(r"(?<=[.;])\s+", hit.text):
                if not re.search(r"\bcustomers?\b", sentence, re.I):
                    continue
                if self._NO_CUSTOMER_RE.search(sentence):
                    return self._quoted("No", f"no single customer reaches {floor:.0f}% of revenue: \"{sentence.strip()}\"",
                                        hit, details, timings, t0)
                # "Customers A, B and C represented 12%, 11% and 11% of total revenue": every share listed
                shares = [float(m.group(1)) for m in re.finditer(r"(\d{1,2}(?:\.\d+)?)\s*%", sentence)] \
                    if self._CUSTOMER_SHARE_RE.search(sentence) else []
                if shares and max(shares) >= floor:
                    return self._quoted("Yes", f"a customer accounts for {max(shares):g}% of revenue, at or above "
                                        f"{floor:.0f}%: \"{sentence.strip()}\"", hit, details, timings, t0)
        return self._abstain("insufficient context: the retrieved text states no customer's share of revenue",
                             details, timings, t0)

    def _quoted(self, answer: str, reason: str, hit: Hit, details: dict, timings: dict, t0: float) -> AnswerResult:
        timings["total"] = _ms(t0)
        details = {**details, "figure": answer, "filing_id": hit.filing_id}
        details["judgement"] = {**details.get("judgement", {}), "answer": answer}
        return AnswerResult(f"{answer}, because {reason}", [(hit.filing_id, int(hit.page_start or 0), hit.chunk_id)],
                            "answered", latency_ms=timings["total"], details=details)

    def _unsuitable(self, metric: str, formula: str, filing: FilingFacts, missing: str, details: dict,
                    timings: dict, t0: float) -> AnswerResult:
        """The question allows the metric to be unsuitable and the filing prints no line it needs: say so."""
        company = display_company(filing.meta.company)
        line = missing.split(" for FY")[0]
        text = (f"{metric[:1].upper()}{metric[1:]} is not a useful metric for {company}: its financial statements "
                f"print no {line} line ({missing}), so {metric} ({formula}) cannot be computed from what it "
                f"reports; its results are better read through the lines it does report.")
        timings["total"] = _ms(t0)
        return AnswerResult(text, [], "answered", latency_ms=timings["total"],
                            details={**details, "unsuitable_metric": metric, "missing": [missing], "timings_ms": timings})

    # ---- a choice among named options ("Which of iPad, Mac or iPhone brought Apple the most top line?") -----

    def _option_fact(self, filing: FilingFacts, concept: Concept, option: str, year: int) -> FactValue | None:
        """The option's figure: the concept for the segment it names, else the statement row it names
        ("Net service sales")."""
        segment = filing.find_segment(option)
        fact = filing.lookup(concept, year, segment=segment) if segment else None
        if fact is None:
            label = filing.find_label_phrase(option)
            if label and normalize_label(option) in label:
                row = Concept(key="row_" + re.sub(r"\W+", "_", label).strip("_"), line_items=[label],
                              statement=filing.label_statement(label, option))
                fact = filing.lookup(row, year)
        return fact

    def _choose(self, choice, companies: list[str], years: list[int], hits: Sequence[Hit], timings: dict,
                t0: float) -> AnswerResult | None:
        # "Among operations, investing, and financing activities, which brought in the most cash flow?": each option
        # is the net cash flow of that activity (the cash-flow statement's three totals)
        activity = {o: next((key for key, pattern in _ACTIVITIES if re.search(pattern, o, re.I)), None)
                    for o in choice.options}
        by_activity = all(activity.values()) and len(set(activity.values())) == len(activity)
        named = [m for m in self.lexicon.match(choice.rest) if not m.concept.formula]
        if not named and not by_activity:
            return None
        if by_activity:
            concept, quantity = Concept(key="net_cash_flow", aliases=["net cash flow"], unit="USD"), "net cash flow"
        else:
            concept, quantity = named[0].concept, named[0].alias
        missing: list[str] = []
        details: dict[str, Any] = {"choice_options": choice.options, "companies": companies}
        for filing in self._candidate_filings(companies, years[:1], hits):
            year = years[0] if years else filing.meta.fiscal_year
            facts = [(o, filing.lookup(self.lexicon.concepts[activity[o]], year) if by_activity
                      else self._option_fact(filing, concept, o, year)) for o in choice.options]
            lost = [o for o, f in facts if f is None]
            if lost:
                missing.append(f"{quantity} of '{lost[0]}' for FY{year} in {filing.filing_id}")
                continue
            pick = max if choice.pick == "max" else min
            ordered = sorted(facts, key=lambda of: of[1].base_value, reverse=choice.pick == "max")
            best = pick(facts, key=lambda of: of[1].base_value)[0]
            word = "highest" if choice.pick == "max" else "lowest"
            unit = "USD" if concept.unit in (None, "USD") else concept.unit
            figures = "; ".join(f"{o} {self._fmt(f.base_value, unit, f.scale)}" for o, f in ordered)
            company = display_company(filing.meta.company)
            text = f"{best} had the {word} {quantity} of {company} in FY{year}: {figures}."
            citations = cited([f for _, f in facts])
            timings["total"] = _ms(t0)
            details.update({"choice": best, "filing_id": filing.filing_id, "figure": best,
                            "inputs": [f.as_dict() for _, f in facts], "timings_ms": timings})
            return AnswerResult(text, citations, "answered", latency_ms=timings["total"], details=details)
        if missing:
            return self._abstain(f"not in the filing: {missing[0]}", {**details, "missing": missing}, timings, t0)
        return None
