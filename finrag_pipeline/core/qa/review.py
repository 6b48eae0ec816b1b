"""Human review: export a QA set to CSV, read the reviewed file back (accept, reject, edit).

The CSV has one row per item; reviewers fill ``decision`` (accept | reject | edit, blank = no
decision) and, for edits, ``edited_question`` / ``edited_answer``. Importing returns the updated
items and one record per decision for the ``qa.reviews`` table (before/after as JSON).
"""

from __future__ import annotations

import copy
import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from finrag_pipeline.core.models import QAItem
from finrag_pipeline.core.scoring.answer_contract import ensure_contract, recompute_scoring_fields

REVIEW_COLUMNS = ["qa_id", "filing_id", "question_type", "question", "reference_answer", "computation",
                  "evidence_pages", "generator", "status", "decision", "edited_question", "edited_answer",
                  "reviewer", "note"]
DECISIONS = {"accept": "accepted", "reject": "rejected", "edit": "edited"}


def export_review_csv(items: Sequence[QAItem], path: str | Path) -> Path:
    """Write the review sheet; ``decision`` and the edit columns start empty."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=REVIEW_COLUMNS)
        writer.writeheader()
        for it in items:
            pages = sorted({p.page for g in it.evidence for p in g})
            writer.writerow({"qa_id": it.qa_id, "filing_id": it.filing_id, "question_type": it.question_type,
                             "question": it.question, "reference_answer": it.reference_answer,
                             "computation": it.computation or "", "evidence_pages": ";".join(map(str, pages)),
                             "generator": it.generator, "status": it.status, "decision": "",
                             "edited_question": "", "edited_answer": "", "reviewer": "", "note": ""})
    return path


def _snapshot(item: QAItem) -> str:
    """What a review may change, including every field scoring reads (qa.reviews before/after)."""
    return json.dumps({"question": item.question, "reference_answer": item.reference_answer,
                       "status": item.status, "periods": item.periods, "answer_values": item.answer_values,
                       "answer_choice": item.answer_choice}, sort_keys=True, default=str)


def import_review_csv(path: str | Path, items: Sequence[QAItem], default_reviewer: str = ""
                      ) -> tuple[list[QAItem], list[dict[str, Any]]]:
    """Apply the decisions in a reviewed CSV to ``items``.

    Returns (all items, updated where decided; review rows for qa.reviews). Unknown decisions and
    unknown qa_ids raise ValueError: a mistyped sheet must not silently pass."""
    by_id = {it.qa_id: copy.deepcopy(it) for it in items}
    reviews: list[dict[str, Any]] = []
    with Path(path).open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            decision = (row.get("decision") or "").strip().lower()
            if not decision:
                continue
            if decision not in DECISIONS:
                raise ValueError(f"{row.get('qa_id')}: decision {decision!r} is not one of {sorted(DECISIONS)}")
            item = by_id.get(row.get("qa_id", ""))
            if item is None:
                raise ValueError(f"review row for unknown qa_id {row.get('qa_id')!r}")
            item = ensure_contract(item)
            before = _snapshot(item)
            if decision == "edit":
                # one function applies the edit and recomputes every scoring field (answer values, choice,
                # periods): an edit that changed only the text would change nothing that is scored
                item = recompute_scoring_fields(item, question=row.get("edited_question") or None,
                                                reference_answer=row.get("edited_answer") or None)
                by_id[item.qa_id] = item
            item.status = DECISIONS[decision]
            item.metadata = {**item.metadata, "reviewed": True}
            reviews.append({"qa_id": item.qa_id, "decision": decision,
                            "reviewer": (row.get("reviewer") or default_reviewer).strip(),
                            "note": (row.get("note") or "").strip(), "before": before, "after": _snapshot(item)})
    return [by_id[it.qa_id] for it in items], reviews


def apply_recorded_reviews(items: Sequence[QAItem], reviews: Sequence[dict[str, Any]]) -> list[QAItem]:
    """Re-apply the latest recorded decision per qa_id (rows of qa.reviews, oldest first) to freshly
    generated items, so regenerating a QA set never undoes a human's reject or edit."""
    latest: dict[str, dict[str, Any]] = {}
    for review in reviews:
        latest[review["qa_id"]] = review
    out = []
    for item in items:
        review = latest.get(item.qa_id)
        if review is not None and review["decision"] in DECISIONS:
            item = copy.deepcopy(item)
            after = json.loads(review["after"]) if review.get("after") else {}
            if review["decision"] == "edit":
                item = recompute_scoring_fields(ensure_contract(item), question=after.get("question"),
                                                reference_answer=after.get("reference_answer"))
            item.status = DECISIONS[review["decision"]]
            item.metadata = {**item.metadata, "reviewed": True}
        out.append(item)
    return out
