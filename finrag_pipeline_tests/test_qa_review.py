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


def _write(path, rows):
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _lookup_item():
    from finrag_pipeline.core.scoring.answer_contract import answer_value

    return QAItem("qn", "AAPL-2022-10K", "What were Apple's total net sales in fiscal 2022?", "$394,328 million",
                  "factual", periods=["FY2022"], evidence=[[EvidencePlace("c", 28, "AAPL-2022-10K")]],
                  answer_figures=[{"value": 394328.0, "unit": "USD millions", "period": "FY2022", "text": "394,328"}],
                  answer_values=[answer_value(394328, "USD millions", period="FY2022", value_text="394,328")])


def test_review_edit_recomputes_every_scoring_field(tmp_path):
    """An edited reference answer changes what is scored: the old value no longer scores, the new one does."""
    from finrag_pipeline.core.scoring.answer_contract import contract_options
    from finrag_pipeline.core.scoring.answer_metrics import correctness

    item = _lookup_item()
    path = export_review_csv([item], tmp_path / "r.csv")
    rows = list(csv.DictReader(path.open()))
    rows[0].update(decision="edit", edited_question="What were Apple's total net sales in fiscal 2021?",
                   edited_answer="$365,817 million")
    _write(path, rows)
    (edited,), reviews = import_review_csv(path, [item])
    assert edited.periods == ["FY2021"]
    assert edited.answer_values[0]["value"] == 365817.0 and edited.answer_values[0]["scale"] == 1e6
    assert edited.answer_values[0]["period"] == "FY2021" and edited.answer_values[0]["unit"] == "USD"

    def score(answer):
        return correctness(answer, question=edited.question, answer_values=edited.answer_values,
                           answer_choice=edited.answer_choice, choice_options=contract_options(edited)).correct

    assert score("$365,817 million") == 1.0 and score("$394,328 million") == 0.0
    assert json.loads(reviews[0]["after"])["answer_values"][0]["value"] == 365817.0
    assert json.loads(reviews[0]["before"])["answer_values"][0]["value"] == 394328.0


def test_review_edit_of_a_choice_and_a_bare_figure():
    from finrag_pipeline.core.scoring.answer_contract import recompute_scoring_fields

    choice = QAItem("qc", "F", "Was Apple's total net sales higher in fiscal 2022 or in fiscal 2021?",
                    "Higher in fiscal 2022.", "comparative", periods=["FY2022", "FY2021"],
                    answer_choice="FY2022", metadata={"choice_options": ["FY2022", "FY2021"]})
    assert recompute_scoring_fields(choice, reference_answer="Fiscal 2021 was higher.").answer_choice == "FY2021"
    with pytest.raises(ValueError, match="commits to no option"):
        recompute_scoring_fields(choice, reference_answer="Both years were strong.")
    # a bare edited figure keeps the unit and scale of the value it replaces
    bare = recompute_scoring_fields(_lookup_item(), reference_answer="400,000")
    assert bare.answer_values[0]["value"] == 400000.0 and bare.answer_values[0]["scale"] == 1e6
    with pytest.raises(ValueError, match="states 0 figure"):
        recompute_scoring_fields(_lookup_item(), reference_answer="Not sure.")


def test_recorded_edit_recomputes_on_regeneration():
    from finrag_pipeline.core.qa.review import apply_recorded_reviews

    after = json.dumps({"question": "What were Apple's total net sales in fiscal 2022?",
                        "reference_answer": "$400,000 million", "status": "edited"})
    (item,) = apply_recorded_reviews([_lookup_item()], [{"qa_id": "qn", "decision": "edit", "after": after}])
    assert item.answer_values[0]["value"] == 400000.0 and item.status == "edited"
