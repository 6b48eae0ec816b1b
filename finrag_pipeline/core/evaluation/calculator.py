"""The ``calculator`` answerer: statement line items and XBRL facts, exact arithmetic, cited inputs.

For a question it (1) reads the company and fiscal years (query understanding over the corpus
catalog, or the QA item's ``periods``), (2) plans the quantity and the arithmetic
(core/facts/plan.py: a lexicon formula, a definition given in the question, change, % change,
sum, average, per share, ratio, days), (3) looks every input up in the filing's fact layer
(core/facts/store.py), (4) computes with exact decimals and rounds as asked, and (5) answers with
one figure, its unit and the formula, citing the table row (chunk id + page) or XBRL fact of every
input. A missing input is an abstention that names it. Plan, inputs, formula and timings are in
``AnswerResult.details``.

Qualitative questions ("what drove ...", "why ...", "which risks ...": the one rule of
core/retrieval/question_kind.py) go to the narrative answerer, never to a figure; questions that name
no line item or metric otherwise go to the extractive answerer.
"""

from __future__ import annotations

import re
import string
import time
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from finrag_pipeline.core.chunking.text import short_company
from finrag_pipeline.core.evaluation.answerer_plugins import register_answerer
from finrag_pipeline.core.evaluation.answerers import (
    AnswerResult,
    Citation,
    ExtractiveAnswerer,
    routed_to_narrative,
)
from finrag_pipeline.core.facts.formula import FormulaError, MissingInput, evaluate, parse_formula
from finrag_pipeline.core.facts.model import FactValue
from finrag_pipeline.core.facts.plan import Plan, PlanError, make_plan
from finrag_pipeline.core.facts.store import FactStore, FilingFacts, normalize_label
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.numbers import SCALE_NAME, format_figure
from finrag_pipeline.core.retrieval.lexicon import Concept, Lexicon
from finrag_pipeline.core.retrieval.query_understanding import QueryParser

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


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def round_decimal(value: Decimal, decimals: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def format_result(value: Decimal, unit: str, decimals: int, scale: int = 1) -> str:
    """'42.1%', '-50.8%', '$12,248 million', '1.53', '45.2 days', '$6.11 per share' (core/numbers.py)."""
    return format_figure(value, unit, decimals, scale)


@register_answerer("calculator")
class CalculatorAnswerer:
    """Offline analyst answerer. ``store`` gives the facts (default: the warehouse of FINRAG_HOME,
    read per filing on first use); without hits the question's company picks the filing."""

    name = "calculator"

    def __init__(self, store: FactStore | None = None, *, lexicon: Lexicon | None = None,
                 fallback: Any = None, warehouse: Any = None) -> None:
        self.lexicon = lexicon or (store.lexicon if store else Lexicon.load_default())
        if store is None:
            if warehouse is None:
                from finrag_pipeline.core.paths import FinragPaths
                from finrag_pipeline.core.warehouse import Warehouse

                warehouse = Warehouse(FinragPaths.from_env().warehouse)
            store = FactStore(warehouse=warehouse, lexicon=self.lexicon)
        self.store = store
        self.fallback = fallback if fallback is not None else ExtractiveAnswerer()
        self._parser: QueryParser | None = None

    @property
    def parser(self) -> QueryParser:
        if self._parser is None:
            self._parser = QueryParser(self.store.catalog())
        return self._parser

    # ---- steps ----------------------------------------------------------------------------------

    def _years_and_company(self, question: str, periods: Sequence[str] | None) -> tuple[list[str], dict[str, list[int]]]:
        qu = self.parser.parse(question)
        years = dict(qu.fiscal_years)
        if periods:
            from finrag_pipeline.core.evaluation.answer_metrics import years_in

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

    def _compute(self, plan: Plan, filing: FilingFacts, segment: str | None = None,
                 extra: dict[str, Concept] | None = None) -> tuple[Decimal, list[FactValue], int, list[Decimal]]:
        """The planned figure in base units (percent as a fraction), its inputs, the display scale, and
        the figures shown beside it (the other years of a choice, the other items of a list)."""
        inputs: dict[tuple[str, int], FactValue] = {}

        def resolve(name: str, year: int) -> Decimal:
            if (name, year) not in inputs:
                concept = (extra or {}).get(name) or self.lexicon.concepts.get(name)
                if concept is None:
                    raise PlanError(f"unknown line item {name!r} in formula {plan.formula!r}")
                fact = filing.lookup(concept, year, segment=segment)
                if fact is None:
                    raise MissingInput(name + (f" (segment {segment})" if segment else ""), year)
                inputs[(name, year)] = fact
            return inputs[(name, year)].base_value

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
        routed = routed_to_narrative(question, hits, periods)
        if routed is not None:  # "what drove / why / which risks" is never answered with a bare figure
            return routed
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        if self._parser is None:  # first answer only: the corpus catalog (company names, fiscal calendars)
            _ = self.parser
            timings["catalog"] = _ms(t0)
        t_plan = time.perf_counter()
        companies, years_by_company = self._years_and_company(question, periods)
        all_years = sorted({y for ys in years_by_company.values() for y in ys}, reverse=True)
        plan: Plan | None
        try:
            plan, plan_error = make_plan(question, all_years, self.lexicon), None
        except PlanError as exc:
            plan, plan_error = None, exc
        timings["plan"] = _ms(t_plan)
        t_load = time.perf_counter()
        filings = self._candidate_filings(companies, plan.years if plan else all_years[:1], hits)
        timings["load_facts"] = _ms(t_load)  # ~0 once the filings' facts are in memory
        details: dict[str, Any] = {"plan": plan.as_dict() if plan else None, "companies": companies}
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
            # nothing to compute: a narrative question (or a line the filings do not print) -> quote instead
            result = self.fallback.answer(question, hits, periods)
            result.details = {**result.details, "fallback": getattr(self.fallback, "name", "fallback"),
                              "plan_error": str(plan_error)}
            return result
        if not filings:
            who = ", ".join(companies) or "the retrieved evidence"
            return self._abstain(f"not in the corpus: no filing of {who}", details, timings, t0)
        details["filings_tried"] = tried
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
                                  statement=filing.label_statement(label, question))
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
                          statement=filing.label_statement(label, question))
        try:
            return make_plan(question, years, self.lexicon, line_item=concept), None, {concept.key: concept}
        except PlanError:
            return None, None, {}

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
            decimals = 0 if shown == shown.to_integral() else 1
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
        company = short_company(filing.meta.company)
        company = string.capwords(company.lower()) if company.isupper() else company
        seg = f" (segment: {details['segment']})" if details.get("segment") else ""
        text = (f"{figure} — {plan.quantity} of {company}{seg}, {periods}. Formula: {expression}. "
                f"Sources: " + "; ".join(f"{i.period} {i.label}: {i.source.describe()}" for i in inputs) + ".")
        citations: list[Citation] = []
        for i in inputs:
            cit = (i.source.filing_id, int(i.source.page or 0), i.source.chunk_id)
            if cit not in citations:
                citations.append(cit)
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
