"""Metric questions: a figure the filing does not print, its definition in the question, the
reference computed exactly from statement rows / XBRL facts through the fact layer.

"What was Microsoft's operating margin in fiscal 2022, defined as operating profit divided by top
line? Give it as a percentage rounded to one decimal place." -> 42.1% (83,383 / 198,270).

* formulas are the lexicon's (assets_config/lexicon.yaml ``formula``): one place per metric;
* inputs are read with ``FilingFacts.lookup`` (core/analyst/store.py), the calculator's own lookup;
* wording comes from assets_config/phrasing.yaml, not from the lexicon's aliases;
* every input (line item x fiscal year) is one evidence group: the table-row chunk that prints it
  and every other chunk stating the same figure, so a ratio over two statements is multi-page;
* a metric with any input missing (or without evidence, or dividing by zero) is skipped and counted.
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from finrag_pipeline.core.analyst.formula import FormulaError, MissingInput, evaluate, parse_formula
from finrag_pipeline.core.analyst.model import FactValue
from finrag_pipeline.core.analyst.store import FilingFacts
from finrag_pipeline.core.models import EvidencePlace, FilingMeta, QAItem, stable_id
from finrag_pipeline.core.numbers import SCALE_NAME, digits_key
from finrag_pipeline.core.qa.config import QAConfig
from finrag_pipeline.core.qa.evidence import EvidenceIndex
from finrag_pipeline.core.qa.phrasing import MetricPhrasing, PhrasingVocabulary
from finrag_pipeline.core.scoring.answer_contract import COMPUTED_TOLERANCE, LOOKUP_TOLERANCE, answer_value

GENERATOR = "model_free"
TEMPLATE_PREFIX = "metric_"
_SCALE_WORDS = {1: "", **{int(s): f" {name}" for s, name in SCALE_NAME.items() if s < 1e12}}
_SCALE_NAMES = {s: f"{w}s" if w else "" for s, w in _SCALE_WORDS.items()}
_DECIMAL_WORDS = {0: "to the nearest whole number", 1: "rounded to one decimal place",
                  2: "rounded to two decimal places", 3: "rounded to three decimal places",
                  4: "rounded to four decimal places"}


@dataclass
class MetricResult:
    """One computed metric: value in the question's unit (percent as 42.06, USD in ``scale``)."""

    key: str
    year: int
    value: Decimal
    unit: str                         # percent | ratio | USD
    scale: int                        # display scale of a USD result (10**6: "$ millions")
    inputs: list[tuple[str, int, FactValue]]


def _round(value: Decimal, decimals: int) -> Decimal:
    from finrag_pipeline.core.analyst.calculator import round_decimal

    return round_decimal(value, decimals)


def _fmt(value: Decimal, unit: str, decimals: int, scale: int) -> str:
    from finrag_pipeline.core.analyst.calculator import format_result

    return format_result(_round(value, decimals), unit, decimals, scale)


def compute_metric(filing: FilingFacts, key: str, formula_text: str, year: int, unit: str) -> MetricResult:
    """The formula at ``year`` with exact decimals and every input it read (raises MissingInput,
    FormulaError). Percent results are x100; a USD result is shown in the inputs' common scale."""
    inputs: dict[tuple[str, int], FactValue] = {}

    def resolve(name: str, y: int) -> Decimal:
        if (name, y) not in inputs:
            fact = filing.lookup(name, y)
            if fact is None:
                raise MissingInput(name, y)
            inputs[(name, y)] = fact
        return inputs[(name, y)].base_value

    raw = evaluate(parse_formula(formula_text), year, resolve)
    scales = [f.scale for f in inputs.values() if f.unit == "USD"]
    scale = max(set(scales), key=scales.count) if (unit == "USD" and scales) else 1
    value = raw * 100 if unit == "percent" else raw / scale
    return MetricResult(key, year, value, unit, scale, [(n, y, f) for (n, y), f in inputs.items()])


def _phrase_formula(formula_text: str, words: dict[str, str]) -> str:
    """'gross_profit / revenue' -> 'gross profit divided by top line'; avg(x) -> 'average x'."""
    def walk(node: ast.expr, top: bool = False) -> str:
        if isinstance(node, ast.Name):
            return words[node.id]
        if isinstance(node, ast.Constant):
            return str(node.value)
        if isinstance(node, ast.Call):
            inner = walk(node.args[0])
            return f"average {inner}" if node.func.id == "avg" else inner  # type: ignore[attr-defined]
        if isinstance(node, ast.UnaryOp):
            return f"minus {walk(node.operand)}"
        if isinstance(node, ast.BinOp):
            op = {ast.Add: "plus", ast.Sub: "minus", ast.Mult: "times", ast.Div: "divided by"}[type(node.op)]
            text = f"{walk(node.left)} {op} {walk(node.right)}"
            return text if top or isinstance(node.op, ast.Div) else f"({text})"
        raise FormulaError(f"cannot phrase {type(node).__name__}")
    return walk(parse_formula(formula_text).tree, top=True)


