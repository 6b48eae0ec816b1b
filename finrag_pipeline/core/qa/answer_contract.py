"""The answer contract of a QA item: what an answer must commit to, apart from what it is computed from.

``QAItem.answer_values`` holds one dict per asked quantity ``{"value", "unit", "scale", "period",
"tolerance", "text"}`` (``value`` as printed in ``unit`` x ``scale``: 394328, "USD", 1e6), and
``QAItem.answer_choice`` the option a choice question asks for ("FY2022") among
``metadata["choice_options"]``. ``answer_figures`` stay as provenance (the inputs).

* :func:`answer_value` builds one entry from a printed value and a row unit;
* :func:`derive_contract` recomputes the contract of a stored item (migration of warehouses written
  before the contract existed; imported items);
* :func:`recompute_scoring_fields` is the one function a review edit goes through.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from finrag_pipeline.core.models import QAItem
from finrag_pipeline.core.numbers import (
    Figure,
    format_amount,
    parse_amount,
    parse_figure,
    parse_figures,
    unit_scale,
    years_in,
)

# Relative tolerance of computed answers: a ratio or a percent change rounded to one decimal in the
# answer ("43.3%" for 43.33) or to an integer ("43%") is right, "40%" is not.
COMPUTED_TOLERANCE = 0.01
LOOKUP_TOLERANCE = 0.0     # a lookup is exact up to the rounding the answer shows (answer_metrics)


def answer_value(value: float, unit: str | None, *, period: str | None = None, tolerance: float = LOOKUP_TOLERANCE,
                 text: str | None = None, value_text: str | None = None, signed: bool = False) -> dict[str, Any]:
    """One asked quantity from a value printed in a row unit ("USD millions" -> unit "USD", scale 1e6).

    ``signed`` (an extension of the contract's keys): the value is a change, so an answer must say its
    direction; a lookup of a printed negative ("(14,081)" dividends paid) may be stated unsigned."""
    base, scale = unit_scale(unit)
    shown = value_text or f"{float(value):.10g}"   # as printed, else with the value's own decimals
    out = {"value": float(value), "unit": base, "scale": scale, "period": period,
           "tolerance": float(tolerance), "text": text or format_amount(value, unit, shown)}
    if signed:
        out["signed"] = True
    return out


def _unit_of_figure(f: Figure) -> str | None:
    if f.points:
        return "percentage points"
    if f.percent:
        return "percent"
    if f.per_share:
        return "USD per share"
    return "USD" if f.currency else None


def value_from_figure(f: Figure, *, period: str | None = None, tolerance: float = LOOKUP_TOLERANCE) -> dict[str, Any]:
    return {"value": f.value / f.scale, "unit": _unit_of_figure(f), "scale": f.scale, "period": period,
            "tolerance": tolerance, "text": f.text}


_ONLY_FIGURE_RE = re.compile(r"^[^A-Za-z]*(?:(?:USD|US|dollars?|percent|per\s+cent|percentage\s+points?|"
                             r"thousands?|millions?|billions?|trillions?|bn|mm|mn|[bmk]|per\s+share)[^A-Za-z]*)*$",
                             re.IGNORECASE)


_APPROX_RE = re.compile(r"^\s*(?:about|approximately|approx\.?|around|roughly|~)\s*", re.IGNORECASE)
_PARENS_RE = re.compile(r"\([^()]*\)")


def single_figure_answer(text: str) -> tuple[Figure, float] | None:
    """(figure, tolerance) of an answer that is one figure ("$1,577.00", "65.4%", "1.2 billion"),
    possibly with its computation in parentheses ("About 18.8% (74,200 / 394,328)": tolerance
    COMPUTED_TOLERANCE for a stated approximation); None for a sentence (its figures may be context,
    so nothing is inferred from it)."""
    t = (text or "").strip().rstrip(".")
    approx = bool(_APPROX_RE.match(t))
    core = _PARENS_RE.sub(" ", _APPROX_RE.sub("", t)).strip()
    figs = parse_figures(core, keep_years=True)
    if len(figs) == 1 and _ONLY_FIGURE_RE.match(core):
        return figs[0], COMPUTED_TOLERANCE if approx else LOOKUP_TOLERANCE
    return None


def _fig_value(fig: Mapping[str, Any], tolerance: float) -> dict[str, Any]:
    return answer_value(fig["value"], fig.get("unit"), period=fig.get("period"), tolerance=tolerance,
                        value_text=fig.get("text"))


def derive_contract(item: QAItem) -> tuple[list[dict[str, Any]], str | None, list[str]]:
    """(answer_values, answer_choice, choice_options) of an item from what it records.

    Model-free items by template (a lookup is its figure; a change or ratio is its "computed" figure;
    "higher"/"extreme year" is a choice among the item's periods); imported items from
    ``metadata["answer_value"]`` or an answer that is a single figure; else nothing (narrative:
    scored by the judge only)."""
    template = str(item.metadata.get("template") or "")
    sources = [f for f in item.answer_figures if f.get("role", "source") == "source" and f.get("value") is not None]
    computed = [f for f in item.answer_figures if f.get("role") == "computed" and f.get("value") is not None]
    if item.question_type == "unanswerable" or item.metadata.get("answerable") is False:
        return [], None, []
    if item.metadata.get("answer_choice"):
        options = [str(o) for o in item.metadata.get("choice_options") or item.periods]
        if len(options) < 2:
            raise ValueError(f"{item.qa_id}: answer_choice needs choice_options (two or more)")
        return [], str(item.metadata["answer_choice"]), options
    if template.startswith("factual") and sources:
        return [_fig_value(sources[0], LOOKUP_TOLERANCE)], None, []
    if template == "two_figures":
        return [_fig_value(f, LOOKUP_TOLERANCE) for f in sources], None, []
    if template == "change_abs" and computed and sources:
        unit = sources[0].get("unit")
        return [answer_value(computed[0]["value"], unit, period=sources[0].get("period"),
                             value_text=sources[0].get("text"), signed=True)], None, []
    if template in ("change_pct", "ratio_two_pages") and computed:
        v = float(computed[0]["value"])
        value = answer_value(v, "percent", period=sources[0].get("period") if sources else None,
                             tolerance=COMPUTED_TOLERANCE, text=f"{v:.1f}%", signed=template == "change_pct")
        return [value], None, []
    if template in ("higher_period", "extreme_year_max", "extreme_year_min") and sources:
        pick = min if template == "extreme_year_min" else max
        best = pick(sources, key=lambda f: float(f["value"]))
        return [], str(best.get("period")), [str(f.get("period")) for f in sources]
    given = item.metadata.get("answer_value")
    if given not in (None, ""):
        period = item.periods[0] if len(item.periods) == 1 else None
        tolerance = float(item.metadata.get("answer_tolerance") or LOOKUP_TOLERANCE)
        unit = item.metadata.get("answer_unit") or None
        number = float(given) if isinstance(given, int | float) else parse_amount(str(given))
        if unit and number is not None:
            return [answer_value(number, unit, period=period, tolerance=tolerance)], None, []
        f = parse_figure(str(given))
        if f is None:
            raise ValueError(f"{item.qa_id}: answer_value {given!r} is not a figure")
        return [value_from_figure(f, period=period, tolerance=tolerance)], None, []
    single = single_figure_answer(item.reference_answer)
    if single is not None:
        f, tolerance = single
        return [value_from_figure(f, period=item.periods[0] if len(item.periods) == 1 else None,
                                  tolerance=tolerance)], None, []
    return [], None, []


def ensure_contract(item: QAItem) -> QAItem:
    """The item with its contract filled when it has none yet (items stored before the contract)."""
    if item.answer_values or item.answer_choice:
        return item
    values, choice, options = derive_contract(item)
    if values or choice:
        item.answer_values, item.answer_choice = values, choice
        if options:
            item.metadata = {**item.metadata, "choice_options": options}
    return item


def recompute_scoring_fields(item: QAItem, *, question: str | None = None,
                             reference_answer: str | None = None) -> QAItem:
    """A copy of ``item`` with an edit applied and EVERY field scoring reads recomputed from it.

    * question edited: ``periods`` follow the years it names (asked FY2021 instead of FY2022);
    * reference answer edited: ``answer_values`` are the answer's first figures, one per asked
      quantity (the answer states its value first: "It increased by $28,511 million, from ..."), each
      keeping the unit kind, period and tolerance of the value it replaces; ``answer_choice`` is the
      option the edited answer commits to (answer_metrics.choice_of).
    Raises ValueError when the edited answer no longer states what the item asks (a value item whose
    new answer has no figure, a choice item whose new answer names no option): scoring would
    silently read the old answer.
    """
    from finrag_pipeline.core.evaluation.answer_metrics import choice_of

    out = copy.deepcopy(item)
    if question is not None and question.strip() and question.strip() != item.question:
        out.question = question.strip()
        years = sorted(years_in(out.question), reverse=True)
        old_years = {y for p in item.periods for y in years_in(p)}
        if years and set(years) != old_years:
            out.periods = [f"FY{y}" for y in years]
            out.answer_values = [{**v, "period": f"FY{years[0]}" if v.get("period") else None}
                                 for v in out.answer_values]
    if reference_answer is not None and reference_answer.strip() and reference_answer.strip() != item.reference_answer:
        out.reference_answer = reference_answer.strip()
        if out.answer_choice:
            options = [str(o) for o in out.metadata.get("choice_options") or out.periods]
            chosen, why = choice_of(out.reference_answer, options, out.question)
            if chosen is None:
                raise ValueError(f"{item.qa_id}: the edited answer commits to no option of {options}: {why}")
            out.answer_choice = chosen
        elif out.answer_values:
            figs = parse_figures(out.reference_answer)
            if len(figs) < len(out.answer_values):
                raise ValueError(f"{item.qa_id}: the edited answer states {len(figs)} figure(s), the item asks "
                                 f"for {len(out.answer_values)}")
            out.answer_values = [_replace_value(f, old) for f, old in zip(figs, out.answer_values, strict=False)]
        else:
            single = single_figure_answer(out.reference_answer)
            if single is not None:
                out.answer_values = [value_from_figure(single[0], tolerance=single[1],
                                                       period=out.periods[0] if len(out.periods) == 1 else None)]
    return out


def _replace_value(f: Figure, old: Mapping[str, Any]) -> dict[str, Any]:
    """The edited figure, in the old value's unit and scale when it is written bare ("400,000" in a
    table of USD millions); its own unit and scale when it states them."""
    tolerance = float(old.get("tolerance") or 0.0)
    if f.kind == "plain" and not f.explicit_scale:
        return {**old, "value": f.value, "text": f.text, "tolerance": tolerance}
    return value_from_figure(f, period=old.get("period"), tolerance=tolerance)


def contract_options(item: QAItem) -> Sequence[str]:
    return [str(o) for o in item.metadata.get("choice_options") or item.periods]
