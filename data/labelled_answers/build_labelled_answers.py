"""Writes answers.jsonl: answers in the styles of eight kinds of RAG system to the demo's QA items and
the analysts' questions, each with the label the labelling guide gives it.

    PYTHONPATH=$PWD python data/labelled_answers/build_labelled_answers.py --warehouse PATH/warehouse.duckdb

``--warehouse``: a demo home's warehouse (`make demo`), read through a private copy. The answers are
written from what a labeller reads off each question (the asked figure, its inputs, the prior period's
figure; by hand for the analysts' questions, analyst_facts.py) in a style and with an error of the
system's profile; the label follows from the guide's rule for that error (LABELLING_GUIDE.md), never
from the project's scorer, and every row was then read against its reference (label_note says why).
Everything is seeded: the same warehouse gives the same file.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from analyst_facts import CHOICES, FIGURES, NARRATIVE_ANSWERS, UNANSWERABLE  # noqa: E402

SEED = 25
ANALYST_FILE = HERE.parents[1] / "finrag_pipeline_tests" / "data" / "external" / "analyst_questions.jsonl"

# system -> (variant, weight): the error profile of each kind of system.
SYSTEMS = {
    "concise-frontier": [("c_plain", 45), ("c_bare", 10), ("c_sentence", 20), ("i_wrong_year", 10), ("i_operand", 5),
                         ("r_context", 5), ("i_slip", 5)],
    "working-frontier": [("c_working", 40), ("c_verbose", 15), ("c_markdown", 10), ("c_prior", 10), ("i_slip", 15), ("r_cannot", 5),
                         ("i_operand", 5)],
    "context-70b": [("c_prior", 35), ("c_prior_move", 20), ("i_swapped_years", 15), ("i_wrong_year", 10),
                    ("i_sign", 10), ("c_sentence", 10)],
    "rescaling-frontier": [("c_scaled", 50), ("c_raw", 10), ("c_plain", 15), ("i_scale", 15), ("i_coarse", 10)],
    "markdown-rag": [("c_markdown", 35), ("c_table", 15), ("c_working", 15), ("i_candidates", 20), ("r_context", 15)],
    "cautious-rag": [("c_sentence", 35), ("r_context", 25), ("r_cannot", 15), ("r_need", 10), ("i_hedge", 15)],
    "hedging-rag": [("c_plain", 30), ("c_chatty", 20), ("i_hedge", 25), ("i_candidates", 25)],
    "small-oss": [("c_chatty", 20), ("c_verbose", 10), ("i_sign", 15), ("i_operand", 15), ("i_slip", 15), ("i_wrong_year", 10),
                  ("r_need", 15)],
}
FALLBACK = {"c_table": "c_markdown", "c_prior": "c_sentence", "c_prior_move": "c_sentence", "c_working": "c_sentence",
            "i_wrong_year": "i_slip", "i_swapped_years": "i_slip", "i_operand": "i_slip", "c_raw": "c_plain",
            "i_coarse": "i_scale"}
REFUSALS = {
    "r_context": "The provided context does not contain {co}'s {metric} for {period}.",
    "r_cannot": "I cannot determine this from the information available in the retrieved documents.",
    "r_need": "I'm sorry, but the excerpts I was given don't include enough information to answer that question.",
}


# ---------------------------------------------------------------------------------------------
# Figures


class Fig:
    """One asked figure as a labeller reads it: kind (usd_m, pct, x, ratio, days), value, the decimals
    the question asks for, period words, the prior period's value, the inputs and the working."""

    def __init__(self, key, company, metric, kind, value, decimals, period, prior_period=None, prior=None,
                 operands=(), working=None, signed=False, margin_like=False, question="", other_items=()):
        self.key, self.company, self.metric, self.kind, self.question = key, company, metric, kind, question
        self.value, self.decimals, self.period = value, decimals, period
        self.prior_period, self.prior = prior_period, prior
        self.operands, self.working, self.signed, self.margin_like = list(operands), working, signed, margin_like
        self.other_items = [o for o in other_items if abs(o[1] - value) > 0.01 * abs(value)]   # (label, value)
        self.pin = _with_preposition(period)
        self.prior_pin = _with_preposition(prior_period) if prior_period else None

    def fmt(self, v, style="exact"):
        k, d = self.kind, self.decimals
        if k == "usd_m":
            sign = "-" if v < 0 else ""
            a = abs(v)
            exact = f"{a:,.1f}" if a != round(a) else f"{a:,.0f}"
            billion = f"{a / 1000:,.1f}" if a >= 10_000 else f"{a / 1000:,.2f}"   # three figures or more
            return {"exact": f"{sign}${exact} million", "billion": f"{sign}${billion} billion",
                    "raw": f"{sign}${a * 1e6:,.0f}", "wrong_scale": f"{sign}${a:,.0f} billion",
                    "coarse": f"{sign}${a / 1e6:.1f} trillion" if a >= 100_000 else f"{sign}${a / 1000:.0f} billion"
                    }[style]
        if k == "pct":
            return {"exact": f"{v:.{d}f}%", "fraction": f"{v / 100:.3f}", "wrong_scale": f"{v / 100:.3f}%",
                    "billion": f"{v:.2f}%", "raw": f"{v:.{d}f} percent", "coarse": f"{v:.{d}f} basis points"}[style]
        if k == "x":
            return {"exact": f"{v:.{d}f}x", "billion": f"{v:.{d}f} times", "raw": f"{v:.{d}f}",
                    "wrong_scale": f"{v * 100:.0f}x", "coarse": f"{v * 100:.0f}%", "fraction": f"{v:.{d}f}"}[style]
        if k == "ratio":
            return {"exact": f"{v:.{d}f}", "billion": f"{v:.{d}f}x", "raw": f"{v:.{d}f} to 1",
                    "wrong_scale": f"{v * 100:.{d}f}", "coarse": f"{v * 100:.0f}%", "fraction": f"{v:.{d}f}"}[style]
        if k == "days":
            return {"exact": f"{v:.{d}f} days", "billion": f"about {v:.{d}f} days", "raw": f"{v:.{d}f} days",
                    "wrong_scale": f"{v / 365:.{d}f} days", "coarse": f"{v / 30:.1f} months", "fraction": f"{v:.{d}f}"
                    }[style]
        raise ValueError(k)

    @property
    def v(self):
        return self.fmt(self.value)

    def slip(self, rng):
        delta = rng.choice([-1, 1]) * rng.uniform(0.04, 0.12)
        wrong = self.value * (1 + delta)
        return round(wrong) if self.kind == "usd_m" else wrong


