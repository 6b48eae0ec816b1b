"""Filters drop what they should and count it."""

import numpy as np

from finrag_pipeline.core.models import Chunk, EvidencePlace, Page, QAItem
from finrag_pipeline.core.qa.filters import (
    filter_answer_in_question,
    filter_duplicates,
    filter_figures_in_evidence,
    filter_passage_dependent,
    filter_question_form,
)

FID = "AAPL-2022-10K"
PAGE = Page(FID, 32, "Total net sales 394,328 365,817 274,515\nNet income $ 99,803", "Item 8", None)
CHUNK = Chunk("c1", FID, "AAPL", "Apple Inc.", 2022, "10-K", "Item 8", 32, 32, "table_row",
              "Apple 10-K FY2022 | Total net sales | 2022: 394,328")
PROSE = Chunk("c2", FID, "AAPL", "Apple Inc.", 2022, "10-K", "Item 7", 20, 20, "prose",
              "Total net sales rose to $394.3 billion in 2022.")


def item(q, answer="$394,328 million", value=394328.0, text="394,328", place=("c1", 32), qtype="factual"):
    return QAItem(qa_id=q[:20], filing_id=FID, question=q, reference_answer=answer, question_type=qtype,
                  answer_figures=[{"value": value, "text": text, "scale": 1e6, "role": "source"}],
                  evidence=[[EvidencePlace(place[0], place[1], FID)]])


def test_figures_must_be_in_evidence():
    items = [item("What was total net sales?"),
             item("What was net sales per the MD&A?", place=("c2", 20)),       # "$394.3 billion" states it
             item("What was R&D?", answer="$26,251 million", value=26251, text="26,251"),
             QAItem("u", FID, "What was X in 2016?", "Not in the filing", "unanswerable")]
    result = filter_figures_in_evidence(items, [PAGE, Page(FID, 20, PROSE.text, None, None)], [CHUNK, PROSE])
    assert [i.question for i in result.kept] == ["What was total net sales?", "What was net sales per the MD&A?",
                                                "What was X in 2016?"]
    assert result.dropped == {"figure_not_in_evidence": 1}


def test_passage_dependent_dropped():
    qs = ["According to the table above, what was net income?", "What does this passage say about sales?",
          "In the text, what was revenue?", "Based on the context provided, what was revenue?",
          "What was Apple's net income in fiscal 2022?", "According to Apple's 2022 10-K, what was revenue?"]
    result = filter_passage_dependent([item(q) for q in qs])
    assert [i.question for i in result.kept] == qs[4:]
    assert result.dropped == {"passage_dependent": 4}


def test_labels_and_statements_are_not_questions():
    # the first two are what the local 0.5B model wrote for Apple 2022 (BENCHMARKS "LLM generation"): both
    # passed every evidence filter
    qs = ["Net income in 2022", "Apple Inc. has a fiscal year of 2022.", "Revenue?",
          "What was Apple's net income in fiscal 2022?",
          "Compute Apple's current ratio at the end of fiscal 2022.",
          "In which year was Apple's gross margin higher, fiscal 2022 or fiscal 2021?",
          "Apple's total net sales in fiscal 2022 were how much?"]
    result = filter_question_form([item(q) for q in qs])
    assert [i.question for i in result.kept] == qs[3:]
    assert result.dropped == {"not_a_question": 3}


def test_answer_in_question_dropped():
    result = filter_answer_in_question([item("Was total net sales $394,328 million in 2022?"),
                                        item("What was total net sales in fiscal 2022?")])
    assert [i.question for i in result.kept] == ["What was total net sales in fiscal 2022?"]
    assert result.dropped == {"answer_in_question": 1}


def fake_embedder(texts):
    # bag of words: enough to make paraphrases close and unrelated questions far
    vocab = sorted({w for t in texts for w in t.lower().strip("?").split()})
    return np.array([[t.lower().strip("?").split().count(w) for w in vocab] for t in texts], dtype=float)


def test_duplicates_exact_and_near():
    qs = ["What was Apple's net income in fiscal 2022?", "what was apple's NET income in fiscal 2022",
          "What was Apple's net income for fiscal 2022?", "What was Apple's net income in fiscal 2021?",
          "How much cash did Apple hold?"]
    result = filter_duplicates([item(q) for q in qs], threshold=0.85, embedder=fake_embedder)
    assert [i.question for i in result.kept] == [qs[0], qs[3], qs[4]]  # a different year is not a duplicate
    assert result.dropped == {"duplicate_exact": 1, "near_duplicate": 1}


def test_minilm_near_duplicates():
    from finrag_pipeline.core.qa.filters import minilm_embedder

    qs = ["What was Apple's total net sales in fiscal 2022?", "How much were Apple's total net sales in fiscal 2022?",
          "What was Apple's research and development expense in fiscal 2022?"]
    result = filter_duplicates([item(q) for q in qs], threshold=0.9, embedder=minilm_embedder())
    assert [i.question for i in result.kept] == [qs[0], qs[2]]
    assert result.dropped == {"near_duplicate": 1}
