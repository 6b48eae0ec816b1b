"""Answerers: (question, retrieved hits) -> AnswerResult with citations and a response state.

* :class:`ExtractiveAnswerer` (the default, no model): finds the table cell or sentence in the
  evidence that matches the question's line item and period, quotes it with its unit and cites its
  page. It abstains rather than guess: ``insufficient_context`` when an asked year is nowhere in the
  evidence, ``abstained`` when no line matches, ``no_evidence`` when nothing was retrieved.
* :class:`LLMAnswerer`: an ``LLMClient`` with one of the prompt types (standard, few-shot,
  chain-of-thought, personas) and strict JSON ``{answer, citations: [page], abstain}``.

Response states: answered, abstained, invalid_output, no_evidence, insufficient_context,
backend_error (see answer_metrics.score_answer for how each is scored).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from finrag_pipeline.core.answering import (
    ANSWERERS,
    AnswerResult,
    Citation,
    read_answer_json,
    register_answerer,
)
from finrag_pipeline.core.asked import asked_years
from finrag_pipeline.core.ingest.statements import classify_table
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.numbers import format_printed_figure, printed_figures
from finrag_pipeline.core.scoring.answer_metrics import years_in
from finrag_pipeline.core.scoring.response_states import from_client_state

# ---------------------------------------------------------------------------------------------
# Extractive (offline) answerer

# words that name no line item: left out when matching a question to a row label
_STOP = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "does", "for", "from", "had", "has",
    "have", "how", "in", "is", "it", "its", "of", "on", "or", "the", "to", "was", "were", "what",
    "which", "with", "during", "year", "years", "fiscal", "fy", "total", "amount", "company",
    "company's", "report", "reported", "inc", "corp", "corporation", "ended", "end", "much", "many",
    "did", "value",
])
_WORD = re.compile(r"[a-z][a-z&'-]+")
_UNIT_RE = re.compile(r"\b(USD|shares)\s+(billions|millions|thousands)\b|\bpercent\b", re.IGNORECASE)
_IN_SCALE_RE = re.compile(r"\bin\s+(billions|millions|thousands)\b", re.IGNORECASE)


def _content_words(text: str) -> set[str]:
    words = {w.strip("'-") for w in _WORD.findall(text.lower())}
    return {w[:-2] if w.endswith("'s") else w for w in words if w not in _STOP and len(w) > 2}


def _unit_of(text: str) -> str | None:
    m = _UNIT_RE.search(text)
    if m:
        return m.group(0)
    m = _IN_SCALE_RE.search(text)
    return f"USD {m.group(1).lower()}" if m else None


@dataclass
class _Candidate:
    score: float
    priority: int       # 2 = table cell by header, 1 = sentence
    hit_rank: int
    year: int | None
    value_text: str
    label: str
    unit: str | None
    hit: Hit


def _is_value(seg: str) -> bool:
    s = seg.strip()
    return bool(s) and bool(re.fullmatch(r"\(?-?\$?\s?\(?[\d,]*\d(?:\.\d+)?\)?\s?%?|[-\u2014\u2013]", s))


def _row_names_line_item(label: str, label_words: set[str], qwords: set[str],
                         line_items: Sequence[str]) -> float | None:
    """A row answers the asked line item when its label IS one of the statement labels of the concept
    the question names ("Total net sales" for "revenue"), or when every word of the label is in the
    question ("Operating income" for "operating income"; not "Non-operating income", not "Unearned revenue").
    Returns the score bonus (None: the row names another line item)."""
    norm = _bare_label(re.sub(r"^total\s+", "", label.lower()))
    if any(norm == _bare_label(li) for li in line_items):
        return 2.0  # the statement's own label for the asked concept
    return 0.0 if label_words <= qwords else None


def _bare_label(text: str) -> str:
    """'Accounts receivable, net' / 'Operating income (loss):' -> 'accounts receivable' / 'operating income'."""
    text = re.sub(r"\((?:loss|income|gain)\)|,\s*net\b|[:,.\u2019']", " ", text.lower())
    return " ".join(text.split())


def _table_candidates(hit: Hit, qwords: set[str], years: list[int],
                      line_items: Sequence[str] = ()) -> list[_Candidate]:
    """Rows written 'label | 2022: 394,328 | 2021: 365,817' (row chunks) or a header line of
    years followed by 'label | v1 | v2' lines (whole-table chunks)."""
    out: list[_Candidate] = []
    unit = _unit_of(hit.text)
    header_years: list[int | None] = []
    for line in hit.text.splitlines():
        segs = [s.strip() for s in line.split("|")]
        # header line: value columns are dates/years, no numbers otherwise
        if (len(segs) > 1 and all(not _is_value(s) and ":" not in s for s in segs[1:])
                and any(years_in(s) for s in segs[1:])):
            header_years = [(max(years_in(s)) if years_in(s) else None) for s in segs[1:]]
            continue
        label_segs = [s for s in segs if s and not _is_value(s) and ":" not in s]
        pairs: list[tuple[int | None, str]] = []
        for s in segs:
            if ":" in s:
                left, right = s.rsplit(":", 1)
                if _is_value(right) and years_in(left):
                    pairs.append((max(years_in(left)), right.strip()))
        if not pairs and header_years and len(segs) > 1:
            values = segs[1:]
            if len(values) == len(header_years) and all(_is_value(v) for v in values):
                pairs = list(zip(header_years, values, strict=True))
                label_segs = [segs[0]]
        if not pairs:
            continue
        if not label_segs:
            continue
        at = len(label_segs) - (2 if len(label_segs) >= 3 and unit and label_segs[-1] == unit else 1)
        label = label_segs[at]
        # row chunks read "<filing> | <table title> | <row label> | ...": a title only when one is printed
        title = label_segs[at - 1] if at >= 2 else ""
        if label.strip().lower().rstrip(":") == "total" and title:
            label = f"Total {title}"  # a bare "Total" row totals what its table is about
        # score the row label first (the line item), the whole line second (title, context)
        lw = _content_words(" ".join(s for s in label_segs if s != unit))
        row_label_words = _content_words(label)
        named = _row_names_line_item(label, row_label_words, qwords, line_items) if row_label_words else None
        if named is None:
            continue
        score = len(qwords & row_label_words) * 2 + len(qwords & lw) + named
        score -= 0.1 * len(row_label_words - qwords)  # prefer the exact line item over a longer one
        statement = classify_table(title, [label])
        if statement == "segment_note" or re.search(r"\bsegments?\b", title, re.IGNORECASE):
            score -= 1.5  # a segment's row, when the consolidated line is asked
        elif statement in ("income_statement", "balance_sheet", "cash_flow"):
            score += 0.5
        for year, value in pairs:
            if not years or year in years:
                out.append(_Candidate(score, 2, hit.rank, year, value, label, unit, hit))
    return out


_SENT_SPLIT = re.compile(r"(?<=[.;])\s+(?=[A-Z(])")


def _sentence_candidates(hit: Hit, qwords: set[str], years: list[int]) -> list[_Candidate]:
    out = []
    for sent in _SENT_SPLIT.split(hit.text):
        if "|" in sent:
            continue
        s_years = years_in(sent)
        if years and not (s_years & set(years)):
            continue
        figs = [f for f in printed_figures(sent) if not years_in(f) or "$" in f]
        if not figs:
            continue
        score = len(qwords & _content_words(sent))
        # "$28.5 billion" carries its scale in the words that follow the number
        m = re.search(re.escape(figs[0]) + r"\s*(billion|million|thousand)", sent)
        value = figs[0] + (f" {m.group(1)}" if m else "")
        year = next((y for y in years if y in s_years), max(s_years) if s_years else None)
        out.append(_Candidate(score, 1, hit.rank, year, value, sent.strip()[:200], None, hit))
    return out


NARRATIVE_MODULE, NARRATIVE_ANSWERER = "finrag_pipeline.core.evaluation.narrative", "narrative"


def narrative_answerer(warehouse: Any = None, store: Any = None) -> Any:
    """The registered narrative answerer, with ``warehouse`` (neighbouring passages) and ``store`` (the fact store
    whose figures it leads with: the calculator's, read once). Reached through the leaf registry, as
    answerer_registry does: the narrative module imports this one (AnswerResult), so a static import back would be
    a cycle (test_import_graph.py)."""
    import importlib

    importlib.import_module(NARRATIVE_MODULE)
    return ANSWERERS[NARRATIVE_ANSWERER](**({"warehouse": warehouse} if warehouse is not None else {}),
                                         **({"store": store} if store is not None else {}))


def routed_to_narrative(question: str, hits: Sequence[Hit], periods: Sequence[str] | None, *,
                        warehouse: Any = None, store: Any = None, narrative: Any = None) -> AnswerResult | None:
    """The narrative answerer's answer when the question is qualitative (the one rule of
    core/question_kind.py), else None: the offline answerers route by it. With ``warehouse`` the narrative
    answerer reads each hit's neighbouring passages, as it does when the runner builds it; ``narrative``, an
    answerer the caller keeps, reads each filing's passages once for all its questions."""
    from finrag_pipeline.core.question_kind import classify_question

    route = classify_question(question)
    if not route.qualitative:
        return None
    # ``narrative``: one built by the caller and kept (its figures' facts are read once per filing, not per question)
    narrative = narrative if narrative is not None else narrative_answerer(warehouse, store)
    result = narrative.answer(question, hits, periods)
    result.details = {**result.details, "routed_to": "narrative"}
    return result