def _a(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _amount_millions(text: str) -> float:
    m = re.search(r"\$([\d,.]+) (million|billion|trillion)", text)
    return float(m.group(1).replace(",", "")) * {"million": 1, "billion": 1e3, "trillion": 1e6}[m.group(2)]


def _with_preposition(period: str) -> str:
    return f"as of {period}" if re.search(r"[A-Z][a-z]+ \d", period) else f"in {period}"


def fig_answer(f: Fig, variant: str, rng: random.Random) -> tuple[str, str, str]:
    """(answer, label, note) of one variant for a figure question."""
    co, metric, period, pin = f.company, f.metric, f.period, f.pin
    if variant in ("c_prior", "c_prior_move", "i_wrong_year", "i_swapped_years") and f.prior is None:
        variant = FALLBACK[variant]
    if variant == "i_operand" and not f.operands and f.other_items:
        label, other = rng.choice(f.other_items)
        return (f"{co}'s {metric} {pin} was {f.fmt(other)}."), "Incorrect", f"another line item's figure ({label})"
    if variant == "i_operand" and not f.operands:
        variant = "i_slip"
    if variant == "c_working" and not (f.working or f.operands):
        variant = "c_sentence"
    if variant == "c_raw" and f.kind != "usd_m":
        variant = "c_plain"
    if variant == "i_coarse" and f.kind != "usd_m":
        variant = "i_scale"
    if variant == "c_table" and f.prior is None:
        variant = FALLBACK[variant]
    if variant == "c_plain":
        return rng.choice([f.v, f"{f.v}.", f"{f.v} ({period})"]), "Correct", "the asked figure"
    if variant == "c_bare":
        # the unit the question asks for, left out: "111,443" to "... in USD millions?"
        if f.kind == "usd_m" and re.search(r"USD millions|millions of", f.question, re.I):
            return f"{f.value:,.0f}", "Correct", "the asked figure in the unit the question asks for"
        if f.kind == "usd_m":
            return f"{f.value:,.0f} (in millions of USD)", "Correct", "the asked figure, unit spelled out"
        if f.kind == "pct" and re.search(r"percent", f.question, re.I):
            return f"{f.value:.{f.decimals}f}", "Correct", "the asked figure in the unit the question asks for"
        return f.v, "Correct", "the asked figure"
    if variant == "c_verbose":
        if f.operands and f.working:
            ops = " and ".join(f"{lab} was {val}" for lab, val in f.operands)
            lhs = f.working.rsplit("=", 1)[0].strip()
            return (f"To find {co}'s {metric} {pin}, I used the figures reported in the 10-K. {ops[0].upper() + ops[1:]}. "
                    f"{metric[0].upper() + metric[1:]} = {lhs} \u2248 {f.working.rsplit('=', 1)[1].strip()}.\n\n"
                    f"Therefore, {co}'s {metric} {pin} was approximately **{f.v}**."), "Correct", \
                "long working, the asked figure in bold at the end"
        context = f" This compares with {f.fmt(f.prior)} {f.prior_pin}." if f.prior is not None else ""
        return (f"According to {co}'s consolidated financial statements in its annual report on Form 10-K, the "
                f"{metric} {pin} was **{f.v}**.{context} This figure is taken directly from the filing."), "Correct", \
            "long answer, the asked figure in bold" + (", prior period attributed" if context else "")
    if variant == "c_table":
        return (f"| | {period} | {f.prior_period} |\n|---|---|---|\n| {metric[0].upper() + metric[1:]} | {f.v} | "
                f"{f.fmt(f.prior)} |\n\n**Answer:** {f.v}"), "Correct", "a table of both periods, then the asked figure"
    if variant == "c_sentence":
        return f"{co}'s {metric} {pin} was {f.v}.", "Correct", "the asked figure in a sentence"
    if variant == "c_chatty":
        return (f"Sure! Based on the 10-K filing, {co}'s {metric} {pin} came to {f.v}. Let me know if you "
                "need a breakdown."), "Correct", "the asked figure, chatty"
    if variant == "c_working":
        ops = "; ".join(f"{lab} {val}" for lab, val in f.operands)
        if not f.working:
            return (f"From the statements: {ops}. That gives {_a(metric)} {metric} of {f.v} {pin}."), "Correct", \
                "inputs quoted, then the asked figure"
        return (f"From the statements: {ops}. {metric[0].upper() + metric[1:]} = {f.working}, so {f.v} "
                f"{pin}."), "Correct", "shown working ends in the asked figure"
    if variant == "c_markdown":
        lines = [f"**{metric[0].upper() + metric[1:]} ({period}): {f.v}**", ""]
        lines += [f"- {lab[0].upper() + lab[1:]}: {val}" for lab, val in f.operands]
        if f.working:
            lines.append(f"- Calculation: {f.working}")
        if not f.operands:
            lines.append(f"- Source: {co}'s {period} annual report")
        return "\n".join(lines), "Correct", "markdown, the asked figure in bold"
    if variant == "c_prior":
        return (f"{co}'s {metric} was {f.v} {pin}, compared with {f.fmt(f.prior)} {f.prior_pin}."
                ), "Correct", "asked figure plus the prior period's, each attributed"
    if variant == "c_prior_move":
        word = "rose" if f.value > f.prior else "fell"
        return (f"{metric[0].upper() + metric[1:]} {word} to {f.v} {pin} from {f.fmt(f.prior)} "
                f"{f.prior_pin}."), "Correct", f"{word} to the asked figure from the prior period's"
    if variant == "c_scaled":
        if f.kind == "pct" and f.margin_like:
            return f"The {metric} was {f.fmt(f.value, 'fraction')} {pin}.", "Correct", "the ratio of a percentage"
        if f.kind == "usd_m" and abs(f.value) >= 1000:
            return f"About {f.fmt(f.value, 'billion')} {pin}.", "Correct", "in billions, rounded to 4+ figures"
        return f"{f.fmt(f.value, 'billion')} {pin}.", "Correct", "another notation of the asked figure"
    if variant == "c_raw":
        return f"{co} reported {f.fmt(f.value, 'raw')} of {metric} {pin}.", "Correct", "in dollars"
    if variant == "i_wrong_year":
        return f"{co}'s {metric} {pin} was {f.fmt(f.prior)}.", "Incorrect", "the prior period's figure"
    if variant == "i_swapped_years":
        return (f"{co}'s {metric} was {f.fmt(f.prior)} {pin}, compared with {f.v} {f.prior_pin}."
                ), "Incorrect", "the two periods' figures swapped"
    if variant == "i_slip":
        wrong = f.slip(rng)
        if f.working:
            return (f"{metric[0].upper() + metric[1:]} = {f.working.rsplit('=', 1)[0].strip()} = {f.fmt(wrong)} "
                    f"{pin}."), "Incorrect", "arithmetic ends in another figure"
        if f.operands:
            ops = "; ".join(f"{lab} {val}" for lab, val in f.operands)
            return (f"From the statements: {ops}. That gives {_a(metric)} {metric} of {f.fmt(wrong)} {pin}."), "Incorrect", \
                "inputs quoted, then another figure"
        return f"{f.fmt(wrong)} {pin}.", "Incorrect", "another figure"
    if variant == "i_sign":
        if f.value == 0:
            return f"{f.fmt(f.slip(rng))}.", "Incorrect", "another figure"
        return f"{co}'s {metric} {pin} was {f.fmt(-f.value)}.", "Incorrect", "the wrong sign"
    if variant == "i_scale":
        return f"{f.fmt(f.value, 'wrong_scale')} {pin}.", "Incorrect", "the wrong scale or unit"
    if variant == "i_coarse":
        # the guide's rounding rule: with no precision asked, within 1% and two significant figures is the
        # same answer ("$11 billion" for $11,104 million); "$0.4 trillion" for $394,328 million is not
        shown = f.fmt(f.value, "coarse")
        stated = _amount_millions(shown)
        if abs(stated - abs(f.value)) <= 0.01 * abs(f.value) and not shown.startswith("$0."):
            return f"Roughly {shown}.", "Correct", "rounded, within 1% with two significant figures"
        return f"Roughly {shown}.", "Incorrect", "rounded past 1% of the figure"
    if variant == "i_operand":
        others = [(lab, val) for lab, val in f.operands if val != f.v]
        if not others:
            return fig_answer(f, "i_slip", rng)
        lab, val = rng.choice(others)
        return (f"The {metric} {pin} was {val}, based on the reported {lab}."), "Incorrect", \
            "an input stated as the answer"
    if variant == "i_candidates":
        other = f.fmt(f.prior) if f.prior is not None else f.fmt(f.slip(rng))
        a, b = rng.sample([f.v, other], 2)
        return (f"The filing shows several relevant figures: {a} and {b}. The {metric} is likely one of these."
                ), "Incorrect", "candidates, none chosen"
    if variant == "i_hedge":
        lo, hi = sorted([f.value * 0.95, f.value * 1.05])
        return (f"The {metric} {pin} was somewhere between {f.fmt(lo)} and {f.fmt(hi)}."), "Incorrect", \
            "a range in place of a value"
    if variant in REFUSALS:
        return REFUSALS[variant].format(co=co, metric=metric, period=period), "Refusal", "declines"
    raise ValueError(variant)


# ---------------------------------------------------------------------------------------------
# Choice, narrative, unanswerable


def _opt_words(opt: str) -> str:
    m = re.fullmatch(r"FY(\d{4})", opt)
    return f"fiscal {m.group(1)}" if m else opt


def choice_answer(choice: str, options: list[str], support: str, variant: str, rng: random.Random
                  ) -> tuple[str, str, str]:
    others = [o for o in options if o != choice]
    right = _opt_words(choice)
    if variant.startswith("c_"):
        cap = right[0].upper() + right[1:]
        if not support:
            return rng.choice([f"{cap}.".replace("..", "."), f"It was {right}.".replace("..", "."), f"**{cap}**"]), \
                "Correct", "the right option"
        return rng.choice([f"{cap}.", f"{cap}. The figures: {support}.", f"**{cap}**\n\n{support}."]), "Correct", \
            "the right option"
    if variant in REFUSALS:
        return REFUSALS["r_cannot" if variant == "r_context" else variant], "Refusal", "declines"
    wrong = _opt_words(rng.choice(others))
    if variant in ("i_candidates", "i_hedge"):
        opts = [right, *map(_opt_words, others)]
        rng.shuffle(opts)
        return (f"It could be {' or '.join(opts)}; the figures are close and the context is not conclusive."
                ), "Incorrect", "several options, none chosen"
    return f"{wrong[0].upper() + wrong[1:]}".rstrip(".") + ".", "Incorrect", "the wrong option"


def narrative_answer(cause: str, other_cause: str | None, variant: str, rng: random.Random) -> tuple[str, str, str]:
    lc = cause[0].lower() + cause[1:]
    if variant.startswith("c_"):
        return rng.choice([f"According to the MD&A, the change was driven by {lc}",
                           f"Mainly {lc}", f"**Drivers:** {cause}"]), "Correct", "the reference's causes"
    if variant in REFUSALS:
        return REFUSALS["r_cannot" if variant == "r_context" else variant], "Refusal", "declines"
    parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", cause.rstrip("."))
    if variant in ("i_candidates", "i_hedge", "i_operand") and len(parts) >= 2 and "offset" not in cause:
        first = parts[0] if len(parts) > 2 or " of " not in parts[0] else parts[0]
        return f"Mainly {first[0].lower() + first[1:]}.", "Incorrect", "only part of the causes"
    if other_cause:
        olc = other_cause[0].lower() + other_cause[1:]
        return f"It was driven by {olc}", "Incorrect", "another cause"
    return "It was driven by lower costs and higher prices.", "Incorrect", "another cause"


def unanswerable_answer(what: str, fabricated: str, variant: str, rng: random.Random) -> tuple[str, str, str]:
    if variant.startswith("r_") or variant in ("c_sentence", "c_plain"):
        return rng.choice([f"The 10-K does not disclose {what}.",
                           "The provided context does not contain this information.",
                           f"I could not find {what} in the filing."]), "Correct", \
            "says the filing does not give it (unanswerable)"
    if variant.startswith("c_"):
        return rng.choice([f"The filing does not report {what}, so it cannot be answered from the 10-K.",
                           f"**Not disclosed.** The 10-K contains no figure for {what}.",
                           f"Sure! I looked through the filing, but {what} is not reported in it."]), "Correct", \
            "says the filing does not give it (unanswerable)"
    return f"According to the filing, {fabricated}.", "Incorrect", "a figure the filing does not give"


# ---------------------------------------------------------------------------------------------
# Questions


def _pick(system: str, rng: random.Random) -> str:
    variants, weights = zip(*SYSTEMS[system], strict=True)
    return rng.choices(variants, weights=weights)[0]


def _period_words(period: str | None) -> str:
    if not period:
        return "the year"
    m = re.fullmatch(r"FY(\d{4})", period)
    if m:
        return f"fiscal {m.group(1)}"
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)", period)
    if m:
        months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                  "November", "December"]
        return f"{months[int(m.group(2)) - 1]} {int(m.group(3))}, {m.group(1)}"
    return period


