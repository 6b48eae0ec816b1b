"""External QA sets as qa.items: FinanceBench JSONL and a plain JSONL/CSV schema.

FinanceBench ``evidence_page_num`` is the 0-INDEXED page of the PDF; our ``Page.page_number`` is
1-based, so page = evidence_page_num + 1. Each evidence entry becomes one required group whose
alternatives are the chunks on that page that overlap the evidence text best (all chunks on the
page when none overlaps, a page-only place when the filing has no chunks).

Optional FinanceBench-format field ``question_category`` (metric | lookup | judgement | narrative |
unanswerable, as in the hand-written sets finrag_pipeline_tests/data/external/analyst_questions*.jsonl)
sets the question type (metric, factual, judgement, narrative, unanswerable); without it FinanceBench's
own type is mapped. A judgement question asks for a yes/no verdict with the figures it rests on
("Does Apple have an improving operating margin profile as of FY2022?"). A record without evidence is
``unanswerable``. ``justification`` (the computation) is kept as ``computation``; an optional ``split``
(dev | heldout | heldout2) is kept in ``metadata["split"]``.

Every imported item records its set in ``metadata["external_set"]`` (the file's stem unless a name is
given): the external-agreement statistics compare each set with the synthetic questions of the
same filings (core/evaluation/agreement.py).

Plain schema (JSONL objects or CSV columns): question, answer, filing_id or doc_name,
evidence_pages ("32" or "32;52", 1-indexed), question_type (optional), qa_id (optional), and the
answer contract (optional): answer_value (the figure an answer must state: "394328" with answer_unit
"USD millions", or "$394.3 billion" / "43.3%" alone), answer_unit, answer_tolerance (relative),
answer_period ("FY2022"), answer_choice with choice_options ("FY2022;FY2021"). FinanceBench answers
that are one figure ("$1,577.00", "65.4%") become the answer value; a sentence answer asks for no
value (it is judged, not matched).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finrag_pipeline.core.models import Chunk, EvidencePlace, FilingMeta, Page, QAItem, stable_id
from finrag_pipeline.core.scoring.answer_contract import ensure_contract

_TOKEN_RE = re.compile(r"[a-z]+|\d[\d,.]*")


@dataclass
class FilingContext:
    """What an importer needs of one ingested filing."""

    meta: FilingMeta
    pages: list[Page]
    chunks: list[Chunk] = field(default_factory=list)


@dataclass
class ImportResult:
    items: list[QAItem]
    log: list[dict[str, Any]] = field(default_factory=list)
    # filings whose qa.items rows this import wrote or removed (import_external_set fills it): their
    # QA sets changed, so the caller reports them to Dagster and their evaluations re-run
    changed_filings: list[str] = field(default_factory=list)


def _tokens(text: str) -> set[str]:
    return {t.replace(",", "").rstrip(".") for t in _TOKEN_RE.findall((text or "").lower())}


def overlap(evidence_text: str, text: str) -> float:
    """Share of the evidence text's tokens found in ``text`` (recall of the evidence)."""
    ev = _tokens(evidence_text)
    return len(ev & _tokens(text)) / len(ev) if ev else 0.0


def map_evidence(ctx: FilingContext, page: int, evidence_text: str, min_overlap: float = 0.3) -> list[EvidencePlace]:
    """Alternative places for one evidence entry: best-overlapping leaf chunks on ``page`` (1-based)."""
    fid = ctx.meta.filing_id
    on_page = [c for c in ctx.chunks if c.is_leaf and c.page_start <= page <= c.page_end]
    if not on_page:
        return [EvidencePlace(None, page, fid)]
    if evidence_text:
        scored = sorted(((overlap(evidence_text, c.text), c) for c in on_page), key=lambda sc: -sc[0])
        best = scored[0][0]
        if best >= min_overlap:
            # near-ties too: the same figure is often both in a table-row chunk and a prose window
            return [EvidencePlace(c.chunk_id, page, fid) for s, c in scored if s >= 0.8 * best]
    return [EvidencePlace(c.chunk_id, page, fid) for c in on_page]


def _index_filings(filings: Mapping[str, FilingContext] | Iterable[FilingContext]) -> dict[str, FilingContext]:
    """Look-up by filing_id, original file name and its stem ("APPLE_2022_10K")."""
    values = filings.values() if isinstance(filings, Mapping) else filings
    out: dict[str, FilingContext] = dict(filings) if isinstance(filings, Mapping) else {}
    for ctx in values:
        out[ctx.meta.filing_id] = ctx
        if ctx.meta.original_name:
            out[ctx.meta.original_name] = ctx
            out[Path(ctx.meta.original_name).stem] = ctx
    return out