def _unit_text(fact: FactValue) -> str:
    return f"{fact.unit or ''}{_SCALE_NAMES.get(fact.scale, '')}".strip()


def _input_figure(name: str, year: int, fact: FactValue) -> dict[str, Any]:
    return {"value": float(fact.value), "unit": _unit_text(fact), "period": f"FY{year}", "text": fact.value_text,
            "label": fact.label, "line_item": name, "page": fact.source.page, "role": "source",
            "scale": float(fact.scale)}


def evidence_group(fact: FactValue, index: EvidenceIndex) -> list[EvidencePlace]:
    """Alternative places of one input: the chunk the fact layer cites (table row, or the row that
    displays an XBRL fact), then every other chunk/page stating the same figure."""
    out: list[EvidencePlace] = []
    seen: set[tuple[str | None, int]] = set()
    for src in [fact.source, *fact.corroborated_by]:
        chunk = index.chunk_by_id.get(src.chunk_id) if src.chunk_id else None
        if chunk is None or not src.page:
            continue
        # the chunk's own page: an HTML table row can sit on the page after the one its table starts on
        page = src.page if src.page in chunk.pages else chunk.page_start
        if (src.chunk_id, page) not in seen:
            seen.add((src.chunk_id, page))
            out.append(EvidencePlace(chunk_id=src.chunk_id, page=page, filing_id=index.filing_id))
    for place in index.places(digits_key(fact.value_text), fact.label, None, fact.source.page):
        if (place.chunk_id, place.page) not in seen:
            seen.add((place.chunk_id, place.page))
            out.append(place)
    return out


@dataclass
class _Spec:
    key: str                 # template anchor: "operating_margin", "yoy_growth:revenue", "average_balance:ppe"
    formula: str
    phrasing: MetricPhrasing
    kind: str                # ratio | growth | average


def metric_specs(config: QAConfig, filing: FilingFacts, vocab: PhrasingVocabulary) -> list[_Spec]:
    concepts = filing.lexicon.concepts
    out: list[_Spec] = []
    for key in config.metric.metrics:
        c = concepts.get(key)
        if c is None or not c.formula or key not in vocab.metrics:
            raise ValueError(f"qa.yaml metric.metrics: {key!r} needs a lexicon formula and a phrasing.yaml metric")
        out.append(_Spec(key, c.formula, vocab.metrics[key], "ratio"))
    growth, average = vocab.metrics.get("yoy_growth"), vocab.metrics.get("average_balance")
    for item in config.metric.growth_items if growth else []:
        out.append(_Spec(f"yoy_growth:{item}", item, growth, "growth"))
    for item in config.metric.average_items if average else []:
        out.append(_Spec(f"average_balance:{item}", f"avg({item})", average, "average"))
    return out


def _question(spec: _Spec, res: MetricResult, company: str, words: dict[str, str], name: str,
              fy_text: str) -> str:
    how = _DECIMAL_WORDS[spec.phrasing.decimals]
    if spec.kind == "growth":
        item = words[spec.formula]
        return (f"What was the {name} of {company}'s {item} in {fy_text}, i.e. the percent change from fiscal "
                f"{res.year - 1} to fiscal {res.year}? Give it as a percentage {how}.")
    if spec.kind == "average":
        item = words[spec.formula[4:-1]]
        return (f"What was {company}'s {name} {item} for {fy_text}, taken as the mean of the fiscal {res.year - 1} "
                f"and fiscal {res.year} year-end balances? Answer in USD{_SCALE_WORDS[res.scale]}s, {how}.")
    definition = _phrase_formula(spec.formula, words)
    avg_note = (f" (average = mean of the fiscal {res.year - 1} and fiscal {res.year} year-end balances)"
                if "avg(" in spec.formula else "")
    if spec.phrasing.unit == "percent":
        form = f"Give it as a percentage {how}."
    elif spec.phrasing.unit == "ratio":
        form = f"Give the ratio {how}."
    else:
        form = f"Answer in USD{_SCALE_WORDS[res.scale]}s."
    return f"What was {company}'s {name} in {fy_text}, defined as {definition}{avg_note}? {form}"


