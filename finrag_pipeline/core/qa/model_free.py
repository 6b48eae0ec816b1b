"""Model-free QA generation from table rows and XBRL facts: offline, deterministic, verifiable.

Every answer is a printed figure (or a computation over printed figures, recorded in
``computation``), every figure is mapped to every chunk/page that states it, and every choice is
seeded by (seed, filing_id), so the same filing always yields the same questions and ids.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from finrag_pipeline.core.models import (
    Chunk,
    EvidencePlace,
    FilingMeta,
    Page,
    QAItem,
    TableRow,
    XbrlFact,
    stable_id,
)
from finrag_pipeline.core.numbers import UNIT_SCALE, digits_key, format_amount
from finrag_pipeline.core.qa.config import QAConfig
from finrag_pipeline.core.qa.evidence import EvidenceIndex
from finrag_pipeline.core.scoring.answer_contract import ensure_contract

GENERATOR = "model_free"
GENERATOR_VERSION = "1.0"

_FOOTNOTE_RE = re.compile(r"\s*\(\d\)\s*$|\s*\*+$|:$")
_STATEMENT_RE = re.compile(r"consolidated|balance sheet|cash flow|operations|income|segment|revenue|earnings",
                           re.IGNORECASE)
_XBRL_LABELS = {
    "Revenues": "total revenue", "RevenueFromContractWithCustomerExcludingAssessedTax": "total revenue",
    "NetIncomeLoss": "net income", "OperatingIncomeLoss": "operating income", "GrossProfit": "gross profit",
    "ResearchAndDevelopmentExpense": "research and development expense", "Assets": "total assets",
    "Liabilities": "total liabilities", "StockholdersEquity": "total shareholders' equity",
    "CashAndCashEquivalentsAtCarryingValue": "cash and cash equivalents",
    "NetCashProvidedByUsedInOperatingActivities": "net cash provided by operating activities",
    "CostOfRevenue": "cost of revenue", "CostOfGoodsAndServicesSold": "cost of sales",
    "IncomeTaxExpenseBenefit": "provision for income taxes",
}
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]


@dataclass
class Figure:
    """One printed number with its meaning (line item, period, unit) and every place it appears."""

    label: str                 # as printed, tidied: "Total net sales"
    period: str                # "FY2022" or an instant "2022-09-24"
    value: float               # in the table's unit (394328 for "$394,328 million")
    value_text: str
    unit: str | None
    page: int
    table_id: str | None = None
    row: TableRow | None = None
    concept: str | None = None
    priority: int = 0
    places: list[EvidencePlace] = field(default_factory=list)

    @property
    def key(self) -> str:
        return digits_key(self.value_text)

    @property
    def answer(self) -> str:
        return format_amount(self.value, self.unit, self.value_text)

    def as_answer_figure(self, role: str = "source") -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit, "period": self.period, "text": self.value_text,
                "label": self.label, "page": self.page, "role": role,
                "scale": UNIT_SCALE.get(self.unit or "", 1.0)}


@dataclass
class _Ctx:
    meta: FilingMeta
    company: str
    config: QAConfig
    rng: random.Random
    synonyms: dict[str, list[str]]
    page_text_lower: str
    log: list[dict[str, Any]] = field(default_factory=list)

    def count(self, reason: str, n: int = 1) -> None:
        self.log.append({"stage": "generate", "reason": reason, "count": n})


# -- helpers ----------------------------------------------------------------------------------------

def short_company(company: str) -> str:
    """"Apple Inc." -> "Apple" (legal-form suffixes dropped for natural questions)."""
    name = re.sub(r",?\s+(Inc|Corp|Corporation|Co|Company|Ltd|Limited|plc|N\.V|S\.A|LLC|Holdings)\.?$", "",
                  (company or "").strip(), flags=re.IGNORECASE)
    return name or company


def question_company(company: str) -> str:
    """The company as a question names it: "MICROSOFT CORPORATION" -> "Microsoft", "THE BOEING COMPANY"
    -> "Boeing" (cover pages print names in capitals; an analyst does not)."""
    name = short_company(company)
    if name.isupper():
        name = " ".join(w[:1].upper() + w[1:].lower() for w in name.split())
    return re.sub(r"^The\s+", "", name) or name


def tidy_label(label: str) -> str:
    return _FOOTNOTE_RE.sub("", re.sub(r"\s+", " ", label or "")).strip(" :")


def row_question_label(row: TableRow) -> str:
    """The row's label with its group context: "Diluted" under "Earnings per share:" reads
    "Earnings per share, diluted"; "Operating income" under "North America" reads
    "North America operating income" (row_path, core/ingest/tables.py)."""
    label = tidy_label(row.row_label)
    heads = [tidy_label(h) for h in (row.row_path or [])[:-1] if tidy_label(h)]
    if not heads:
        return label
    return f"{heads[-1]}, {label[:1].lower() + label[1:]}" if len(label.split()) <= 2 or heads[-1].lower().endswith(
        ("per share", "outstanding")) else f"{heads[-1]} {label[:1].lower() + label[1:]}"


def period_text(period: str) -> str:
    """"FY2022" -> "fiscal 2022"; "2022-09-24" -> "September 24, 2022"."""
    if period.startswith("FY"):
        return f"fiscal {period[2:]}"
    d = date.fromisoformat(period)
    return f"{_MONTHS[d.month - 1]} {d.day}, {d.year}"


def _when(period: str) -> str:
    return f"in {period_text(period)}" if period.startswith("FY") else f"as of {period_text(period)}"


def _period_ok(period: str | None) -> bool:
    return bool(period) and (period.startswith("FY") or bool(re.fullmatch(r"\d{4}-\d\d-\d\d", period)))


def _year(period: str) -> int:
    return int(period[2:6]) if period.startswith("FY") else int(period[:4])


_BAD_ALIAS_RE = re.compile(r"\b(rate|ratio|percent|per share|yield|margin %)\b|%", re.IGNORECASE)


def _good_alias(alias: str) -> bool:
    """Aliases that name the same amount: "capex" yes, "effective tax rate" (a ratio) no."""
    return len(alias) > 3 and not _BAD_ALIAS_RE.search(alias)


def _load_synonyms(config: QAConfig) -> dict[str, list[str]]:
    """Row label (lowercase) -> ways a question names it: analyst words of phrasing.yaml (its
    ``row_labels``, and its ``line_items`` for every statement label of the concept), the qa.yaml
    ``synonyms``, and the retrievers' lexicon aliases only when ``use_lexicon`` (they leak)."""
    syn: dict[str, list[str]] = defaultdict(list)
    if config.model_free.use_phrasing:
        from finrag_pipeline.core.analyst.lexicon import Lexicon
        from finrag_pipeline.core.qa.phrasing import load_phrasing

        vocab = load_phrasing()
        for label, alts in vocab.row_labels.items():
            syn[label.lower()].extend(alts)
        # the lexicon says WHICH printed labels are a concept; the words come from phrasing.yaml
        for key, concept in Lexicon.load_default().concepts.items():
            for item in concept.line_items if key in vocab.line_items else []:
                syn[item.lower()].extend(vocab.line_items[key])
    if config.model_free.use_lexicon:
        try:  # the retrieval engineer's concept lexicon: statement line items -> question aliases
            from finrag_pipeline.core.analyst.lexicon import Lexicon

            for concept in Lexicon.load_default().concepts.values():
                aliases = [a for a in concept.aliases if _good_alias(a)]
                for item in concept.line_items:
                    syn[item.lower()].extend(aliases)
        except (ImportError, OSError, ValueError):
            pass
    for label, alts in config.model_free.synonyms.items():
        syn[label.lower()].extend(alts)
    return {k: list(dict.fromkeys(v)) for k, v in syn.items()}


