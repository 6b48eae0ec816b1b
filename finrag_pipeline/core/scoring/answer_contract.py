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
from dataclasses import dataclass, field
from typing import Any

from finrag_pipeline.core.asked import (
    RequestedUnits,
    content_words,
    requested_units,
    unit_of_figure,
)
from finrag_pipeline.core.models import QAItem
from finrag_pipeline.core.numbers import (
    Figure,
    format_amount,
    parse_figure,
    parse_figures,
    scale_of_text,
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


def value_from_figure(f: Figure, *, period: str | None = None, tolerance: float = LOOKUP_TOLERANCE) -> dict[str, Any]:
    return {"value": f.value / f.scale, "unit": unit_of_figure(f), "scale": f.scale, "period": period,
            "tolerance": tolerance, "text": f.text}


_ONLY_FIGURE_RE = re.compile(r"^[^A-Za-z]*(?:(?:USD|US|dollars?|percent|per\s+cent|percentage\s+points?|times|x|pp|"
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
    core = _APPROX_RE.sub("", t)
    while _PARENS_RE.search(core):     # nested: "3.0% (capex = (11,085); sales = 365,817)"
        core = _PARENS_RE.sub(" ", core)
    core = core.strip()
    figs = parse_figures(core, keep_years=True)
    if len(figs) == 1 and _ONLY_FIGURE_RE.match(core):
        return figs[0], COMPUTED_TOLERANCE if approx else LOOKUP_TOLERANCE
    return None


# ---------------------------------------------------------------------------------------------
# What the question asks for: units, scale, rounding


def apply_requested_units(value: dict[str, Any], f: Figure, asked: RequestedUnits) -> dict[str, Any]:
    """A reference written as a bare number takes the units its question asks for: "1577" for
    "(in USD millions)" is $1,577 million; "0.165" for a margin is the ratio 16.5%; "9.5" for "how
    many times" is a ratio. Rounding asked in the question is allowed to the answer."""
    out = dict(value)
    bare = f.kind == "plain" and not f.explicit_scale
    if asked.scale and not f.explicit_scale and f.kind in ("plain", "currency"):
        # "$1577.00" for "(in USD millions)": the figure is written in the asked scale
        out.update(unit="USD" if asked.unit == "USD" or f.currency else out.get("unit"), scale=asked.scale)
    elif asked.unit == "USD per share" and f.kind in ("plain", "currency"):
        out["unit"] = "USD per share"   # "$2.02" for "diluted EPS": stated "$2.02 per share" or "$2.02"
    elif bare:
        if asked.unit == "ratio" or (asked.ratio_is_percent and abs(f.value) <= 1.5 and f.decimals >= 2):
            out["unit"] = "ratio"     # a fraction: 0.165 for a 16.5% margin
        elif asked.unit == "percent":
            out["unit"] = "percent"
    if asked.decimals is not None:
        # the decimals asked of a margin are the percentage's ("16.5%"), even for a reference 0.165
        percent_shown = out.get("unit") == "ratio" and asked.unit != "ratio" and asked.ratio_is_percent
        out["rounding"] = 0.5 * 10 ** -asked.decimals / (100 if percent_shown else 1)
    if f.percent and not f.points and asked.ratio_is_percent:
        # a change of a margin or rate written "1.7%" is read as 1.7 points too (references say both)
        out["points_equivalent"] = True
    return out


# ---------------------------------------------------------------------------------------------
# Contracts from sentence references ("Yes. ...", "decreased by 1.7%", "Corporate. Its net revenue ...")


@dataclass
class Contract:
    """What an answer must commit to, derived from a question and its reference: ``values``
    (answer_values entries), a ``choice`` among ``options``, ``required_terms`` (an entity the
    reference names as its answer: "Corporate"), the ``key_facts`` left for the judge and key-fact
    recall, and ``reason``: how it was derived, or why it could not be (then nothing is decided)."""

    values: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[dict[str, Any]] = field(default_factory=list)   # figures the value is computed from (provenance)
    choice: str | None = None
    options: list[str] = field(default_factory=list)
    required_terms: list[str] = field(default_factory=list)
    key_facts: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def derived(self) -> bool:
        return bool(self.values or self.choice or self.required_terms)


YES_NO_OPTIONS = ("yes", "no")
_YES_NO_RE = re.compile(r"^[\W_]*(?:answer\s*:\s*)?[\W_]*(yes|no)\b", re.IGNORECASE)
# "Corporate. ...", "Graphics: $5,085 million ...", "Commercial Airplanes (loss of ...)": a name first
_LEAD_FRAGMENT_RE = re.compile(r"^[\W_]*(?P<e>[A-Z][\w&'.\-]*(?:\s+[\w&'.\-]+){0,5}?)\s*(?:\.(?=\s)|[:;,(]|"
                               r"\s[-\u2013\u2014]\s)")
# a lead that opens a sentence rather than names the answer: "In 2022, ...", "Based on ...", "The company ..."
_NOT_A_NAME_RE = re.compile(r"(?:in|for|during|on|at|by|based|according|as|the|this|it|its|there|overall|"
                            r"although|while|with)\b", re.IGNORECASE)
# "Among operations, investing, and financing activities, which ...": options named in the question
_AMONG_RE = re.compile(r"\b(?:among|between|of)\s+(?:the\s+)?(?P<o>[a-z][\w&\- ]{1,40}?(?:,\s*[\w&\- ]{1,40}?)*,?\s+"
                       r"(?:and|or)\s+[\w&\- ]{1,40}?)\s*(?:,|\?|\bwhich\b)", re.IGNORECASE)


def question_options(question: str) -> list[str]:
    """The options a "which" question lists: "Among operations, investing, and financing activities,
    which ...?" -> ["operations", "investing", "financing"] (each option's first word: the answer may
    say "operating activities"). [] when it lists none."""
    if not _WHICH_Q_RE.search(question or ""):
        return []
    m = _AMONG_RE.search(question or "")
    if not m:
        return []
    parts = [p.strip() for p in re.split(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+", m.group("o")) if p.strip()]
    words = [p.split()[0].lower() for p in parts]
    return words if len(words) >= 2 and len(set(words)) == len(words) else []


# a question whose answer is a name: "Which segment ...?", "Who ...?", "What region ...?"
_WHICH_Q_RE = re.compile(r"\bwhich\b|^\s*who\b|\bwhat\s+(?:segment|company|region|product|business|country|"
                         r"division|unit|category|geograph\w*|subsidiary|brand)\b", re.IGNORECASE)
_NAME_Q_RE = re.compile(r"^\s*(?:what|which|who)\b", re.IGNORECASE)
_VERB_RE = re.compile(r"\b(?:is|was|were|are|has|had|have|did|does|do|increased|decreased|rose|fell|grew|declined|"
                      r"reported|recorded|it|its|the\s+company|yes|no|not)\b", re.IGNORECASE)
_DIRECTION_WORDS = (r"(?:increas\w*|decreas\w*|higher|lower|improv\w*|deteriorat\w*|ris(?:e|en)|rose|f[ae]ll\w*|"
                    r"grow\w*|grew|shr[ai]nk\w*|declin\w*|up|down)")
# a question that asks for a direction: "... increase or decrease ...", "Did revenue grow in 2022?"
_DIRECTION_Q_RE = re.compile(rf"\b{_DIRECTION_WORDS}\s+or\s+{_DIRECTION_WORDS}\b"
                             rf"|^\s*(?:did|has|have|was|were|is|are|does|do)\b[^?]*\b{_DIRECTION_WORDS}\b",
                             re.IGNORECASE)


_BOTH_DIRECTIONS_Q_RE = re.compile(rf"\b{_DIRECTION_WORDS}\s+or\s+{_DIRECTION_WORDS}\b", re.IGNORECASE)


def sentence_contract(reference: str, question: str, periods: Sequence[str] = ()) -> Contract:
    """The committed parts of a reference written as sentences; the rest are key facts.

    * "Yes. ..." / "No, ..." -> a yes/no choice;
    * "Corporate. Its net revenue was -$473 million" -> the entity "Corporate" (a short verbless
      lead) is required, its figures are key facts;
    * one figure competing for the asked slot (answer_claims.read_claims: context and working set
      aside) -> that value, signed when the reference states a direction ("decreased by 1.7%");
    * no figure, one direction ("It decreased.") to a question about a direction -> higher/lower.
    Anything else: no contract, with the reason."""
    from finrag_pipeline.core.question_kind import asks_for_explanation
    from finrag_pipeline.core.scoring.answer_claims import ANSWER, CHANGE, CONTEXT, LEVEL, read_claims
    from finrag_pipeline.core.scoring.answer_metrics import DIRECTION_OPTIONS, asked_kind, direction_of

    text = re.sub(r"\*\*|__|`", "", reference or "").strip()
    if not text:
        return Contract(reason="the reference is empty")
    facts = key_facts_of(text, question)
    if m := _YES_NO_RE.match(text):
        return Contract(choice=m.group(1).lower(), options=list(YES_NO_OPTIONS), key_facts=facts,
                        reason=f"a yes/no reference: {m.group(1).lower()}")
    if asks_for_explanation(question or ""):
        # "Why ...?" / "What drove ...?" (the one question-kind rule: core/retrieval/question_kind.py,
        # assets_config/question_kinds.yaml): the figures of the reference support the explanation
        return Contract(key_facts=facts, reason="a narrative question: key facts only (key_fact_recall)"
                        if facts else "a narrative question whose reference names no key fact")
    if _BOTH_DIRECTIONS_Q_RE.search(question or ""):
        # "Did revenue rise or fall ...?": the direction is asked, whatever figures the reference adds
        lead = re.split(r"[:(]|(?<!\d)\.(?!\d)", text, maxsplit=1)[0]
        direction, why = direction_of(lead, question)
        if direction:
            return Contract(choice=direction, options=list(DIRECTION_OPTIONS), key_facts=facts,
                            reason=f"a direction asked; the reference's lead states {direction}")
    options = question_options(question)
    if options:
        from finrag_pipeline.core.scoring.answer_metrics import choice_of

        chosen, why = choice_of(text, options, question)
        if chosen is not None:
            return Contract(choice=chosen, options=options, key_facts=facts,
                            reason=f"the reference chooses {chosen!r} among the question's options {options}")
    lead = _LEAD_FRAGMENT_RE.match(text) if _WHICH_Q_RE.search(question or "") else None
    if lead and not _NOT_A_NAME_RE.match(lead.group("e")) and not years_in(lead.group("e")) \
            and not parse_figures(lead.group("e")) and not _VERB_RE.search(lead.group("e")) \
            and text[lead.end():].strip():
        entity = lead.group("e").strip().rstrip(".")
        return Contract(required_terms=[entity], key_facts=[f for f in facts if f != entity],
                        reason=f"the reference names {entity!r} as its answer")
    name = text.strip().rstrip(".")
    if _NAME_Q_RE.match(question or "") and 0 < len(name.split()) <= 5 and not parse_figures(name, keep_years=True) \
            and not _VERB_RE.search(name) and not _NOT_A_NAME_RE.match(name):
        # "What was the largest liability ...?" -> "Customer deposits": the name is the answer
        return Contract(required_terms=[name], key_facts=[f for f in facts if f != name],
                        reason=f"the reference is the name {name!r}")
    asked = requested_units(question)
    years = {y for p in periods for y in years_in(p)} or years_in(question)
    figs = [f for f in parse_figures(text, scale=scale_of_text(text) or asked.scale or 1.0)
            if f.percent or f.points or f.currency or f.explicit_scale or f.per_share or f.decimals or f.magnitude >= 10]
    if figs:
        kind = asked_kind(question, [])
        reading = read_claims(text, figs, asked_years=years, asked_kind=kind)
        stated = [c for c in reading.claims if c.role == ANSWER]
        answers = _of_the_asked_kind(stated, question, asked)
        narrowed = len(stated) > 1 and len(answers) == 1
        levels = [c for c in reading.claims if c.role == CONTEXT and c.kind == LEVEL]
        if kind == CHANGE and not answers and len(levels) == 2:
            return _change_of_levels(levels[0].figure, levels[1].figure, asked, facts)
        competing = [c for c in reading.claims if c.role != "operand"] if reading.is_list else answers
        several = _several_asked(question, competing, f"FY{next(iter(years))}" if len(years) == 1 else None)
        if several is not None:
            return Contract(values=several, inputs=[{**v, "role": "source"} for v in several], key_facts=facts,
                            reason=f"the question asks for {len(several)} things; the reference states each under its "
                                   f"label ({[v['label'] for v in several]})")
        if (reading.is_list and not narrowed) or len(answers) != 1:
            return Contract(key_facts=facts, reason=f"the reference states {len(answers)} figures competing for "
                                                      f"the answer ({[c.figure.text for c in answers][:4]})")
        f = answers[0].figure
        period = f"FY{answers[0].period}" if answers[0].period else (f"FY{next(iter(years))}" if len(years) == 1
                                                                      else None)
        value = value_from_figure(f, period=period)
        direction, _ = direction_of(text[:f.start + len(f.text)], question) if answers[0].kind == "change" \
            else (None, "")
        if direction:
            value["signed"] = True
            if direction == "lower" and value["value"] > 0:
                value["value"] = -value["value"]
        value = apply_requested_units(value, f, asked)
        return Contract(values=[value], key_facts=[k for k in facts if k != f.text],
                        reason=f"the reference's one answer figure {f.text!r}")
    if _DIRECTION_Q_RE.search(question or ""):
        direction, why = direction_of(text, question)
        if direction:
            return Contract(choice=direction, options=list(DIRECTION_OPTIONS), key_facts=facts,
                            reason=f"the reference states one direction: {direction}")
    if facts:
        return Contract(key_facts=facts, reason="a narrative reference: key facts only (key_fact_recall)")
    return Contract(reason="the reference states no figure, option or key fact")


# "What were Nvidia's revenue and its CFO in fiscal 2025?": several quantities asked at once
_SEVERAL_Q_RE = re.compile(r"^\s*(?:what|how\s+much)\s+(?:were|was|are|is|did)\b[^?]*?\w\s+(?:and|as\s+well\s+as)\s+"
                           r"(?:its\s+|their\s+|the\s+)?\w", re.IGNORECASE)


_LABEL_VERBS = frozenset(["was", "were", "is", "are", "had", "has", "have", "tota", "amou", "reac", "stoo", "came"])


# "how much" asks an amount; "by how much" may be answered as an amount or a percentage
_AMOUNT_Q_RE = re.compile(r"(?<!by )\bhow\s+much\b|\bamount\b|\bUSD\b|\$|\bdollars?\b", re.IGNORECASE)


def _of_the_asked_kind(claims: list[Any], question: str, asked: RequestedUnits) -> list[Any]:
    """The competing figures of a reference that are of the kind the question asks for, when that
    singles one out: an amount ("How much did PepsiCo raise in debt?": "$2.5 billion ... 5.25% Senior
    Notes"; "total dividends": "$7,616 million, or $1.76 per share"), or a percentage (a margin, rate,
    share: "21.4% ... $3,000 million"). Otherwise the figures as they are."""
    if len(claims) < 2:
        return claims
    if asked.unit == "percent" or (asked.ratio_is_percent and not _AMOUNT_Q_RE.search(question or "")):
        kept = [c for c in claims if c.figure.percent and not c.figure.points]
    elif _AMOUNT_Q_RE.search(question or "") and "per share" not in (question or "").lower():
        kept = [c for c in claims if (c.figure.currency or c.figure.explicit_scale) and not c.figure.percent
                and not c.figure.points and not c.figure.per_share]
    else:
        return claims
    return kept if len(kept) == 1 else claims


def _several_asked(question: str, claims: Sequence[Any], period: str | None) -> list[dict[str, Any]] | None:
    """The values of a reference that answers a question asking for two or three quantities ("revenue
    and CFO"), each stated under its own label ("Total revenue: $130,497 million; Net cash provided by
    operating activities: $64,089 million"): one value per figure, carrying its label (an answer that
    swaps two figures between the labels is wrong). None otherwise."""
    if not _SEVERAL_Q_RE.search(question or "") or not 2 <= len(claims) <= 3:
        return None
    labels = [content_words(c.label) - _LABEL_VERBS for c in claims]
    if not all(labels) or any(a & b for i, a in enumerate(labels) for b in labels[i + 1:]):
        return None
    return [{**value_from_figure(c.figure, period=period), "label": c.label} for c in claims]


def _change_of_levels(a: Figure, b: Figure, asked: RequestedUnits, facts: list[str]) -> Contract:
    """A change asked, a reference that states the two levels ("changed from 24.6% in FY2021 to 21.6% in
    FY2022"): the change is B - A (points for percents, which "-3.0%" may state too); A and B are its inputs."""
    decimals = max(a.decimals, b.decimals)
    diff = round(b.value - a.value, 10)
    if a.percent and b.percent:
        value = answer_value(diff, "percent", text=f"{diff:.{decimals}f}%", signed=True)
        value["points_equivalent"] = True
    elif (a.percent or a.points) != (b.percent or b.points):
        return Contract(key_facts=facts, reason=f"the reference states two levels of different units ({a.text}, {b.text})")
    else:
        scale = b.scale if b.scale == a.scale else 1.0
        value = {**value_from_figure(b), "value": diff / scale, "scale": scale, "text": f"{diff / scale:.{decimals}f}",
                 "signed": True}
    value = apply_requested_units(value, b, asked)
    value["levels_stated"] = True     # an answer in the reference's own words (the two levels) is right too
    inputs = [{**value_from_figure(f), "role": "source"} for f in (a, b)]
    return Contract(values=[value], inputs=inputs, key_facts=facts,
                    reason=f"a change asked; the reference states the levels {a.text} -> {b.text}: change {value['text']}")


# ---------------------------------------------------------------------------------------------
# Key facts: figures, named entities and named causes of a reference

_CAUSE_RE = re.compile(r"\b(?:due\s+to|driven\s+(?:primarily\s+|mainly\s+|largely\s+)?by|because\s+of|as\s+a\s+result\s+of|"
                       r"primarily\s+(?:from|by)|reflect(?:s|ing|ed)?|attributable\s+to|owing\s+to|resulting\s+from|"
                       r"higher|lower|increased|decreased|growth\s+in|declines?\s+in)\s+(?P<c>[^.;]+)", re.IGNORECASE)
# names: capitalised words not opening a sentence ("Greater China", "Services"), or with an inner
# capital ("iPhone"); "of" may join them ("Bank of America"), "and" lists two
_ENTITY_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][A-Za-z0-9&\-]+(?:\s+(?:of\s+)?[A-Z][A-Za-z0-9&\-]+)*"
                        r"|[a-z]+[A-Z][A-Za-z0-9&\-]*)")


def key_facts_of(reference: str, question: str = "") -> list[str]:
    """The key facts of a reference: its figures as printed, the entities it names (capitalised
    names not opening a sentence: "iPhone", "Greater China") and the causes it names ("due to ...",
    "driven by ...", "higher net sales of iPhone and Services" -> each item). A worded fact the
    question already states ("Mac" for "Why did Mac net sales rise?") is given, not a fact to recall:
    an echo of the question recalls nothing."""
    text = re.sub(r"\*\*|__|`", "", reference or "")
    facts: list[str] = []
    given = content_words(question)

    def add(fact: str) -> None:
        fact = fact.strip(" ,.;:()")
        words = content_words(fact)
        if fact and fact.lower() not in {f.lower() for f in facts} and words and not words <= given:
            facts.append(fact)

    for f in parse_figures(text):
        if f.percent or f.points or f.currency or f.explicit_scale or f.decimals or abs(f.value) >= 10:
            facts.append(f.text.strip(" ()"))
    for m in _ENTITY_RE.finditer(text):
        add(m.group(1))
    entities = list(facts)

    def add_parts(clause: str) -> None:
        for part in re.split(r",\s*(?:and\s+)?|;\s*|\s+and\s+", clause):
            # a part naming an entity already listed adds nothing ("net sales of iPhone" after "iPhone")
            if not parse_figures(part) and not any(re.search(rf"(?<!\w){re.escape(e)}(?!\w)", part) for e in entities):
                add(part)

    causes = list(_CAUSE_RE.finditer(text))
    for m in causes:
        add_parts(m.group("c"))
    if not causes and len(facts) <= 1:
        add_parts(text)       # a short cause with no marker: "The weakness of the yen relative to the U.S. dollar."
    return facts


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
        # a number written alone ("(1,234)", "4.2"): the unit says its scale; otherwise the figure says it
        figs = [] if isinstance(given, int | float) else parse_figures(str(given), keep_years=True)
        number = float(given) if isinstance(given, int | float) else (figs[0].as_printed if len(figs) == 1 else None)
        if unit and number is not None:
            return [answer_value(number, unit, period=period, tolerance=tolerance)], None, []
        f = parse_figure(str(given))
        if f is None:
            raise ValueError(f"{item.qa_id}: answer_value {given!r} is not a figure")
        return [value_from_figure(f, period=period, tolerance=tolerance)], None, []
    contract = reference_contract(item)
    return contract.values, contract.choice, contract.options


def reference_contract(item: QAItem) -> Contract:
    """The contract of an item that records none but its question and reference answer: a reference
    that is one figure (in the units the question asks for), else the committed parts of a sentence
    reference (:func:`sentence_contract`)."""
    return contract_from_text(item.question, item.reference_answer, item.periods)


def contract_from_text(question: str, reference: str, periods: Sequence[str] = ()) -> Contract:
    """:func:`reference_contract` from a question and a reference answer alone (an external labelled
    set, a judge's input)."""
    by_year = year_choice_contract(question, reference)
    if by_year is not None:
        return by_year
    asked = requested_units(question)
    single = single_figure_answer(reference)
    years = years_in(question)
    period = periods[0] if len(periods) == 1 else (f"FY{next(iter(years))}" if len(years) == 1 else None)
    if single is not None:
        f, tolerance = single
        value = apply_requested_units(value_from_figure(f, period=period, tolerance=tolerance), f, asked)
        if _TIMES_RE.search(reference) and value.get("unit") is None:
            value["unit"] = "ratio"     # "40.0x", "9.5 times": a multiple
        return Contract(values=[value], reason=f"the reference is one figure {f.text!r}")
    return sentence_contract(reference, question, periods)


_TIMES_RE = re.compile(r"\d\s*(?:x|times)\b", re.IGNORECASE)

# "In which fiscal year ...?", "What year ...?", "... higher in fiscal 2022 or in fiscal 2021?"
_WHICH_YEAR_Q_RE = re.compile(r"\b(?:which|what)\s+(?:fiscal\s+|calendar\s+)?(?:year|period)\b"
                              r"|(?:19|20)\d\d\b[^?.]{0,25}\bor\b[^?.]{0,25}\b(?:FY\s?)?(?:19|20)\d\d\b", re.IGNORECASE)
_SECOND_PART_Q_RE = re.compile(r"(?:,|\band)\s+(?:by\s+)?(?:how|what|why|which)\b", re.IGNORECASE)
_YEAR_RANGE_RE = re.compile(r"\b(?:from|between)\s+(?:fiscal\s+(?:year\s+)?|FY\s?)?((?:19|20)\d\d)\s+(?:to|and|through)\s+"
                            r"(?:fiscal\s+(?:year\s+)?|FY\s?)?((?:19|20)\d\d)\b", re.IGNORECASE)


def year_choice_contract(question: str, reference: str) -> Contract | None:
    """A question that asks for a year among those it names ("In which fiscal year from 2020 to 2022
    ...?", "Was ... higher in fiscal 2022 or in fiscal 2021?") asks for the year, whatever figure the
    reference adds ("Fiscal 2022, with $394,328 million."): a choice among the named years (a range
    spelled out), the one the reference commits to (answer_metrics.choice_of). None for any other
    question, or a reference that commits to no one year."""
    from finrag_pipeline.core.scoring.answer_metrics import choice_of

    if not _WHICH_YEAR_Q_RE.search(question or "") or _SECOND_PART_Q_RE.search(question or ""):
        return None     # "Which year ..., and by how much?": the year is half the answer
    years = set(years_in(question))
    for m in _YEAR_RANGE_RE.finditer(question or ""):
        lo, hi = sorted((int(m.group(1)), int(m.group(2))))
        if hi - lo <= 10:
            years |= set(range(lo, hi + 1))
    if not years:      # "In which year did ... reach $394.3 billion?" -> "2022": the reference's one year
        years = set(years_in(reference))
        if len(years) != 1:
            return None
    options = [f"FY{y}" for y in sorted(years)]
    chosen, why = choice_of(re.sub(r"\*\*|__|`", "", reference or ""), options, question)
    if chosen is None:
        return None
    return Contract(choice=chosen, options=options, key_facts=key_facts_of(reference, question),
                    reason=f"a year asked among {options}; the reference chooses {chosen} ({why})")


def ensure_contract(item: QAItem) -> QAItem:
    """The item with its contract filled when it has none yet (items stored before the contract).

    A contract derived from a sentence reference also records, in ``metadata``, the entity it requires
    (``required_terms``), its ``key_facts`` and how it was derived (``contract_note``); a reference
    no contract can be derived from records why (``contract_note``), so nothing is decided silently."""
    if item.answer_values or item.answer_choice:
        return item
    values, choice, options = derive_contract(item)
    if values or choice:
        item.answer_values, item.answer_choice = values, choice
        if options:
            item.metadata = {**item.metadata, "choice_options": options}
    templated = bool(item.metadata.get("template") or item.metadata.get("answer_value") not in (None, "")
                     or item.metadata.get("answer_choice"))
    if item.question_type != "unanswerable" and item.metadata.get("answerable") is not False \
            and "contract_note" not in item.metadata and not (templated and (values or choice)):
        contract = reference_contract(item)
        if contract.inputs and not item.answer_figures:
            item.answer_figures = contract.inputs
        extra: dict[str, Any] = {"contract_note": contract.reason}
        if contract.required_terms:
            extra["required_terms"] = contract.required_terms
        if contract.key_facts:
            extra["key_facts"] = contract.key_facts
        item.metadata = {**item.metadata, **extra}
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
    from finrag_pipeline.core.scoring.answer_metrics import choice_of

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
