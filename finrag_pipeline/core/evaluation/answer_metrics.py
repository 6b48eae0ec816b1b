"""Answer metrics: figure match, grounding, period check, page citations, LLM-as-judge.

Every metric returns ``(value, reason)``: ``value`` is a float in [0, 1], or ``None`` when it cannot
be computed (no reference figure, no gold page, judge failed, ...), and ``reason`` says why in
words. A value that cannot be computed is never filled in. The scoring policy per response state
(failures and unwanted abstentions score 0) lives in :func:`score_answer`; definitions are in
docs/METRICS.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ANSWERED = "answered"
FAILURE_STATES = frozenset({"backend_error", "invalid_output"})
NON_ANSWER_STATES = frozenset({"abstained", "insufficient_context", "no_evidence"})
RESPONSE_STATES = frozenset({ANSWERED}) | FAILURE_STATES | NON_ANSWER_STATES
ANSWER_METRICS = ("figure_match", "grounded", "period_ok", "citation_precision", "citation_recall",
                  "faithfulness", "answer_relevancy", "state_correct")

_SCALES = {"thousand": 1e3, "thousands": 1e3, "k": 1e3, "million": 1e6, "millions": 1e6, "m": 1e6,
           "mm": 1e6, "mn": 1e6, "billion": 1e9, "billions": 1e9, "b": 1e9, "bn": 1e9,
           "trillion": 1e12, "trillions": 1e12}
# Scales a figure printed WITHOUT a scale word may carry (table cells live under "(In millions)").
_IMPLICIT_SCALES = (1.0, 1e3, 1e6, 1e9)

_NUM_RE = re.compile(
    r"(?<![\w.])(?P<open>\()?\s*(?P<sign>[-\u2212\u2013])?\s*(?P<cur>\$|USD\s?|US\$)?\s*(?P<open2>\()?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?P<close>\))?"
    r"(?:\s*(?P<scale>trillions?|billions?|millions?|thousands?|bn|mm|mn|[bmk])(?![a-z]))?"
    r"(?:\s*(?P<pct>%|percent\b|per\s+cent\b))?",
    re.IGNORECASE,
)
# Not figures: citation markers and section numbers ("p. 40", "page 40", "Item 7").
_NOISE_RE = re.compile(r"\b(?:pages?|pp?\.|item|note|part)\s*\d+[a-z]?(?:\s*[-,]\s*\d+)*"
                       r"|\b[a-z]+(?:[-_][a-z0-9]+)*[-_]\d[\w-]*"     # identifiers: AAPL-2022-10K
                       r"|\b\d{1,2}-[kq]\b",                            # form names: 10-K, 10-Q, 8-K
                       re.IGNORECASE)
_YEAR_RE = re.compile(r"(?<![\d,.$])(?:FY\s?)?((?:19|20)\d{2})(?![\d,])", re.IGNORECASE)
_DECREASE_WORDS = re.compile(r"\b(decreas\w*|declin\w*|los[st]\w*|lower|fell|drop\w*|negative|down|deficit|"
                             r"reduc\w*|outflow)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Figure:
    """A number as written: ``value`` has sign and scale applied (USD 394.3 billion -> 3.943e11)."""

    value: float
    decimals: int          # digits shown after the decimal point (rounding precision)
    scale: float           # explicit scale word applied (1.0 when none was written)
    explicit_scale: bool
    percent: bool
    currency: bool
    text: str

    @property
    def is_year(self) -> bool:
        return (not self.percent and not self.currency and not self.explicit_scale and self.decimals == 0
                and 1900 <= self.value <= 2100 and "," not in self.text)

    @property
    def tolerance(self) -> float:
        """Half a unit in the last place shown: '394.3 billion' stands for anything within 0.05e9."""
        return 0.5 * 10 ** (-self.decimals) * self.scale


def parse_figures(text: str, *, keep_years: bool = False) -> list[Figure]:
    """Every number in ``text`` (citation markers like 'p. 40' removed), with unit and sign.

    Parentheses around a number mean negative (accounting style), as does a leading minus.
    Years (1900-2100 written without comma, currency, scale or percent) are dropped unless asked.
    """
    text = _NOISE_RE.sub(" ", text or "")
    out = []
    for m in _NUM_RE.finditer(text):
        raw = m.group("num")
        value = float(raw.replace(",", ""))
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        scale_word = (m.group("scale") or "").lower()
        # a lone b/m/k is a scale only right after a number with a currency sign ("$4.2B")
        if scale_word in ("b", "m", "k") and not m.group("cur"):
            scale_word = ""
        scale = _SCALES.get(scale_word, 1.0)
        negative = bool(m.group("sign")) or bool((m.group("open") or m.group("open2")) and m.group("close"))
        fig = Figure(value=(-1 if negative else 1) * value * scale, decimals=decimals, scale=scale,
                     explicit_scale=bool(scale_word), percent=bool(m.group("pct")),
                     currency=bool(m.group("cur")), text=m.group(0).strip())
        if fig.is_year and not keep_years:
            continue
        out.append(fig)
    return out


def years_in(text: str) -> set[int]:
    """Four-digit years 1900-2099 mentioned in ``text`` ('FY2022', 'fiscal 2022', 'September 24, 2022')."""
    return {int(y) for y in _YEAR_RE.findall(text or "")}


def scale_of_unit(unit: str | None) -> float:
    """'USD millions' -> 1e6, 'thousands' -> 1e3, 'USD' / 'percent' / None -> 1."""
    for word in re.findall(r"[a-z]+", (unit or "").lower()):
        if word in _SCALES and len(word) > 1:
            return _SCALES[word]
    return 1.0


def _close(a: float, b: float, tol: float) -> bool:
    return abs(a - b) <= tol + 1e-9 * max(abs(a), abs(b), 1.0)


def figures_match(answer: Figure, reference: Figure, *, answer_text: str = "") -> bool:
    """Does the answer's figure state the reference figure, within the rounding either one shows?

    * amounts compare in base units, tolerance = the larger half-unit-in-the-last-place of the two
      ('$394.3 billion' == '394,328' million: |394.3e9 - 394.328e9| <= 0.05e9);
    * a figure written without a scale word may be in any table scale (1, thousands, millions,
      billions) on that side, since tables print '394,328' under '(In millions)';
    * percentages compare as percent points (a reference stored as a fraction 0.125 == '12.5%');
    * sign: equal signs, or the answer words a negative reference as a decrease ('decreased by
      $2.1 billion' == -2,100 million).
    """
    if answer.percent or reference.percent:
        if not (answer.percent and reference.percent) and not (reference.percent and not answer.currency):
            return False
        r_vals = [reference.value, reference.value * 100] if abs(reference.value) <= 1 else [reference.value]
        tol = max(answer.tolerance, reference.tolerance)
        return any(_candidate_ok(answer.value, r, tol, reference.value < 0, answer_text) for r in r_vals)
    a_scales = (answer.scale,) if answer.explicit_scale else _IMPLICIT_SCALES
    r_scales = (reference.scale,) if reference.explicit_scale else _IMPLICIT_SCALES
    a_base = answer.value / answer.scale
    r_base = reference.value / reference.scale
    for sa in a_scales:
        for sr in r_scales:
            tol = max(0.5 * 10 ** (-answer.decimals) * sa, 0.5 * 10 ** (-reference.decimals) * sr)
            if _candidate_ok(a_base * sa, r_base * sr, tol, r_base < 0, answer_text):
                return True
    return False


def _candidate_ok(a: float, r: float, tol: float, ref_negative: bool, answer_text: str) -> bool:
    if _close(a, r, tol):
        return True
    # "decreased by 2.1 billion" states -2.1 billion with a word instead of a sign
    return ref_negative and a > 0 and bool(_DECREASE_WORDS.search(answer_text)) and _close(a, -r, tol)


def reference_figures(answer_figures: Sequence[Mapping[str, Any]], reference_answer: str = "") -> list[Figure]:
    """QA reference figures ``[{value, unit, period, text}]`` -> Figures in base units.

    ``value`` is taken as printed in ``unit`` ('USD millions' scales it by 1e6); with no value the
    printed ``text`` is parsed; with no figure at all, the numbers of ``reference_answer``.
    """
    out: list[Figure] = []
    for f in answer_figures or []:
        unit = str(f.get("unit") or "")
        text = str(f.get("text") or "")
        parsed = parse_figures(text, keep_years=True) if text else []
        percent = "percent" in unit.lower() or "%" in unit or bool(parsed and parsed[0].percent)
        if f.get("value") is not None:
            v = float(f["value"])
            scale = scale_of_unit(unit)
            if (scale == 1.0 and parsed and parsed[0].explicit_scale
                    and _close(abs(v), abs(parsed[0].value) / parsed[0].scale, 0.5 * 10 ** -parsed[0].decimals)):
                scale = parsed[0].scale  # value printed in the text's scale: 394.3 with "$394.3 billion"
            decimals = parsed[0].decimals if parsed else _decimals_of(v)
            out.append(Figure(v * scale, decimals, scale, scale != 1.0, percent, "usd" in unit.lower(),
                              text or str(f["value"])))
        elif parsed:
            p = parsed[0]
            scale = scale_of_unit(unit) if not p.explicit_scale else p.scale
            out.append(Figure(p.value / p.scale * scale, p.decimals, scale, scale != 1.0, percent or p.percent,
                              p.currency, p.text))
    if not out and reference_answer:
        out = parse_figures(reference_answer)
    return out


def _decimals_of(v: float) -> int:
    s = repr(v)
    if "e" in s or "." not in s:
        return 0
    frac = s.split(".")[1].rstrip("0")
    return len(frac)


# ---------------------------------------------------------------------------------------------
# Metrics


def figure_match(answer: str, references: Sequence[Figure]) -> tuple[float | None, str]:
    """Share of reference figures the answer states (1.0 = every figure, e.g. both years of a
    comparison). None when the question has no reference figure (narrative, unanswerable)."""
    if not references:
        return None, "no reference figure"
    stated = parse_figures(answer)
    if not stated:
        return 0.0, "the answer states no figure"
    missing = [r.text for r in references if not any(figures_match(a, r, answer_text=answer) for a in stated)]
    score = 1 - len(missing) / len(references)
    return score, ("all reference figures stated" if not missing else f"missing {missing}")


def grounding(answer: str, cited_texts: Iterable[str]) -> tuple[float | None, str]:
    """1 if every figure in the answer also appears in the evidence it cites, else 0.

    Evidence numbers usually carry no scale word (table cells), so an answer figure is grounded
    when some evidence number equals it in one of the table scales within rounding. Small bare
    integers (< 10, no unit) are ignored: they are counts and ordinals, not reported figures.
    None when the answer states no figure.
    """
    figures = [f for f in parse_figures(answer)
               if f.percent or f.currency or f.explicit_scale or abs(f.value) >= 10 or f.decimals]
    if not figures:
        return None, "the answer states no figure"
    evidence = [f for t in cited_texts for f in parse_figures(t, keep_years=False)]
    ungrounded = [a.text for a in figures
                  if not any(_grounded_by(a, e) for e in evidence)]
    if ungrounded:
        return 0.0, f"not in the cited evidence: {ungrounded}"
    return 1.0, "every figure appears in the cited evidence"


def _grounded_by(a: Figure, e: Figure) -> bool:
    # grounding is about the number itself: a sign written as a word in the answer is fine
    if figures_match(a, e, answer_text="decrease"):
        return True
    return figures_match(Figure(-a.value, a.decimals, a.scale, a.explicit_scale, a.percent, a.currency, a.text),
                         e)


def period_check(answer: str, asked_periods: Sequence[str]) -> tuple[float | None, str]:
    """1 if the answer names every year it was asked about, else 0 (an answer that names no
    period cannot show it reports the right one). None when the question asks for no period."""
    asked = set().union(*(years_in(p) for p in asked_periods)) if asked_periods else set()
    if not asked:
        return None, "the question asks for no period"
    stated = years_in(answer)
    if not stated:
        return 0.0, "the answer states no period"
    missing = sorted(asked - stated)
    if missing:
        return 0.0, f"asked {sorted(asked)}, answer states {sorted(stated)}"
    return 1.0, "asked period stated"


def citation_scores(cited_pages: Iterable[tuple[str, int]],
                    gold_groups: Sequence[Iterable[tuple[str, int]]]) -> tuple[tuple[float | None, str],
                                                                               tuple[float | None, str]]:
    """Page-level citation precision and recall.

    precision = cited pages that hold gold evidence (any alternative) / distinct cited pages;
    recall = required evidence groups with at least one cited page / number of groups (the
    grouping of retrieval recall). None when there is nothing to divide by.
    """
    cited = {(str(f), int(p)) for f, p in cited_pages}
    groups = [{(str(f), int(p)) for f, p in g} for g in gold_groups]
    groups = [g for g in groups if g]
    gold = set().union(*groups) if groups else set()
    if not cited:
        precision = (None, "no citation")
    elif not gold:
        precision = (None, "no gold evidence page")
    else:
        precision = (len(cited & gold) / len(cited), f"{len(cited & gold)}/{len(cited)} cited pages hold evidence")
    if not groups:
        recall = (None, "no gold evidence page")
    else:
        found = sum(1 for g in groups if g & cited)
        recall = (found / len(groups), f"{found}/{len(groups)} evidence groups cited")
    return precision, recall


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


def score_answer(*, answer: str, response_state: str, citations: Sequence[tuple[str, int, str | None]],
                 cited_texts: Sequence[str], references: Sequence[Figure], asked_periods: Sequence[str],
                 gold_page_groups: Sequence[Iterable[tuple[str, int]]], question: str = "",
                 judge: LLMJudge | None = None) -> tuple[dict[str, float | None], dict[str, Any]]:
    """All answer metrics of one answer -> (metrics, notes with the reason for each value).

    Policy (so that no failure vanishes from a mean):
    * backend_error / invalid_output: every metric is 0 - the system gave no usable answer;
    * abstained / insufficient_context / no_evidence on an answerable question: every metric 0;
      on an unanswerable one (no gold evidence) abstaining is right: ``state_correct`` = 1 and the
      other metrics are None (nothing to compare against);
    * answered: each metric computed; None only when it is not computable, with the reason.
    ``state_correct`` = answered an answerable question, or did not answer an unanswerable one.
    """
    if response_state not in RESPONSE_STATES:
        raise ValueError(f"unknown response state {response_state!r}")
    answerable = any(True for g in gold_page_groups for _ in g)
    notes: dict[str, Any] = {}
    if response_state in FAILURE_STATES or (response_state in NON_ANSWER_STATES and answerable):
        reason = f"{response_state}: scored 0"
        return dict.fromkeys(ANSWER_METRICS, 0.0), dict.fromkeys(ANSWER_METRICS, reason)
    if response_state in NON_ANSWER_STATES:
        metrics: dict[str, float | None] = dict.fromkeys(ANSWER_METRICS)
        notes = dict.fromkeys(ANSWER_METRICS, "unanswerable question, correctly not answered")
        metrics["state_correct"] = 1.0
        return metrics, notes
    metrics = {}
    metrics["figure_match"], notes["figure_match"] = figure_match(answer, references)
    metrics["grounded"], notes["grounded"] = grounding(answer, cited_texts)
    metrics["period_ok"], notes["period_ok"] = period_check(answer, asked_periods)
    (p, p_note), (r, r_note) = citation_scores([(c[0], c[1]) for c in citations], gold_page_groups)
    metrics["citation_precision"], notes["citation_precision"] = p, p_note
    metrics["citation_recall"], notes["citation_recall"] = r, r_note
    if judge is None:
        metrics["faithfulness"] = metrics["answer_relevancy"] = None
        notes["faithfulness"] = notes["answer_relevancy"] = "no judge configured"
    else:
        metrics["faithfulness"], notes["faithfulness"] = judge.faithfulness(question, answer, cited_texts)
        metrics["answer_relevancy"], notes["answer_relevancy"] = judge.relevancy(question, answer)
    metrics["state_correct"] = 1.0 if answerable else 0.0
    notes["state_correct"] = "answered" + ("" if answerable else " an unanswerable question")
    return metrics, notes