# -- figures ----------------------------------------------------------------------------------------

def _row_priority(row: TableRow, label: str, synonyms: dict[str, list[str]]) -> int:
    score = 0
    if label.lower() in synonyms:
        score += 3
    if label.lower().startswith("total"):
        score += 2
    if row.table_title and _STATEMENT_RE.search(row.table_title):
        score += 2
    if row.section in ("Item 7", "Item 8"):
        score += 1
    if row.unit and row.unit.startswith("USD"):
        score += 1
    return score


def _row_usable(row: TableRow, label: str, config: QAConfig) -> str | None:
    """None when the row can carry questions, else the reason it cannot."""
    mf = config.model_free
    if len(label) < 4 or not re.search(r"[A-Za-z]{3}", label):
        return "empty_or_short_label"
    if label.lower() in mf.generic_labels:
        return "generic_label"
    per_share = (row.unit == "USD per share") or "per share" in label.lower()
    if per_share and not mf.include_per_share:
        return "per_share"
    if row.unit and row.unit.startswith("percent"):
        return "percent_row"
    return None


def _in_scope(period: str | None, ctx: _Ctx) -> bool:
    """Annual or instant periods up to the filing's own fiscal year (later columns are maturities
    or projections, not reported results)."""
    return _period_ok(period) and _year(period) <= ctx.meta.fiscal_year + (0 if period.startswith("FY") else 1)