@register_answerer("extractive")
class ExtractiveAnswerer:
    """Quote-and-cite answerer with no model. Deterministic: same hits, same answer."""

    name = "extractive"

    def __init__(self, min_overlap: int = 1, warehouse: Any = None) -> None:
        self.min_overlap = min_overlap
        self.warehouse = warehouse   # handed to the narrative route (neighbouring passages)
        self._narrative: Any = None  # the narrative route's answerer, built at the first question

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        t0 = time.perf_counter()
        if self._narrative is None:
            self._narrative = narrative_answerer(self.warehouse)
        routed = routed_to_narrative(question, hits, periods, narrative=self._narrative)
        if routed is not None:  # "what drove / why / which risks": quoted sentences, never a figure
            return routed
        if not hits:
            return AnswerResult("", [], "no_evidence", latency_ms=_ms(t0))
        years = asked_years(question, periods)
        evidence_years = set().union(*(years_in(h.text) for h in hits))
        missing = [y for y in years if y not in evidence_years]
        if missing:
            return AnswerResult("", [], "insufficient_context", latency_ms=_ms(t0),
                                details={"missing_years": missing})
        qwords = _content_words(re.sub(r"(?:19|20)\d\d", " ", question))
        line_items = [x.lower() for x in _lexicon().line_items_for(question)]
        candidates: list[_Candidate] = []
        for hit in hits:
            # the company's own name is no line item: "Apple Inc. | $100" (a stock graph) must not answer
            parts = hit.text.split(" | ", 1)
            head = parts[0] if len(parts) == 2 and len(parts[0]) < 120 else ""  # "<Company> 10-K FY2022"
            item_words = qwords - _content_words(head) if re.search(r"\b10-K", head) else qwords
            candidates += _table_candidates(hit, item_words, years, line_items)
            candidates += _sentence_candidates(hit, item_words, years)
        candidates = [c for c in candidates if c.score >= self.min_overlap]
        if not candidates:
            return AnswerResult("", [], "abstained", latency_ms=_ms(t0),
                                details={"reason": "no evidence line matches the line item"})
        wanted = years or [None]
        chosen: list[_Candidate] = []
        for y in wanted:
            pool = [c for c in candidates if y is None or c.year == y]
            if not pool:
                return AnswerResult("", [], "abstained", latency_ms=_ms(t0),
                                    details={"reason": f"no figure for {y}"})
            # best line-item match, then table cells over sentences, then the better-ranked hit
            chosen.append(max(pool, key=lambda c: (c.score, c.priority, -c.hit_rank, c.hit.chunk_id)))
        parts = []
        for c in chosen:
            fig = format_printed_figure(c.value_text, c.unit)
            period = f" in fiscal {c.year}" if c.year else ""
            label = c.label if c.priority == 2 else "The figure"
            parts.append(f"{label}{period}: {fig} (source: {c.hit.filing_id}, page {c.hit.page_start})")
        citations: list[Citation] = []
        for c in chosen:
            cit = (c.hit.filing_id, c.hit.page_start, c.hit.chunk_id)
            if cit not in citations:
                citations.append(cit)
        return AnswerResult("; ".join(parts) + ".", citations, "answered", latency_ms=_ms(t0))