def _label_words(label: str) -> str:
    if ":" in label:   # an XBRL concept: us-gaap:NetIncomeLoss -> net income loss
        label = re.sub(r"(?<!^)(?=[A-Z])", " ", label.split(":", 1)[1])
    return label.lower().replace("\u2019", "'")


def _company(question: str) -> str:
    m = re.search(r"\b([A-Z][\w.&]*(?:\s[A-Z][\w.&]*)*)'s\b", question)
    return m.group(1) if m else "The company"


def _musd(text: str) -> str:
    return f"${text} million"


def analyst_rows(rng: random.Random) -> list[dict]:
    out = []
    records = [json.loads(line) for line in ANALYST_FILE.read_text().splitlines() if line.strip()]
    systems = list(SYSTEMS)
    by_id = {r["financebench_id"]: r for r in records}
    for rec in records:
        qid, q, ref = rec["financebench_id"], rec["question"], rec["answer"]
        co = rec["company"]
        item = {"question_type": {"metric": "metric", "lookup": "factual", "narrative": "narrative",
                                  "unanswerable": "unanswerable"}[rec["question_category"]],
                "source": "financebench", "computation": rec.get("justification"),
                "metadata": {"financebench_id": qid, "question_category": rec["question_category"]}}
        base = {"qa_id": qid, "question": q, "reference": ref, "qa_item": item, "origin": "analyst"}
        if qid in NARRATIVE_ANSWERS:
            sys_for = rng.sample(systems, len(NARRATIVE_ANSWERS[qid]))
            for system, (label, answer, note) in zip(sys_for, NARRATIVE_ANSWERS[qid], strict=True):
                out.append({**base, "kind": "narrative", "system": system, "answer": answer, "label": label,
                            "label_note": note})
            continue
        chosen = rng.sample(systems, 6)
        for system in chosen:
            variant = _pick(system, rng)
            if qid in FIGURES:
                kind, value, dec, period, prior_p, prior, operands, working = FIGURES[qid]
                metric = _metric_of(q)
                others = [(_metric_of(by_id[o]["question"]), FIGURES[o][1]) for o in FIGURES
                          if o != qid and FIGURES[o][0] == kind == "usd_m" and FIGURES[o][3] == period
                          and by_id[o]["company"] == co and not FIGURES[o][6]]
                f = Fig(qid, co, metric, kind, value, dec, period, prior_p, prior, operands, working, question=q,
                        other_items=others,
                        margin_like=kind == "pct" and bool(re.search(r"margin|rate\b|share", q, re.I)))
                ans, label, note = fig_answer(f, variant, rng)
                out.append({**base, "kind": "figure", "system": system, "answer": ans, "label": label,
                            "label_note": note, "variant": variant})
            elif qid in CHOICES:
                choice, options, support = CHOICES[qid]
                ans, label, note = choice_answer(choice, options, support, variant, rng)
                out.append({**base, "kind": "choice", "system": system, "answer": ans, "label": label,
                            "label_note": note, "variant": variant})
            elif qid in UNANSWERABLE:
                what, fabricated = UNANSWERABLE[qid]
                ans, label, note = unanswerable_answer(what, fabricated, variant, rng)
                out.append({**base, "kind": "unanswerable", "system": system, "answer": ans, "label": label,
                            "label_note": note, "variant": variant})
            else:
                raise SystemExit(f"{qid}: no facts written for it")
    return out