def figures_from_rows(rows: list[TableRow], ctx: _Ctx) -> list[Figure]:
    out: list[Figure] = []
    for row in rows:
        label = row_question_label(row)
        reason = _row_usable(row, label, ctx.config)
        if reason:
            ctx.count(f"row_skipped:{reason}")
            continue
        prio = _row_priority(row, label, ctx.synonyms)
        for cell in row.cells:
            if cell.value is None or not _in_scope(cell.period, ctx) or not digits_key(cell.value_text).strip("0."):
                continue
            out.append(Figure(label, cell.period, cell.value, cell.value_text, row.unit, row.page_number,
                              row.table_id, row, None, prio))
    return out


def _xbrl_label(concept: str) -> str:
    local = concept.split(":")[-1]
    return _XBRL_LABELS.get(local) or re.sub(r"(?<=[a-z])(?=[A-Z])", " ", local).lower()


def figures_from_facts(facts: list[XbrlFact], ctx: _Ctx) -> list[Figure]:
    out: list[Figure] = []
    for f in facts:
        if f.dimensions or f.value is None or f.page_number is None or f.unit != "USD" or f.period_end is None:
            continue
        if f.period_type == "duration":
            if f.period_start is None or not 330 <= (f.period_end - f.period_start).days <= 380:
                continue
            period = f"FY{f.period_end.year}"
        else:
            period = f.period_end.isoformat()
        if not _in_scope(period, ctx):
            continue
        unit = {9: "USD billions", 6: "USD millions", 3: "USD thousands"}.get(f.scale)
        shown = f.value / (10 ** f.scale) if f.scale else f.value
        prio = 4 if concept_known(f.concept) else 0
        out.append(Figure(_xbrl_label(f.concept), period, shown, f.value_text, unit, f.page_number,
                          concept=f.concept, priority=prio))
    return out


def concept_known(concept: str) -> bool:
    return concept.split(":")[-1] in _XBRL_LABELS


def _unambiguous(figures: list[Figure], ctx: _Ctx) -> dict[str, dict[str, Figure]]:
    """label -> period -> figure, dropping labels whose (label, period) carries different values
    (e.g. "Net sales" per geographic segment): the question could not say which one is meant."""
    series: dict[str, dict[str, Figure]] = defaultdict(dict)
    ambiguous: set[str] = set()
    for fig in figures:
        label = fig.label.lower()
        prev = series[label].get(fig.period)
        if prev is None:
            series[label][fig.period] = fig
        elif prev.key != fig.key:
            ambiguous.add(label)
        elif fig.priority > prev.priority:
            series[label][fig.period] = fig
    for label in ambiguous:
        ctx.count("ambiguous_label")
        series.pop(label, None)
    return dict(series)


def _attach_places(series: dict[str, dict[str, Figure]], index: EvidenceIndex, ctx: _Ctx) -> None:
    for label in list(series):
        for period in list(series[label]):
            fig = series[label][period]
            fig.places = index.places(fig.key, fig.label, fig.row, fig.page)
            if not fig.places:
                ctx.count("figure_without_evidence")
                del series[label][period]
        if not series[label]:
            del series[label]


