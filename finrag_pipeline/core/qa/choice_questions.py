"""Choice questions: one committed answer among named options, computed from the fact layer.

Four templates, each with its evidence known (every figure compared is one evidence group) and the
reference an ``answer_choice`` among ``metadata["choice_options"]`` (core/scoring/answer_contract.py):

* ``choice_segment``: which segment / product line / region had the highest (lowest) X in fiscal Y?
  Options are the components of a statement breakdown whose total is the filing's consolidated X
  ("Americas", "Europe", ...), named in the question in a seeded order;
* ``choice_year``: in which year was a metric higher (lower), fiscal Y or fiscal Y-1? Options are
  "FY2022" / "FY2021"; the metric's definition is given, its inputs at both years are the evidence;
* ``choice_direction``: did a line item rise or fall from fiscal Y-1 to fiscal Y? "higher" / "lower";
* ``choice_pair``: was metric A higher or lower than B (another line item or a stated benchmark such
  as the 21% statutory tax rate)? "higher" / "lower".

Scoring credits only an answer that singles out one option (answer_metrics.choice_of): an answer
naming every candidate, both directions or hedging scores 0. Ties (at the precision a question
states) are skipped, never guessed. Words come from assets_config/phrasing.yaml.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from finrag_pipeline.core.analyst.formula import FormulaError, MissingInput
from finrag_pipeline.core.analyst.labels import normalize_label
from finrag_pipeline.core.analyst.model import FactValue
from finrag_pipeline.core.analyst.store import FilingFacts, to_decimal
from finrag_pipeline.core.models import EvidencePlace, FilingMeta, QAItem, TableRow, stable_id
from finrag_pipeline.core.numbers import UNIT_SCALE, digits_key, format_amount
from finrag_pipeline.core.qa.config import QAConfig
from finrag_pipeline.core.qa.evidence import EvidenceIndex
from finrag_pipeline.core.qa.metric_questions import (
    MetricResult,
    _phrase_formula,
    compute_metric,
    evidence_group,
)
from finrag_pipeline.core.qa.phrasing import PhrasingVocabulary

GENERATOR = "model_free"
GENERATOR_VERSION = "1.0"
QUESTION_TYPE = "choice"
DIRECTIONS = ("higher", "lower")
# components that are no answer an analyst would give ("Other", "Corporate", "Total ...")
_GENERIC_COMPONENT = re.compile(r"^(other|corporate|all other|eliminations?|unallocated|total|segment)\b",
                                re.IGNORECASE)
_FOOTNOTE = re.compile(r"\s*(\(\d\)|\*+)\s*$")
Counter = Callable[..., None]


@dataclass
class _Ctx:
    meta: FilingMeta
    company: str
    filing: FilingFacts
    index: EvidenceIndex
    config: QAConfig
    vocab: PhrasingVocabulary
    rng: random.Random
    count: Counter

    @property
    def year(self) -> int:
        return self.meta.fiscal_year


def _option_list(options: list[str], conj: str = "or") -> str:
    """"A, B or C"; "A; B, C and D; or E" when an option has a comma of its own."""
    sep = "; " if any("," in o for o in options) else ", "
    if len(options) == 2 and sep == ", ":
        return f"{options[0]} {conj} {options[1]}"
    return f"{sep.join(options[:-1])}{sep.strip() if sep == '; ' else ''} {conj} {options[-1]}"


def _item(ctx: _Ctx, template: str, anchor: str, question: str, answer: str, choice: str, options: list[str],
          figures: list[dict[str, Any]], groups: list[list[EvidencePlace]], periods: list[str],
          computation: str, **meta: Any) -> QAItem:
    fid = ctx.meta.filing_id
    pages = sorted({g[0].page for g in groups if g})
    return QAItem(
        qa_id=stable_id(fid, GENERATOR, template, anchor), filing_id=fid, question=question,
        reference_answer=answer, question_type=QUESTION_TYPE, answer_figures=figures,
        periods=sorted(set(periods), reverse=True), evidence=groups, computation=computation,
        generator=GENERATOR, generator_version=GENERATOR_VERSION,
        difficulty="hard" if len(pages) > 1 else "medium", source="generated",
        metadata={"template": template, "answer_choice": choice, "choice_options": options,
                  "multi_page": len(pages) > 1, "input_pages": pages, **meta},
        answer_choice=choice)


def _fact_figure(name: str, fact: FactValue) -> dict[str, Any]:
    unit = f"{fact.unit or ''}{ {1: '', 10**3: ' thousands', 10**6: ' millions', 10**9: ' billions'}.get(fact.scale, '')}"
    return {"value": float(fact.value), "unit": unit.strip() or None, "period": fact.period, "text": fact.value_text,
            "label": fact.label, "line_item": name, "page": fact.source.page, "role": "source",
            "scale": float(fact.scale)}


def _groups(inputs: list[tuple[str, int, FactValue]], ctx: _Ctx, key: str) -> list[list[EvidencePlace]] | None:
    groups = []
    for _, _, fact in inputs:
        group = evidence_group(fact, ctx.index)
        if not group:
            ctx.count(f"choice_skipped:{key}:input_without_evidence")
            return None
        groups.append(group)
    return groups


# -- which segment ----------------------------------------------------------------------------------

def _cell(row: TableRow, year: int):
    return next((c for c in row.cells if c.period == f"FY{year}" and (c.value_text or "").strip()), None)


def _component_label(row: TableRow) -> str:
    return _FOOTNOTE.sub("", re.sub(r"\s+", " ", row.row_label)).strip(" :")


def segment_items(ctx: _Ctx) -> list[QAItem]:
    """Which component of a breakdown of a consolidated line item was highest / lowest."""
    out: list[QAItem] = []
    seen: set[tuple] = set()
    year = ctx.year
    for concept in ctx.config.choice.segment_items:
        try:
            total = ctx.filing.lookup(concept, year)
        except (KeyError, ValueError):
            raise ValueError(f"qa.yaml choice.segment_items: {concept!r} is not a lexicon line item") from None
        if total is None:
            continue
        for b in ctx.filing.breakdowns():
            unit = b.total.unit or ctx.filing.default_unit
            scale = UNIT_SCALE.get(unit or "", 1.0)
            cell = _cell(b.total, year)
            value = to_decimal(cell.value_text, cell.value) if cell else None
            if value is None or abs(value * Decimal(str(scale)) - total.base_value) > Decimal("0.5") * Decimal(str(scale)):
                continue   # not a breakdown of the consolidated line (another table's "Total")
            comps = []
            for row in b.components:
                label, c = _component_label(row), _cell(row, year)
                v = to_decimal(c.value_text, c.value) if c else None
                if _GENERIC_COMPONENT.match(label) or v is None or len(label) > 60:
                    continue
                comps.append((label, row, c, v))
            labels = [normalize_label(lab) for lab, *_ in comps]
            if not 2 <= len(comps) <= 7 or len(set(labels)) != len(labels):
                continue
            key = (concept, tuple(sorted(labels)))
            if key in seen:
                continue
            seen.add(key)
            item = _segment_item(ctx, concept, comps, unit, year, len(out))
            if item is not None:
                out.append(item)
    return out


_SEGMENT_TEMPLATES = {
    "highest": ["Which of {options} brought {co} the most {item} in fiscal {year}?",
                "Among {options}, which generated the largest part of {co}'s {item} in fiscal {year}?"],
    "lowest": ["Which of {options} contributed the least {item} to {co} in fiscal {year}?",
               "Among {options}, which had the smallest {item} at {co} in fiscal {year}?"],
}


def _segment_item(ctx: _Ctx, concept: str, comps: list, unit: str | None, year: int, n: int) -> QAItem | None:
    values = sorted(v for *_, v in comps)
    want = "highest" if n % 2 == 0 else "lowest"
    if want == "lowest" and values[0] <= 0:
        want = "highest"   # the "least" of a loss-making segment reads two ways: ask the other end
    if want == "highest" and (values[-1] <= 0 or values[-1] == values[-2]):
        ctx.count(f"choice_skipped:segment:{concept}:no_single_highest")
        return None
    if want == "lowest" and values[0] == values[1]:
        ctx.count(f"choice_skipped:segment:{concept}:tie")
        return None
    pick = max(comps, key=lambda c: c[3]) if want == "highest" else min(comps, key=lambda c: c[3])
    groups = []
    for label, row, cell, _ in comps:
        group = ctx.index.places(digits_key(cell.value_text), label, row, row.page_number)
        if not group:
            ctx.count(f"choice_skipped:segment:{concept}:input_without_evidence")
            return None
        groups.append(group)
    options = [c[0] for c in comps]
    shown = list(options)
    ctx.rng.shuffle(shown)    # the printed order would tell a lazy reader the largest comes first
    item_words = ctx.rng.choice(ctx.vocab.item_words(concept))
    template = ctx.rng.choice(_SEGMENT_TEMPLATES[want])
    question = template.format(options=_option_list(shown, "and" if template.startswith("Among") else "or"),
                               co=ctx.company, item=item_words, year=year)
    question = question[0].upper() + question[1:]
    ranked = sorted(comps, key=lambda c: c[3], reverse=want == "highest")
    listing = "; ".join(f"{lab} {format_amount(float(v), unit, cell.value_text)}" for lab, _, cell, v in ranked)
    answer = f"{pick[0]} had the {want} {item_words} in fiscal {year}: {listing}."
    figures = [{"value": float(v), "unit": unit, "period": f"FY{year}", "text": cell.value_text, "label": lab,
                "page": row.page_number, "role": "source", "scale": UNIT_SCALE.get(unit or "", 1.0)}
               for lab, row, cell, v in comps]
    comp = f"{want} of {', '.join(f'{lab}={cell.value_text}' for lab, _, cell, _ in comps)} -> {pick[0]}"
    return _item(ctx, "choice_segment", f"{concept}|{'|'.join(sorted(options))}|FY{year}|{want}", question,
                 answer, pick[0], options, figures, groups, [f"FY{year}"], comp, line_item=concept,
                 extreme=want, table_page=comps[0][1].page_number)


# -- which year (a metric), did it rise or fall (a line item) -------------------------------------------

def _metric(ctx: _Ctx, key: str, year: int) -> MetricResult | None:
    concept = ctx.filing.lexicon.concepts.get(key)
    phr = ctx.vocab.metrics.get(key)
    if concept is None or not concept.formula or phr is None:
        raise ValueError(f"qa.yaml choice: {key!r} needs a lexicon formula and a phrasing.yaml metric")
    try:
        res = compute_metric(ctx.filing, key, concept.formula, year, phr.unit)
    except MissingInput:
        ctx.count(f"choice_skipped:{key}:missing_input")
        return None
    except FormulaError:
        ctx.count(f"choice_skipped:{key}:division_by_zero")
        return None
    if phr.unit in ("percent", "ratio") and not 0 < res.value < 10_000:
        ctx.count(f"choice_skipped:{key}:implausible")
        return None
    return res


def _shown(res: MetricResult, ctx: _Ctx) -> str:
    from finrag_pipeline.core.analyst.calculator import format_result, round_decimal

    d = ctx.vocab.metrics[res.key].decimals
    return format_result(round_decimal(res.value, d), res.unit, d, res.scale)


def _metric_words(ctx: _Ctx, key: str, inputs: list[tuple[str, int, FactValue]]) -> tuple[str, str]:
    """(name, definition) of a metric in analyst words ("gross margin", "gross profit divided by sales")."""
    formula = ctx.filing.lexicon.concepts[key].formula
    words = {n: ctx.rng.choice(ctx.vocab.item_words(n)) for n in sorted({n for n, _, _ in inputs})}
    avg = (" (average = mean of the two year-end balances)" if "avg(" in formula else "")
    return ctx.rng.choice(ctx.vocab.metrics[key].name), f"{_phrase_formula(formula, words)}{avg}"


def year_items(ctx: _Ctx) -> list[QAItem]:
    out = []
    year, prev = ctx.year, ctx.year - 1
    for n, key in enumerate(ctx.config.choice.year_metrics):
        cur_res, prev_res = _metric(ctx, key, year), _metric(ctx, key, prev)
        if cur_res is None or prev_res is None:
            continue
        a, b = _shown(cur_res, ctx), _shown(prev_res, ctx)
        if a == b:
            ctx.count(f"choice_skipped:{key}:tie_at_stated_precision")
            continue
        inputs = cur_res.inputs + [i for i in prev_res.inputs if i not in cur_res.inputs]
        groups = _groups(inputs, ctx, key)
        if groups is None:
            continue
        want = "higher" if n % 2 == 0 else "lower"
        hi, lo = (f"FY{year}", f"FY{prev}") if cur_res.value > prev_res.value else (f"FY{prev}", f"FY{year}")
        choice = hi if want == "higher" else lo
        name, definition = _metric_words(ctx, key, inputs)
        years = [f"fiscal {year}", f"fiscal {prev}"]
        ctx.rng.shuffle(years)
        question = (f"In which year was {ctx.company}'s {name} {want}, {years[0]} or {years[1]}? "
                    f"Take the {name} as {definition}.")
        answer = f"Fiscal {choice[2:]} had the {want} {name}: {a} in fiscal {year} vs {b} in fiscal {prev}."
        comp = f"{key}: FY{year}={cur_res.value:.6g}, FY{prev}={prev_res.value:.6g} -> {want}: {choice}"
        out.append(_item(ctx, "choice_year", f"{key}|FY{year}|FY{prev}|{want}", question, answer, choice,
                         [f"FY{year}", f"FY{prev}"], [_fact_figure(nm, f) for nm, _, f in inputs], groups,
                         [f"FY{year}", f"FY{prev}"], comp, metric=key, direction=want))
    return out


def direction_items(ctx: _Ctx) -> list[QAItem]:
    out = []
    year, prev = ctx.year, ctx.year - 1
    templates = ["Did {co}'s {item} rise or fall in fiscal {year} compared with fiscal {prev}?",
                 "Was {co}'s {item} higher or lower in fiscal {year} than in fiscal {prev}?"]
    for n, concept in enumerate(ctx.config.choice.direction_items):
        try:
            cur, old = ctx.filing.lookup(concept, year), ctx.filing.lookup(concept, prev)
        except (KeyError, ValueError):
            raise ValueError(f"qa.yaml choice.direction_items: {concept!r} is not a lexicon line item") from None
        if cur is None or old is None:
            ctx.count(f"choice_skipped:{concept}:missing_input")
            continue
        if cur.base_value == old.base_value or cur.base_value <= 0 or old.base_value <= 0:
            # an outflow printed (63,645) "rises" as it falls: only positive amounts are asked
            ctx.count(f"choice_skipped:{concept}:tie_or_not_positive")
            continue
        inputs = [(concept, year, cur), (concept, prev, old)]
        groups = _groups(inputs, ctx, concept)
        if groups is None:
            continue
        choice = "higher" if cur.base_value > old.base_value else "lower"
        words = ctx.rng.choice(ctx.vocab.item_words(concept))
        question = templates[n % 2].format(co=ctx.company, item=words, year=year, prev=prev)
        verb = "rose" if choice == "higher" else "fell"
        answer = (f"It {verb} ({choice} in fiscal {year}): {format_amount(float(cur.value), _fact_figure(concept, cur)['unit'], cur.value_text)} "
                  f"in fiscal {year} vs {format_amount(float(old.value), _fact_figure(concept, old)['unit'], old.value_text)} "
                  f"in fiscal {prev}.")
        comp = f"{concept}: FY{year}={cur.value_text} vs FY{prev}={old.value_text} -> {choice}"
        out.append(_item(ctx, "choice_direction", f"{concept}|FY{year}|FY{prev}", question, answer, choice,
                         list(DIRECTIONS), [_fact_figure(concept, cur), _fact_figure(concept, old)], groups,
                         [f"FY{year}", f"FY{prev}"], comp, line_item=concept))
    return out


# -- metric A vs B -------------------------------------------------------------------------------------

def pair_items(ctx: _Ctx) -> list[QAItem]:
    out = []
    year = ctx.year
    for pair in ctx.config.choice.pairs:
        a = _side(ctx, pair.a, year)
        if a is None:
            continue
        a_value, a_shown, a_words, a_def, a_inputs = a
        if isinstance(pair.b, str):
            b = _side(ctx, pair.b, year)
            if b is None:
                continue
            b_value, b_shown, b_words, b_def, b_inputs = b
            if (a_def is None) != (b_def is None):
                raise ValueError(f"qa.yaml choice.pairs: {pair.a!r} and {pair.b!r} are not of one kind")
        else:   # a stated benchmark: named once, no inputs
            b_value, b_shown, b_words, b_def, b_inputs = Decimal(str(pair.b)), "", str(pair.b_words), None, []
        if a_value == b_value or (b_inputs and a_shown == b_shown):
            ctx.count(f"choice_skipped:pair:{pair.a}:tie")
            continue
        inputs = a_inputs + [i for i in b_inputs if i not in a_inputs]
        groups = _groups(inputs, ctx, f"pair:{pair.a}")
        if groups is None:
            continue
        choice = "higher" if a_value > b_value else "lower"
        defs = "; ".join(d for d in (a_def and f"the {a_words} as {a_def}", b_def and f"the {b_words} as {b_def}")
                         if d)
        question = (f"Was {ctx.company}'s {a_words} higher or lower than {'its ' if b_inputs else ''}{b_words} "
                    f"in fiscal {year}?{' Take ' + defs + '.' if defs else ''}")
        answer = f"{choice.capitalize()}: {a_words} {a_shown} vs {(b_words + ' ' + b_shown).strip()} in fiscal {year}."
        comp = f"{pair.a}={a_value:.6g} vs {pair.b}={b_value:.6g} -> {choice}"
        out.append(_item(ctx, "choice_pair", f"{pair.a}|{pair.b}|FY{year}", question, answer, choice,
                         list(DIRECTIONS), [_fact_figure(nm, f) for nm, _, f in inputs], groups, [f"FY{year}"],
                         comp, pair=[pair.a, str(pair.b)]))
    return out


def _side(ctx: _Ctx, key: str, year: int) -> tuple[Decimal, str, str, str | None, list] | None:
    """(comparable value, shown text, words, definition or None, inputs) of a metric or line item."""
    concept = ctx.filing.lexicon.concepts.get(key)
    if concept is None:
        raise ValueError(f"qa.yaml choice.pairs: unknown line item or metric {key!r}")
    if concept.formula:
        res = _metric(ctx, key, year)
        if res is None:
            return None
        name, definition = _metric_words(ctx, key, res.inputs)
        return res.value, _shown(res, ctx), name, definition, res.inputs
    fact = ctx.filing.lookup(key, year)
    if fact is None:
        ctx.count(f"choice_skipped:{key}:missing_input")
        return None
    if fact.base_value <= 0:
        ctx.count(f"choice_skipped:{key}:not_positive")
        return None
    fig = _fact_figure(key, fact)
    return fact.base_value, format_amount(float(fact.value), fig["unit"], fact.value_text), \
        ctx.rng.choice(ctx.vocab.item_words(key)), None, [(key, year, fact)]


# -- all of them -------------------------------------------------------------------------------------

BUILDERS = {"segment": segment_items, "direction": direction_items, "year": year_items, "pair": pair_items}


def choice_items(meta: FilingMeta, company: str, filing: FilingFacts, index: EvidenceIndex, config: QAConfig,
                 vocab: PhrasingVocabulary, rng: random.Random, count: Counter) -> list[QAItem]:
    """Choice questions of one filing, round-robin over the templates (coverage before repetition),
    each template's candidates in a seeded order."""
    ctx = _Ctx(meta, company, filing, index, config, vocab, rng, count)
    queues = []
    for name in config.choice.templates:
        made = BUILDERS[name](ctx)
        rng.shuffle(made)
        queues.append(made)
    out: list[QAItem] = []
    while any(queues):
        for q in queues:
            if q:
                out.append(q.pop(0))
    return out