def metric_items(meta: FilingMeta, company: str, filing: FilingFacts, index: EvidenceIndex, config: QAConfig,
                 vocab: PhrasingVocabulary, rng: random.Random, count: Any) -> list[QAItem]:
    """Metric questions of one filing, in a seeded order that alternates metrics before years."""
    by_year: list[list[QAItem]] = []
    for back in range(config.metric.fiscal_years_back):
        year = meta.fiscal_year - back
        row: list[QAItem] = []
        for spec in metric_specs(config, filing, vocab):
            item = _metric_item(meta, company, filing, index, spec, year, vocab, rng, count)
            if item is not None:
                row.append(item)
        rng.shuffle(row)
        by_year.append(row)
    # the latest year's metrics first, then the earlier year's: coverage of metrics before repetition
    return [item for row in by_year for item in row]


def _metric_item(meta: FilingMeta, company: str, filing: FilingFacts, index: EvidenceIndex, spec: _Spec,
                 year: int, vocab: PhrasingVocabulary, rng: random.Random, count: Any) -> QAItem | None:
    unit = spec.phrasing.unit
    formula = spec.formula
    try:
        if spec.kind == "growth":  # base units ("ratio": no display scale), so two scales never mix
            cur = compute_metric(filing, spec.key, spec.formula, year, "ratio")
            prev = compute_metric(filing, spec.key, spec.formula, year - 1, "ratio")
            if prev.value <= 0 or cur.value <= 0:
                count(f"metric_skipped:{spec.key}:non_positive")
                return None
            value = (cur.value - prev.value) / prev.value * 100
            res = MetricResult(spec.key, year, value, unit, 1, cur.inputs + prev.inputs)
        else:
            res = compute_metric(filing, spec.key, formula, year, unit)
    except MissingInput:
        count(f"metric_skipped:{spec.key.split(':')[0]}:missing_input")
        return None
    except FormulaError:
        count(f"metric_skipped:{spec.key.split(':')[0]}:division_by_zero")
        return None
    if spec.kind == "ratio" and unit in ("percent", "ratio") and not 0 < res.value < 10_000:
        count(f"metric_skipped:{spec.key}:implausible")   # a loss year's margin / tax credit: ambiguous sign
        return None
    groups = []
    for _, _, fact in res.inputs:
        group = evidence_group(fact, index)
        if not group:
            count(f"metric_skipped:{spec.key.split(':')[0]}:input_without_evidence")
            return None
        groups.append(group)
    names = sorted({n for n, _, _ in res.inputs})
    words = {n: rng.choice(vocab.item_words(n)) for n in names}
    name = rng.choice(spec.phrasing.name)
    fy_text = f"fiscal {year}"
    question = _question(spec, res, company, words, name, fy_text)
    decimals = spec.phrasing.decimals
    shown = _fmt(res.value, unit, decimals, res.scale)
    parts = [f"{words[n]} FY{y} = {f.value_text}" for n, y, f in res.inputs]
    comp = f"{spec.formula if spec.kind != 'growth' else 'pct_change(' + spec.formula + ')'} at FY{year}: " \
           f"{'; '.join(parts)} -> {res.value:.6g}"
    reference = f"{shown} ({'; '.join(parts)})."
    value = float(_round(res.value, max(decimals, 4)))
    if unit == "USD":
        contract = answer_value(value, f"USD{_SCALE_NAMES[res.scale]}", period=f"FY{year}",
                                tolerance=LOOKUP_TOLERANCE, text=shown)
    else:
        contract = answer_value(value, unit, period=f"FY{year}", tolerance=COMPUTED_TOLERANCE, text=shown)
        if spec.kind == "growth":
            contract["signed"] = True
    fid = meta.filing_id
    pages = sorted({p.page for g in groups for p in g[:1]})
    return QAItem(
        qa_id=stable_id(fid, GENERATOR, TEMPLATE_PREFIX + spec.key, f"{spec.key}|FY{year}"), filing_id=fid,
        question=question, reference_answer=reference, question_type="metric",
        answer_figures=[_input_figure(n, y, f) for n, y, f in res.inputs] + [
            {"value": value, "unit": unit, "role": "computed"}],
        periods=sorted({f"FY{y}" for _, y, _ in res.inputs}, reverse=True), evidence=groups,
        computation=comp, generator=GENERATOR, generator_version="1.1",
        difficulty="hard" if len(pages) > 1 else "medium", source="generated",
        metadata={"template": TEMPLATE_PREFIX + spec.key.split(":")[0], "metric": spec.key,
                  "formula": spec.formula, "rounding": _DECIMAL_WORDS[decimals], "multi_page": len(pages) > 1,
                  "input_pages": pages},
        answer_values=[contract])