# -- question builders ------------------------------------------------------------------------------

def _phrase(fig: Figure, ctx: _Ctx) -> str:
    options = [fig.label.lower(), *ctx.synonyms.get(fig.label.lower(), [])]
    return ctx.rng.choice(options)


def _item(ctx: _Ctx, qtype: str, template: str, anchor: str, question: str, answer: str,
          figures: list[Figure], computation: str | None = None, difficulty: str = "easy",
          extra_figures: list[dict[str, Any]] | None = None, **meta: Any) -> QAItem:
    fid = ctx.meta.filing_id
    return ensure_contract(QAItem(
        qa_id=stable_id(fid, GENERATOR, template, anchor), filing_id=fid, question=question,
        reference_answer=answer, question_type=qtype,
        answer_figures=[f.as_answer_figure() for f in figures] + (extra_figures or []),
        periods=sorted({f.period for f in figures}, reverse=True),
        evidence=[list(f.places) for f in figures], computation=computation, generator=GENERATOR,
        generator_version=GENERATOR_VERSION, difficulty=difficulty, source="generated",
        metadata={"template": template, **meta}))


FACTUAL_TEMPLATES = {
    "duration": ["What was {co}'s {item} {when}?", "How much {item} did {co} report for {p}?",
                 "What {item} did {co} report {when}?"],
    "instant": ["What was {co}'s {item} {when}?", "How much {item} did {co} report as of {p}?"],
}


def factual_items(series: dict[str, dict[str, Figure]], order: list[str], ctx: _Ctx) -> list[QAItem]:
    out = []
    for label in order:
        periods = sorted(series[label], reverse=True)
        period = periods[0] if len(periods) == 1 or ctx.rng.random() < 0.6 else ctx.rng.choice(periods[1:])
        fig = series[label][period]
        kind = "duration" if period.startswith("FY") else "instant"
        n = ctx.rng.randrange(len(FACTUAL_TEMPLATES[kind]))
        q = FACTUAL_TEMPLATES[kind][n].format(co=ctx.company, item=_phrase(fig, ctx), when=_when(period),
                                              p=period_text(period))
        out.append(_item(ctx, "factual", f"factual_{kind}_{n}", f"{label}|{period}", _cap(q), fig.answer, [fig]))
    return out


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def _pairs(series: dict[str, dict[str, Figure]], order: list[str]) -> list[tuple[str, Figure, Figure]]:
    """(label, current, previous) for consecutive periods of the same kind."""
    out = []
    for label in order:
        if not _positive(series[label]):
            continue
        periods = sorted(series[label], reverse=True)
        for a, b in zip(periods, periods[1:], strict=False):
            if a[:2] == b[:2] or (not a.startswith("FY") and not b.startswith("FY")):
                out.append((label, series[label][a], series[label][b]))
                break
    return out


def _positive(by_period: dict[str, Figure]) -> bool:
    # Outflows printed as (14,841): "higher" and "% change" read backwards on them, so only
    # positive series feed comparisons and computations.
    return all(f.value > 0 for f in by_period.values())


def _fmt_num(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".") if not float(x).is_integer() else str(int(x))


def numerical_items(series, order, ctx: _Ctx) -> list[QAItem]:
    out = []
    for i, (label, cur, prev) in enumerate(_pairs(series, order)):
        item = _phrase(cur, ctx)
        diff = cur.value - prev.value
        if i % 2 == 0:
            direction = "increased" if diff > 0 else "decreased" if diff < 0 else "did not change"
            change = format_amount(abs(diff), cur.unit, cur.value_text)
            q = f"By how much did {ctx.company}'s {item} change from {period_text(prev.period)} to {period_text(cur.period)}?"
            ans = f"It {direction} by {change}, from {prev.answer} to {cur.answer}."
            comp = f"{_fmt_num(cur.value)} - {_fmt_num(prev.value)} = {_fmt_num(round(diff, 4))}"
            out.append(_item(ctx, "numerical", "change_abs", f"{label}|{cur.period}|{prev.period}", q, ans,
                             [cur, prev], comp, "medium",
                             [{"value": round(diff, 4), "unit": cur.unit, "role": "computed"}]))
        elif prev.value:
            pct = diff / abs(prev.value) * 100
            q = (f"What was the percentage change in {ctx.company}'s {item} from {period_text(prev.period)} "
                 f"to {period_text(cur.period)}?")
            ans = f"{pct:+.1f}% (from {prev.answer} to {cur.answer})."
            comp = f"({_fmt_num(cur.value)} - {_fmt_num(prev.value)}) / {_fmt_num(abs(prev.value))} * 100 = {pct:.2f}"
            out.append(_item(ctx, "numerical", "change_pct", f"{label}|{cur.period}|{prev.period}", q, ans,
                             [cur, prev], comp, "medium",
                             [{"value": round(pct, 2), "unit": "percent", "role": "computed"}]))
    return out