def default_set_name(path: str | Path) -> str:
    """An external set's name when none is given: the file's stem, kept to SET_NAME_RE's characters."""
    return re.sub(r"[^\w.\-]", "_", Path(path).stem)[:80] or "external"


def _page_in_range(ctx: FilingContext, page: int) -> bool:
    return any(p.page_number == page for p in ctx.pages)


def import_financebench(path: str | Path, filings: Mapping[str, FilingContext] | Iterable[FilingContext],
                        set_name: str | None = None) -> ImportResult:
    """FinanceBench JSONL -> QAItems (source="financebench"); unknown documents are counted, not raised."""
    index = _index_filings(filings)
    set_name = set_name or default_set_name(path)
    items, counts = [], {"imported": 0, "filing_not_ingested": 0, "page_out_of_range": 0, "bad_record": 0}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            ctx = index.get(rec["doc_name"])
            _fb_question_type(rec)   # an unknown category is a bad record, not a silent default
        except (ValueError, KeyError):
            counts["bad_record"] += 1
            continue
        if ctx is None:
            counts["filing_not_ingested"] += 1
            continue
        groups, meta_ev = [], []
        for ev in rec.get("evidence") or []:
            page = int(ev["evidence_page_num"]) + 1          # 0-indexed PDF page -> our 1-based page_number
            if not _page_in_range(ctx, page):
                counts["page_out_of_range"] += 1
                continue
            groups.append(map_evidence(ctx, page, ev.get("evidence_text", "")))
            page_text = next(p.text for p in ctx.pages if p.page_number == page)
            meta_ev.append({"page": page, "overlap": round(overlap(ev.get("evidence_text", ""), page_text), 3)})
        fid = ctx.meta.filing_id
        # Evidence was given but none of it maps onto this document: the question would be scored as
        # unanswerable, which it is not. Keep it, but out of evaluation until a human looks.
        unmapped = bool(rec.get("evidence")) and not groups
        if unmapped:
            counts["evidence_unmapped_pending_review"] = counts.get("evidence_unmapped_pending_review", 0) + 1
        items.append(ensure_contract(QAItem(
            # the set is part of the id: two sets may use the same FinanceBench ids on one filing
            qa_id=stable_id(fid, "financebench", set_name, rec.get("financebench_id") or rec["question"]),
            filing_id=fid,
            question=rec["question"], reference_answer=str(rec.get("answer", "")),
            question_type=_fb_question_type(rec), evidence=groups,
            computation=rec.get("justification") or None,
            generator="financebench", generator_version="", source="financebench",
            status="pending_review" if unmapped else "accepted",
            metadata={"financebench_id": rec.get("financebench_id"), "company": rec.get("company"),
                      "doc_name": rec.get("doc_name"), "fb_question_type": rec.get("question_type"),
                      "question_category": rec.get("question_category"), "external_set": set_name,
                      "evidence_pages": meta_ev,
                      **({"split": rec["split"]} if rec.get("split") else {})})))
        counts["imported"] += 1
    return ImportResult(items, [{"stage": "import", "reason": k, "count": v} for k, v in counts.items() if v])


# The hand-written analyst set's categories -> the project's question types.
QUESTION_CATEGORY_TYPES = {"metric": "metric", "lookup": "factual", "narrative": "narrative",
                           "unanswerable": "unanswerable", "judgement": "judgement"}


def _fb_question_type(rec: Mapping[str, Any]) -> str:
    category = rec.get("question_category")
    if category:
        if category not in QUESTION_CATEGORY_TYPES:
            raise ValueError(f"unknown question_category {category!r} (one of {sorted(QUESTION_CATEGORY_TYPES)})")
        return QUESTION_CATEGORY_TYPES[category]
    if not rec.get("evidence"):
        return "unanswerable"
    return _map_fb_type(rec.get("question_type"))


def _map_fb_type(fb_type: str | None) -> str:
    return {"metrics-generated": "numerical", "domain-relevant": "factual",
            "novel-generated": "factual"}.get(fb_type or "", "factual")


def _pages_field(value: Any) -> list[int]:
    if value is None or value == "":
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, list):
        return [int(v) for v in value]
    return [int(v) for v in re.split(r"[;,\s]+", str(value).strip()) if v]


