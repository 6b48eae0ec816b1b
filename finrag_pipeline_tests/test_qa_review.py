"""Review round-trip: export CSV, edit decisions, import, records for qa.reviews."""

import csv
import json

import pytest

from finrag_pipeline.core.models import EvidencePlace, QAItem
from finrag_pipeline.core.qa.review import export_review_csv, import_review_csv


def items():
    return [QAItem(f"q{i}", "F-1", f"Question {i}?", f"Answer {i}", "factual",
                   evidence=[[EvidencePlace("c", 3 + i, "F-1")]]) for i in range(4)]


def test_review_round_trip(tmp_path):
    path = export_review_csv(items(), tmp_path / "review.csv")
    rows = list(csv.DictReader(path.open()))
    assert [r["evidence_pages"] for r in rows] == ["3", "4", "5", "6"] and all(r["decision"] == "" for r in rows)
    rows[0]["decision"] = "accept"
    rows[1].update(decision="reject", note="answer wrong", reviewer="ana")
    rows[2].update(decision="Edit", edited_question="Question two, clearer?", edited_answer="")
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    updated, reviews = import_review_csv(path, items(), default_reviewer="bob")
    assert [i.status for i in updated] == ["accepted", "rejected", "edited", "accepted"]
    assert updated[2].question == "Question two, clearer?" and updated[2].reference_answer == "Answer 2"
    assert [r["decision"] for r in reviews] == ["accept", "reject", "edit"]
    assert reviews[1]["reviewer"] == "ana" and reviews[0]["reviewer"] == "bob"
    assert json.loads(reviews[2]["before"])["question"] == "Question 2?"
    assert json.loads(reviews[2]["after"])["question"] == "Question two, clearer?"
    assert set(reviews[0]) == {"qa_id", "decision", "reviewer", "note", "before", "after"}


def test_bad_decision_raises(tmp_path):
    path = export_review_csv(items()[:1], tmp_path / "r.csv")
    row = next(csv.DictReader(path.open()))
    row["decision"] = "maybe"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        w.writeheader()
        w.writerow(row)
    with pytest.raises(ValueError, match="maybe"):
        import_review_csv(path, items())


def test_recorded_reviews_survive_regeneration():
    """Regenerating a QA set re-applies the latest recorded decision per question (reject, then edit)."""
    import json as _json

    from finrag_pipeline.core.models import QAItem
    from finrag_pipeline.core.qa.review import apply_recorded_reviews

    def item(qa_id: str) -> QAItem:
        return QAItem(qa_id=qa_id, filing_id="F", question=f"q-{qa_id}?", reference_answer="1", question_type="factual")

    reviews = [
        {"qa_id": "a", "decision": "reject", "after": _json.dumps({"question": "q-a?", "status": "rejected"})},
        {"qa_id": "b", "decision": "reject", "after": _json.dumps({"question": "q-b?", "status": "rejected"})},
        {"qa_id": "b", "decision": "edit", "after": _json.dumps({"question": "Better b?", "reference_answer": "2"})},
    ]
    out = {i.qa_id: i for i in apply_recorded_reviews([item("a"), item("b"), item("c")], reviews)}
    assert out["a"].status == "rejected"
    assert (out["b"].status, out["b"].question, out["b"].reference_answer) == ("edited", "Better b?", "2")
    assert (out["c"].status, out["c"].question) == ("accepted", "q-c?")