def comparative_items(series, order, ctx: _Ctx) -> list[QAItem]:
    out = []
    for label, cur, prev in _pairs(series, order):
        if cur.value == prev.value:
            continue
        item = _phrase(cur, ctx)
        hi = cur if cur.value > prev.value else prev
        q = (f"Was {ctx.company}'s {item} higher {_when(cur.period)} or {_when(prev.period)}?")
        ans = f"Higher {_when(hi.period)}: {cur.answer} {_when(cur.period)} vs {prev.answer} {_when(prev.period)}."
        comp = f"{_fmt_num(cur.value)} {'>' if cur.value > prev.value else '<'} {_fmt_num(prev.value)}"
        out.append(_item(ctx, "comparative", "higher_period", f"{label}|{cur.period}|{prev.period}", q, ans,
                         [cur, prev], comp, "medium"))
    return out


def temporal_items(series, order, ctx: _Ctx) -> list[QAItem]:
    out = []
    for n, label in enumerate(order):
        years = sorted(p for p in series[label] if p.startswith("FY"))
        if len(years) < 3 or not _positive(series[label]):
            continue
        figs = [series[label][p] for p in years]
        item = _phrase(figs[0], ctx)
        if n % 2 == 0:
            best = max(figs, key=lambda f: f.value)
            word, template = "highest", "extreme_year_max"
        else:
            best = min(figs, key=lambda f: f.value)
            word, template = "lowest", "extreme_year_min"
        q = (f"In which fiscal year from {years[0][2:]} to {years[-1][2:]} did {ctx.company} report its "
             f"{word} {item}?")
        ans = f"Fiscal {best.period[2:]}, with {best.answer}."
        comp = " , ".join(f"{f.period}={_fmt_num(f.value)}" for f in figs) + f" -> {word}: {best.period}"
        out.append(_item(ctx, "temporal", template, f"{label}|{'|'.join(years)}", q, ans, figs, comp, "hard"))
    return out


def multipage_items(series, order, ctx: _Ctx) -> list[QAItem]:
    """Two figures for the same period printed on different pages (e.g. income statement and cash flow)."""
    latest: list[Figure] = []
    for label in order:
        fy = sorted((p for p in series[label] if p.startswith("FY")), reverse=True)
        if fy and series[label][fy[0]].value > 0:
            latest.append(series[label][fy[0]])
    out, used = [], set()
    for i, a in enumerate(latest):
        if a.label in used:
            continue
        for b in latest[i + 1:]:
            pages_a, pages_b = {p.page for p in a.places}, {p.page for p in b.places}
            if b.label in used or b.period != a.period or b.unit != a.unit or pages_a & pages_b:
                continue
            used.update({a.label, b.label})
            ia, ib = _phrase(a, ctx), _phrase(b, ctx)
            if a.value > 0 and b.value > 0 and a.unit and a.unit.startswith("USD") and len(out) % 2 == 1:
                small, big = (a, b) if a.value < b.value else (b, a)
                pct = small.value / big.value * 100
                q = (f"What was {ctx.company}'s {small.label.lower()} as a percentage of its {big.label.lower()} "
                     f"{_when(a.period)}?")
                ans = f"{pct:.1f}% ({small.answer} / {big.answer})."
                comp = f"{_fmt_num(small.value)} / {_fmt_num(big.value)} * 100 = {pct:.2f}"
                out.append(_item(ctx, "multi-page", "ratio_two_pages", f"{small.label}|{big.label}|{a.period}",
                                 q, ans, [small, big], comp, "hard",
                                 [{"value": round(pct, 2), "unit": "percent", "role": "computed"}]))
            else:
                q = f"What were {ctx.company}'s {ia} and its {ib} {_when(a.period)}?"
                ans = f"{_cap(a.label)}: {a.answer}; {b.label}: {b.answer}."
                out.append(_item(ctx, "multi-page", "two_figures", f"{a.label}|{b.label}|{a.period}", q, ans,
                                 [a, b], None, "hard"))
            break
    return out