def _lexicon():
    """lexicon.yaml as resolved now (a session's config directory may differ), loaded once per file."""
    from finrag_pipeline.core.config import config_path

    return _lexicon_at(str(config_path("lexicon.yaml")))


@functools.lru_cache(maxsize=4)
def _lexicon_at(path: str):
    from finrag_pipeline.core.analyst.lexicon import Lexicon

    return Lexicon.load(path)


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


# ---------------------------------------------------------------------------------------------
# LLM answerer

JSON_CONTRACT = ('Reply with JSON only: {"answer": "<the answer with its figure, unit and period>", '
                 '"citations": [<page numbers of the evidence you used>], "abstain": <true|false>}. '
                 'If the evidence does not contain the answer for the asked period, set "abstain": true '
                 'and "answer": "". Never use a figure that is not in the evidence.')

PROMPT_TEMPLATES: dict[str, str] = {
    "standard": "Answer the question about a 10-K filing using only the evidence below. " + JSON_CONTRACT,
    "few_shot": (
        "Answer questions about 10-K filings using only the evidence. " + JSON_CONTRACT + "\n\nExamples:\n"
        "Evidence [page 40]: Total net sales | 2022: 394,328 | 2021: 365,817 | USD millions\n"
        "Question: What were total net sales in fiscal 2022?\n"
        '{"answer": "Total net sales were $394,328 million in fiscal 2022.", "citations": [40], "abstain": false}\n'
        "Evidence [page 12]: Research and development | 2021: 21,914 | USD millions\n"
        "Question: What was R&D expense in fiscal 2019?\n"
        '{"answer": "", "citations": [], "abstain": true}'),
    "chain_of_thought": (
        "Answer the question about a 10-K filing using only the evidence. First find the line item, "
        "then the column of the asked period, then the unit; do any arithmetic step by step in a "
        '"reasoning" field. ' + JSON_CONTRACT.replace('{"answer"', '{"reasoning": "...", "answer"')),
    "persona_financial_analyst": (
        "You are a meticulous equity research analyst reading a 10-K. Report figures exactly as filed, "
        "with units and fiscal period. " + JSON_CONTRACT),
    "persona_risk_analyst": (
        "You are a risk analyst reviewing a 10-K. State figures precisely, with units and fiscal period, "
        "and never extrapolate beyond the evidence. " + JSON_CONTRACT),
}