_METRIC_WORDS = [("grow", "revenue growth"), ("free cash flow", "free cash flow"), ("operating margin", "operating margin"),
                 ("ebit margin", "EBIT margin"), ("gross margin", "gross margin"), ("effective tax rate",
                 "effective tax rate"), ("current ratio", "current ratio"), ("fixed asset turnover",
                 "fixed asset turnover"), ("inventory turnover", "inventory turnover"), ("dso", "DSO"),
                 ("days sales outstanding", "days sales outstanding"), ("capex as a percentage", "capex-to-revenue ratio"),
                 ("share of its fiscal 2022 revenue", "capex as a share of revenue"), ("d&a", "D&A"),
                 ("r&d", "R&D spend"), ("gross capex", "gross capex"), ("capex", "capex"), ("top line", "top line"),
                 ("sg&a", "SG&A")]


def _metric_of(question: str) -> str:
    ql = question.lower()
    for key, words in _METRIC_WORDS:
        if key in ql:
            return words
    return "figure"


def demo_rows(items: list[dict], rng: random.Random, n_items: int) -> list[dict]:
    by_template: dict[str, list[dict]] = {}
    for it in items:
        by_template.setdefault(it["metadata"].get("template", "?"), []).append(it)
    chosen: list[dict] = []
    templates = sorted(by_template)
    per = max(1, n_items // len(templates))
    for t in templates:
        pool = sorted(by_template[t], key=lambda r: r["qa_id"])
        chosen += rng.sample(pool, min(per + 1, len(pool)))
    chosen = sorted(chosen, key=lambda r: r["qa_id"])[: n_items * 2]
    rng.shuffle(chosen)
    chosen = chosen[:n_items]
    figures_by_filing = _figures_by_filing(items)
    causes = {}
    for it in items:
        if it["question_type"] == "narrative":
            causes.setdefault(it["filing_id"], []).append(it["reference_answer"])
    out, systems = [], list(SYSTEMS)
    for it in sorted(chosen, key=lambda r: r["qa_id"]):
        t = it["metadata"].get("template", "")
        base = {"qa_id": it["qa_id"], "question": it["question"], "reference": it["reference_answer"],
                "qa_item": {k: v for k, v in it.items() if k != "evidence"}, "origin": "demo"}
        co = _company(it["question"])
        for system in rng.sample(systems, 4):
            variant = _pick(system, rng)
            if it.get("answer_choice"):
                options = [str(o) for o in it["metadata"].get("choice_options") or it["periods"]]
                support = _choice_support(it, t)
                ans, label, note = choice_answer(str(it["answer_choice"]), options, support, variant, rng)
                kind = "choice"
            elif it["question_type"] == "narrative":
                others = [c for c in causes.get(it["filing_id"], []) if _disjoint(c, it["reference_answer"])]
                ans, label, note = narrative_answer(it["reference_answer"], rng.choice(others) if others else None,
                                                    variant, rng)
                kind = "narrative"
            elif not it.get("answer_values"):
                what = re.sub(r"^What was [^?]*?'s (.*?) in (fiscal )?(\d{4})\?$", r"\1 for fiscal \3", it["question"])
                fab = f"{co}'s {what} was {_musd(f'{rng.randrange(1000, 90000):,}')}"
                ans, label, note = unanswerable_answer(what, fab, variant, rng)
                kind = "unanswerable"
            elif len(it["answer_values"]) == 2:
                ans, label, note = _two_figures(it, variant, rng)
                kind = "figure"
            else:
                f = _demo_fig(it, co, figures_by_filing)
                ans, label, note = fig_answer(f, variant, rng)
                kind = "figure"
            out.append({**base, "kind": kind, "system": system, "answer": ans, "label": label, "label_note": note,
                        "variant": variant})
    return out


def _choice_support(it, template) -> str | None:
    """The figures behind a choice, one per option (segment or period); None when the figures are the
    inputs of ratios (several per option): a system would not quote them that way."""
    srcs = [f for f in it["answer_figures"] if f.get("role", "source") == "source"]
    keys = [f["label"] if template.startswith("choice_segment") else _period_words(f.get("period")) for f in srcs]
    if len(set(keys)) != len(keys) or not srcs:
        return None
    return "; ".join(f"{k}: {_musd(f['text'])}" for k, f in list(zip(keys, srcs, strict=True))[:5])


def _disjoint(a: str, b: str) -> bool:
    wa = {w for w in re.findall(r"[a-z]{4,}", a.lower())} - {"higher", "lower", "sales", "strength", "weakness"}
    wb = {w for w in re.findall(r"[a-z]{4,}", b.lower())}
    return not (wa & wb) and a != b


def _figures_by_filing(items):
    """filing -> label -> period -> printed value, from every item's inputs (for prior-period figures)."""
    out: dict = {}
    for it in items:
        for f in it.get("answer_figures") or []:
            if f.get("role", "source") == "source" and f.get("period") and f.get("text"):
                out.setdefault(it["filing_id"], {}).setdefault(f["label"], {})[f["period"]] = f
    return out


def _demo_fig(it, co, figures_by_filing) -> Fig:
    av = it["answer_values"][0]
    t = it["metadata"].get("template", "")
    period = _period_words(av.get("period"))
    sources = [f for f in it["answer_figures"] if f.get("role", "source") == "source"]
    inputs = [] if t.startswith("factual") else sources   # a lookup's only source is the answer itself
    several_periods = len({f.get("period") for f in inputs}) > 1
    operands = [(_label_words(f["label"] if ":" not in f["label"] else (f.get("line_item") or f["label"])).replace("_", " ")
                 + (f" ({_period_words(f.get('period'))})" if several_periods else ""), _musd(f["text"]))
                for f in inputs]
    metric = _metric_phrase(it, sources)
    working = None
    if av["unit"] == "USD":
        kind, value, dec = "usd_m", float(av["value"]) * float(av["scale"]) / 1e6, 0
    elif av["unit"] == "percent":
        kind, value, dec = "pct", float(av["value"]), 1
    else:
        kind, value, dec = ("x" if "turnover" in t else "ratio"), float(av["value"]), 2
    signed = bool(av.get("signed"))
    prior_p = prior = None
    if t.startswith("factual") and sources:
        label = sources[0]["label"]
        others = {p: f for p, f in figures_by_filing.get(it["filing_id"], {}).get(label, {}).items()
                  if p != sources[0]["period"] and p[:2] == sources[0]["period"][:2] and p < sources[0]["period"]}
        if others:
            p = max(others)
            prior_p, prior = _period_words(p), float(others[p]["value"]) * float(others[p]["scale"]) / 1e6
    if t in ("change_abs", "change_pct", "metric_yoy_growth") and len(sources) == 2:
        cur, prev = sources
        if t == "change_abs":
            working = f"{cur['text']} - {prev['text']} = {value:,.0f}"
        else:
            working = f"({cur['text']} - {prev['text']}) / {prev['text']} = {value / 100:.4f}"
    elif t in ("metric_operating_margin", "metric_gross_margin_pct", "metric_net_margin", "metric_effective_tax_rate",
               "metric_capex_to_revenue", "metric_current_ratio") and len(sources) == 2:
        a, b = sources
        working = f"{a['text'].strip('()')} / {b['text'].strip('()')} = {value / (100 if kind == 'pct' else 1):.4f}"
    other_items = []
    if t.startswith("factual") and sources and kind == "usd_m":
        for label, by_period in figures_by_filing.get(it["filing_id"], {}).items():
            g = by_period.get(sources[0]["period"])
            if label != sources[0]["label"] and g is not None and g.get("unit") == sources[0].get("unit"):
                other_items.append((_label_words(label), float(g["value"]) * float(g["scale"]) / 1e6))
    return Fig(it["qa_id"], co, metric, kind, value, dec, period, prior_p, prior, operands, working, signed,
               other_items=sorted(other_items),
               question=it["question"],
               margin_like=kind == "pct" and bool(re.search(r"margin|rate\b|share", it["question"], re.I)))


def _metric_phrase(it, sources) -> str:
    q = it["question"]
    m = re.search(r"(?:What was|How much) (?:the )?(?:annual growth of )?(?:[A-Z][\w.&]*(?:\s[A-Z][\w.&]*)*'s )?"
                  r"(.+?)(?: in fiscal| for fiscal| as of| did | in \d{4}|,|\?)", q)
    if it["metadata"].get("template", "").startswith("change"):
        label = _label_words(sources[0]["label"]) if sources else "figure"
        return f"{'percentage ' if it['metadata']['template'] == 'change_pct' else ''}change in {label}"
    if m:
        return m.group(1).strip()
    return _label_words(sources[0]["label"]) if sources else "figure"


def _two_figures(it, variant, rng):
    a, b = it["answer_figures"][:2]
    la, lb = _label_words(a["label"]), _label_words(b["label"])
    if variant.startswith("c_"):
        return (f"{la[0].upper() + la[1:]} was {_musd(a['text'])} and {lb} was {_musd(b['text'])}."), "Correct", \
            "both asked figures"
    if variant in REFUSALS:
        return REFUSALS["r_cannot"], "Refusal", "declines"
    if variant in ("i_candidates", "i_hedge", "i_operand"):
        return f"{la[0].upper() + la[1:]} was {_musd(a['text'])}.", "Incorrect", "only one of the two asked figures"
    return (f"{la[0].upper() + la[1:]} was {_musd(b['text'])} and {lb} was {_musd(a['text'])}."), "Incorrect", \
        "the two figures swapped"


def load_demo_items(warehouse: str) -> list[dict]:
    from finrag_pipeline.core.warehouse import live_copy

    with live_copy(warehouse, Path("/tmp") / "labelled-answers-build") as con:
        df = con.execute("SELECT * FROM qa.items WHERE status IN ('accepted', 'edited') AND generator = 'model_free' "
                         "ORDER BY qa_id").df()
    items = []
    for rec in df.to_dict("records"):
        for k in ("answer_figures", "periods", "metadata", "answer_values", "evidence"):
            if isinstance(rec.get(k), str):
                rec[k] = json.loads(rec[k])
        rec["answer_values"] = rec.get("answer_values") or []
        rec["answer_choice"] = rec.get("answer_choice") if isinstance(rec.get("answer_choice"), str) else None
        items.append({k: (None if isinstance(v, float) and v != v else v) for k, v in rec.items()
                      if k in ("qa_id", "filing_id", "question", "reference_answer", "question_type", "answer_figures",
                               "periods", "computation", "generator", "source", "metadata", "answer_values",
                               "answer_choice", "difficulty")})
    return items


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--demo-items", type=int, default=48)
    ap.add_argument("--out", default=str(HERE / "answers.jsonl"))
    args = ap.parse_args()
    from finrag_pipeline.core.evaluation.human_agreement import split_by_question

    rng = random.Random(SEED)
    rows = analyst_rows(rng) + demo_rows(load_demo_items(args.warehouse), rng, args.demo_items)
    split = split_by_question([r["qa_id"] for r in rows], seed=SEED)
    with open(args.out, "w", encoding="utf-8") as fh:
        for n, r in enumerate(rows, 1):
            rec = {"answer_id": f"la{n:04d}", "split": split[r["qa_id"]], **r}
            rec["style"] = rec.pop("variant", "hand-written")
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    counts: dict = {}
    for r in rows:
        counts[(r["kind"], r["label"])] = counts.get((r["kind"], r["label"]), 0) + 1
    print(f"{len(rows)} answers to {len(split)} questions -> {args.out}")
    for k, v in sorted(counts.items()):
        print(f"  {k[0]:<13} {k[1]:<10} {v}")


if __name__ == "__main__":
    main()