def unanswerable_items(series, order, ctx: _Ctx) -> list[QAItem]:
    """Questions the filing cannot answer: a year it does not cover, a line item it does not hold."""
    out = []
    years = [_year(p) for lab in series for p in series[lab]]
    if not years:
        return out
    first, last = min(years), ctx.meta.fiscal_year
    absent_year = first - 4
    for label in order[: max(1, ctx.config.cap("unanswerable") // 2)]:
        fig = next(iter(series[label].values()))
        item = _phrase(fig, ctx)
        q = f"What was {ctx.company}'s {item} in fiscal {absent_year}?"
        ans = f"The filing does not report {item} for fiscal {absent_year}; it covers fiscal {first} to {last}."
        out.append(_unanswerable(ctx, "absent_period", f"{label}|{absent_year}", q, ans, [f"FY{absent_year}"]))
    latest = f"fiscal {last}"
    for absent in ctx.config.model_free.absent_line_items:
        if absent.lower() in ctx.page_text_lower:
            continue
        q = f"What was {ctx.company}'s {absent} in {latest}?"
        ans = f"The filing does not report {absent}."
        out.append(_unanswerable(ctx, "absent_line_item", absent, q, ans, [f"FY{last}"]))
    return out


def _unanswerable(ctx: _Ctx, template: str, anchor: str, q: str, ans: str, periods: list[str]) -> QAItem:
    fid = ctx.meta.filing_id
    return QAItem(qa_id=stable_id(fid, GENERATOR, template, anchor), filing_id=fid, question=q,
                  reference_answer=ans, question_type="unanswerable", periods=periods, evidence=[],
                  generator=GENERATOR, generator_version=GENERATOR_VERSION, difficulty="medium",
                  metadata={"template": template, "answerable": False})


def _ordered_labels(series: dict[str, dict[str, Figure]], rng: random.Random) -> list[str]:
    """Labels by priority tier; within a tier, a seeded shuffle interleaved across tables for coverage."""
    def prio(label: str) -> int:
        return max(f.priority for f in series[label].values())

    def table(label: str) -> str:
        return next(iter(series[label].values())).table_id or "xbrl"

    labels = sorted(series)
    rng.shuffle(labels)
    tiers: dict[int, list[str]] = defaultdict(list)
    for label in labels:
        tiers[prio(label)].append(label)
    out: list[str] = []
    for p in sorted(tiers, reverse=True):
        by_table: dict[str, list[str]] = defaultdict(list)
        for label in tiers[p]:
            by_table[table(label)].append(label)
        queues = list(by_table.values())
        while any(queues):
            for q in queues:
                if q:
                    out.append(q.pop(0))
    return out


BUILDERS = {
    "factual": factual_items, "numerical": numerical_items, "comparative": comparative_items,
    "temporal": temporal_items, "multi-page": multipage_items, "unanswerable": unanswerable_items,
}


def generate_model_free(meta: FilingMeta, pages: list[Page], table_rows: list[TableRow],
                        facts: list[XbrlFact], chunks: list[Chunk], config: QAConfig | None = None,
                        ) -> tuple[list[QAItem], list[dict[str, Any]]]:
    """Questions with known evidence for one filing, and a log of what was skipped and why."""
    config = config or QAConfig()
    rng = random.Random(f"{config.seed}:{meta.filing_id}")
    ctx = _Ctx(meta, question_company(meta.company), config, rng, _load_synonyms(config),
               "\n".join(p.text for p in pages).lower())
    figures = figures_from_rows(table_rows, ctx)
    if config.model_free.include_xbrl and facts:
        covered = {(f.period, f.key) for f in figures}
        figures += [f for f in figures_from_facts(facts, ctx) if (f.period, f.key) not in covered]
    series = _unambiguous(figures, ctx)
    index = EvidenceIndex(meta.filing_id, pages, chunks)
    _attach_places(series, index, ctx)
    order = _ordered_labels(series, rng)
    items: list[QAItem] = metric_questions(meta, table_rows, facts, ctx, index)
    items += choice_questions(meta, table_rows, facts, ctx, index)
    items += _narrative_questions(meta, pages, chunks, ctx)
    for qtype, build in BUILDERS.items():
        items.extend(_fit_to_cap(build(series, order, ctx), qtype, config.cap(qtype), ctx))
    return items, _summarise(ctx.log)


def metric_questions(meta: FilingMeta, table_rows: list[TableRow], facts: list[XbrlFact], ctx: _Ctx,
                     index: EvidenceIndex) -> list[QAItem]:
    """Metric questions (core/qa/metric_questions.py) over the filing's fact layer, capped by qa.yaml."""
    from finrag_pipeline.core.qa.metric_questions import metric_items

    return _fact_layer_questions("metric", metric_items, meta, table_rows, facts, ctx, index)


def choice_questions(meta: FilingMeta, table_rows: list[TableRow], facts: list[XbrlFact], ctx: _Ctx,
                     index: EvidenceIndex) -> list[QAItem]:
    """Choice questions (core/qa/choice_questions.py): one committed option, capped by qa.yaml."""
    from finrag_pipeline.core.qa.choice_questions import choice_items

    return _fact_layer_questions("choice", choice_items, meta, table_rows, facts, ctx, index)


def _fact_layer_questions(qtype: str, make_items: Any, meta: FilingMeta, table_rows: list[TableRow],
                          facts: list[XbrlFact], ctx: _Ctx, index: EvidenceIndex) -> list[QAItem]:
    """``make_items`` (metric_items / choice_items) over the filing's fact layer, with the phrasing
    vocabulary and a generator seeded by (seed, filing, question type), capped by qa.yaml."""
    cap = ctx.config.cap(qtype)
    if cap <= 0:
        return []
    from finrag_pipeline.core.analyst.store import FilingFacts
    from finrag_pipeline.core.qa.phrasing import load_phrasing

    filing = FilingFacts(meta, table_rows, facts)
    made = make_items(meta, ctx.company, filing, index, ctx.config, load_phrasing(),
                      random.Random(f"{ctx.config.seed}:{meta.filing_id}:{qtype}"), ctx.count)
    return _fit_to_cap(made, qtype, cap, ctx)


def _narrative_questions(meta: FilingMeta, pages: list[Page], chunks: list[Chunk], ctx: _Ctx) -> list[QAItem]:
    """MD&A cause sentences (core/qa/narrative_questions.py), capped by qa.yaml."""
    from finrag_pipeline.core.qa.narrative_questions import narrative_items

    cap = ctx.config.cap("narrative")
    if cap <= 0:
        return []
    made = narrative_items(meta, ctx.company, pages, chunks,
                           random.Random(f"{ctx.config.seed}:{meta.filing_id}:narrative"), ctx.count)
    return _fit_to_cap(made, "narrative", cap, ctx)


def _fit_to_cap(made: list[QAItem], qtype: str, cap: int, ctx: _Ctx) -> list[QAItem]:
    """The first ``cap`` items of a type; an excess is logged as capped, a shortfall as short (the mix of
    qa.yaml not met: visible in the log, never filled from another type)."""
    if len(made) > cap:
        ctx.count(f"capped:{qtype}", len(made) - cap)
    elif len(made) < cap:
        ctx.count(f"short:{qtype}", cap - len(made))
    return made[:cap]


def _summarise(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for e in log:
        totals[(e["stage"], e["reason"])] += e["count"]
    return [{"stage": s, "reason": r, "count": c, "generator": GENERATOR} for (s, r), c in sorted(totals.items())]