def _plain_records(path: Path, fmt: str) -> list[dict[str, Any]]:
    if fmt == "csv":
        with path.open(newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def import_plain(path: str | Path, filings: Mapping[str, FilingContext] | Iterable[FilingContext],
                 fmt: str | None = None, set_name: str | None = None) -> ImportResult:
    """Plain JSONL or CSV (evidence_pages 1-indexed) -> QAItems with source "jsonl"/"csv"."""
    path = Path(path)
    set_name = set_name or default_set_name(path)
    fmt = fmt or ("csv" if path.suffix.lower() == ".csv" else "jsonl")
    index = _index_filings(filings)
    items, counts = [], {"imported": 0, "filing_not_ingested": 0, "page_out_of_range": 0}
    for rec in _plain_records(path, fmt):
        ctx = index.get(rec.get("filing_id") or "") or index.get(rec.get("doc_name") or "")
        if ctx is None:
            counts["filing_not_ingested"] += 1
            continue
        groups = []
        for page in _pages_field(rec.get("evidence_pages")):
            if _page_in_range(ctx, page):
                groups.append(map_evidence(ctx, page, rec.get("evidence_text") or rec.get("answer", "")))
            else:
                counts["page_out_of_range"] += 1
        fid = ctx.meta.filing_id
        qtype = rec.get("question_type") or ("unanswerable" if not groups else "factual")
        contract = {k: rec[k] for k in ("answer_value", "answer_unit", "answer_tolerance", "answer_choice")
                    if rec.get(k) not in (None, "")}
        if rec.get("choice_options") not in (None, ""):
            opts = rec["choice_options"]
            contract["choice_options"] = opts if isinstance(opts, list) else [
                o.strip() for o in re.split(r"[;|]", str(opts)) if o.strip()]
        period = rec.get("answer_period") or None
        try:
            item = ensure_contract(QAItem(
                qa_id=rec.get("qa_id") or stable_id(fid, fmt, set_name, rec["question"]), filing_id=fid,
                question=rec["question"], reference_answer=str(rec.get("answer", "")), question_type=qtype,
                evidence=groups, generator=fmt, source=fmt, periods=[period] if period else [],
                metadata={"imported_from": path.name, "external_set": set_name, **contract}))
        except ValueError:
            counts["bad_answer_value"] = counts.get("bad_answer_value", 0) + 1
            continue
        items.append(item)
        counts["imported"] += 1
    return ImportResult(items, [{"stage": "import", "reason": k, "count": v} for k, v in counts.items() if v])


IMPORT_FORMATS = ("financebench", "jsonl", "csv")
SET_NAME_RE = re.compile(r"[\w.\-]{1,80}")   # shown in marts, the report and Dagster metadata


def import_external_set(warehouse: Any, path: str | Path, fmt: str, set_name: str | None = None) -> ImportResult:
    """Import an external QA set onto the warehouse's active filings and write it to ``qa.items``.

    Shared by ``finrag qa import`` and the demo. Each item gets its phrasing leakage
    (core/qa/leakage.py). Idempotent: per filing, the rows of this source and set are replaced.
    """
    from finrag_pipeline.core.analyst.lexicon import Lexicon
    from finrag_pipeline.core.catalog import active_filings, load_filing
    from finrag_pipeline.core.qa.config import load_qa_config
    from finrag_pipeline.core.qa.leakage import annotate_leakage
    from finrag_pipeline.core.records import load_chunks, load_pages, load_qa_items
    from finrag_pipeline.core.warehouse import rows_of

    if fmt not in IMPORT_FORMATS:
        raise ValueError(f"unknown QA import format {fmt!r} (one of {', '.join(IMPORT_FORMATS)})")
    if set_name is not None and not SET_NAME_RE.fullmatch(set_name):
        raise ValueError(f"QA set name {set_name!r}: use 1-80 letters, digits, '_', '-' or '.'")
    contexts = [FilingContext(load_filing(warehouse, fid), load_pages(warehouse, fid), load_chunks(warehouse, fid))
                for fid in active_filings(warehouse)]
    result = (import_financebench(path, contexts, set_name=set_name) if fmt == "financebench"
              else import_plain(path, contexts, fmt=fmt, set_name=set_name))
    settings, lexicon = load_qa_config().leakage, Lexicon.load_default()
    name = set_name or default_set_name(path)
    for ctx in contexts:
        fid = ctx.meta.filing_id
        items = annotate_leakage([i for i in result.items if i.filing_id == fid], ctx.chunks, ctx.pages,
                                 lexicon=lexicon, settings=settings)
        # Replace this set's earlier rows (and only them: other sets of the same source stay) in one
        # transaction, so questions dropped from the file leave too. (The source is the format.)
        stale = {i.qa_id for i in load_qa_items(warehouse, fid, accepted_only=False)
                 if i.source == fmt and (i.metadata or {}).get("external_set", name) == name}
        if items or stale:
            warehouse.replace_rows("qa.items", rows_of(items), where={"qa_id": sorted(stale | {i.qa_id for i in items})})
            result.changed_filings.append(fid)
    return result
