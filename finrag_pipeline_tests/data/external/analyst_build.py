"""What the two analyst-question build scripts share (build_analyst_questions.py and
build_analyst_questions_dev_heldout.py): the parsed sample filings and their page texts, the companies,
the FinanceBench record of a question, the check that every evidence text is on its page, and the two
files they write (the questions as JSON lines, the evidence pages' text for the fast tests)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

COMPANY = {"APPLE_2021_10K": "Apple", "APPLE_2022_10K": "Apple", "aapl-10-k-2024-11-01": "Apple",
           "AMAZON_2022_10K": "Amazon", "amzn-10-k-2025-02-07": "Amazon", "BOEING_2021_10K": "Boeing",
           "MICROSOFT_2022_10K": "Microsoft", "nvda-10-k-2025-02-26": "NVIDIA"}


@functools.cache
def parsed(doc):
    """A sample filing parsed, through THE parse cache (core/ingest/parse_cache.py: per filing, keyed by its sha256
    and the parser's code fingerprint)."""
    from finrag_pipeline.core.ingest.parse_cache import DEFAULT_PARSE_CACHE, cached_parse
    from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR

    path = next(p for p in SAMPLE_FILINGS_DIR.iterdir() if p.stem == doc)
    return cached_parse(path, DEFAULT_PARSE_CACHE)


def page_text(doc, page):
    return next(p.text for p in parsed(doc).pages if p.page_number == page)


def norm(s):
    return re.sub(r"\s+", " ", s).strip()


class Questions(list):
    """The questions of a script, in the order written: ``q(doc, category, question, answer, evidence,
    justification)``, evidence as (1-based page, verbatim text) pairs."""

    def q(self, doc, cat, question, answer, evidence, justification=None):
        self.append((doc, cat, question, answer, evidence, justification))


def record(number, entry, fb_type) -> dict:
    """One question in FinanceBench format (evidence_page_num = page - 1, 0-indexed as FinanceBench)."""
    doc, cat, question, answer, evidence, justification = entry
    rec = {"financebench_id": f"analyst_{number:03d}", "company": COMPANY[doc], "doc_name": doc,
           "question_type": fb_type[cat], "question_category": cat, "question": question, "answer": answer,
           "evidence": [{"doc_name": doc, "evidence_page_num": page - 1, "evidence_text": text}
                        for page, text in evidence]}
    if justification:
        rec["justification"] = justification
    return rec


def evidence_not_on_page(rows) -> list[str]:
    """A line per evidence text that is not verbatim (whitespace aside) on its page as parsed."""
    return [f"NOT ON PAGE {r['financebench_id']} {r['doc_name']} {ev['evidence_page_num'] + 1} {ev['evidence_text'][:80]}"
            for r in rows for ev in r["evidence"]
            if norm(ev["evidence_text"]) not in norm(page_text(r["doc_name"], ev["evidence_page_num"] + 1))]


def write_jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def write_evidence_pages(path: Path, rows) -> None:
    """The text of every evidence page, per filing with its id and page count (the fast tests' fixture)."""
    fixture = {}
    for r in rows:
        doc = r["doc_name"]
        entry = fixture.setdefault(doc, {"filing_id": parsed(doc).meta.filing_id, "n_pages": len(parsed(doc).pages),
                                         "pages": {}})
        for ev in r["evidence"]:
            page = ev["evidence_page_num"] + 1
            entry["pages"][str(page)] = page_text(doc, page)
    path.write_text(json.dumps(fixture, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