def format_evidence(hits: Sequence[Hit], max_chars: int = 8000) -> str:
    blocks, used = [], 0
    for h in hits:
        pages = f"page {h.page_start}" if h.page_end == h.page_start else f"pages {h.page_start}-{h.page_end}"
        block = f"[{pages} | {h.filing_id}]\n{h.text.strip()}"
        if used + len(block) > max_chars and blocks:
            break
        blocks.append(block)
        used += len(block)
    return "\n\n".join(blocks)


class LLMAnswerer:
    """Answers through an ``LLMClient`` with a prompt type, temperature and top_p.

    The model must return ``{"answer", "citations": [page], "abstain"}``; anything else, or a
    citation of a page that was not in the evidence, is ``invalid_output`` (the answer is not
    trusted). A cited page maps back to the best-ranked hit that holds it.
    """

    def __init__(self, client: Any, *, prompt_type: str = "standard", temperature: float = 0.0,
                 top_p: float = 1.0, max_context_chars: int = 8000, max_tokens: int = 512,
                 templates: Mapping[str, str] | None = None, name: str | None = None) -> None:
        self.templates = {**PROMPT_TEMPLATES, **(templates or {})}
        if prompt_type not in self.templates:
            raise ValueError(f"unknown prompt type {prompt_type!r}; known: {sorted(self.templates)}")
        self.client = client
        self.prompt_type = prompt_type
        self.temperature = temperature
        self.top_p = top_p
        self.max_context_chars = max_context_chars
        self.max_tokens = max_tokens
        self.name = name or f"{getattr(client, 'name', 'llm')}:{prompt_type}"

    def messages(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> list[dict]:
        period = f" (asked period: {', '.join(periods)})" if periods else ""
        user = (f"EVIDENCE:\n{format_evidence(hits, self.max_context_chars)}\n\n"
                f"QUESTION: {question}{period}")
        return [{"role": "system", "content": self.templates[self.prompt_type]},
                {"role": "user", "content": user}]

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        if not hits:
            return AnswerResult("", [], "no_evidence")
        resp = self.client.complete(self.messages(question, hits, periods), json=True,
                                    temperature=self.temperature, top_p=self.top_p, max_tokens=self.max_tokens)
        base = dict(prompt_tokens=int(getattr(resp, "prompt_tokens", 0) or 0),
                    completion_tokens=int(getattr(resp, "completion_tokens", 0) or 0),
                    latency_ms=float(getattr(resp, "latency_ms", 0.0) or 0.0),
                    cost_usd=float(getattr(resp, "cost_usd", 0.0) or 0.0))
        state = from_client_state(getattr(resp, "state", "backend_error"))
        if state != "answered":
            return AnswerResult(getattr(resp, "text", "") or "", [], state,
                                error=getattr(resp, "error", None) or state, **base)
        if getattr(resp, "json_truncated", False) and not resp.json_complete(("answer", "citations")):
            # A reply cut off mid-JSON: a repaired "394" of "394.3" must never score as a correct answer.
            return AnswerResult(resp.text, [], "invalid_output",
                                error="truncated JSON: answer or citations cut off (repaired fields incomplete)",
                                **base)
        return self._parse(resp.parsed_json, resp.text, hits, base)

    def _parse(self, data: Any, raw: str, hits: Sequence[Hit], base: dict) -> AnswerResult:
        checked = read_answer_json(data, raw, "citations", base)
        if isinstance(checked, AnswerResult):
            return checked
        answer, cited = checked
        citations: list[Citation] = []
        for c in cited:
            cit = _resolve_citation(c, hits)
            if cit is None:
                return AnswerResult(answer, [], "invalid_output",
                                    error=f"citation {c!r} is not a page of the evidence", **base)
            if cit not in citations:
                citations.append(cit)
        return AnswerResult(answer, citations, "answered", details={k: v for k, v in data.items()
                                                                    if k not in ("answer", "citations")},
                            **base)



def _resolve_citation(c: Any, hits: Sequence[Hit]) -> Citation | None:
    """A page number (or 'FILING:page' / {'page':..,'filing_id':..}) -> (filing_id, page, chunk_id)."""
    filing = None
    if isinstance(c, dict):
        filing, c = c.get("filing_id"), c.get("page")
    elif isinstance(c, str) and ":" in c:
        filing, c = c.rsplit(":", 1)
    try:
        page = int(str(c).lower().replace("page", "").replace("p.", "").strip())
    except (TypeError, ValueError):
        return None
    for h in sorted(hits, key=lambda h: h.rank):
        if h.page_start <= page <= h.page_end and (filing is None or h.filing_id == filing):
            return (h.filing_id, page, h.chunk_id)
    return None
