"""Section routing on other producers' layouts: statements printed after Part IV are Item 8, and a short Item that
shares its page with the one before (Item 3 after Item 2) is the section of the sentences under its heading.

Checked by hand:
  nvda-10-k-2025-02-26.html  no Item 8 heading; Part IV "Item 15" p.49, then p.50 opens "Report of Independent
                             Registered Public Accounting Firm", p.52 "Consolidated Statements of Income", notes to p.81,
                             p.82 "Schedule II – Valuation and Qualifying Accounts", p.83 "Exhibit Index".
  NETFLIX_2020_10K.pdf       p.34 "Item 8 ... included immediately following Part IV"; p.40 "Item 16"; p.41 "INDEX TO
                             FINANCIAL STATEMENTS" ... p.66 note 12; p.67 "EXHIBIT INDEX" (the layout of the synthetic
                             pages below).
  NIKE_2020_10K.pdf          p.24 (filed under Item 2): "... Our leases expire at various dates through the year 2043.
                             ITEM 3. LEGAL PROCEEDINGS There are no material pending legal proceedings, other than
                             ordinary routine litigation incidental to our business, ..."
"""

from __future__ import annotations

import pytest

from finrag_pipeline.core.ingest.parse import parse_filing
from finrag_pipeline.core.ingest.sections import assign_sections
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR
from finrag_pipeline.core.retrieval.answer_sentences import SentenceScorer

NETFLIX_LAYOUT = [
    "Item 7. Management's Discussion and Analysis\nResults of operations ...",
    "Table of Contents\nItem 8. Financial Statements and Supplementary Data\nThe consolidated financial statements and "
    "accompanying notes listed in Part IV, Item 15(a)(1) are included immediately following Part IV hereof.\n"
    "Item 9. Changes in and Disagreements with Accountants\nNone.",
    "Item 9A. Controls and Procedures\n...",
    "PART IV\nItem 15. Exhibits, Financial Statement Schedules\n(a) The following documents are filed ...",
    "Table of Contents\nItem 16. Form 10-K Summary\nNone.",
    "Table of Contents\nNETFLIX, INC.\nINDEX TO FINANCIAL STATEMENTS\nPage\nReport of Independent Registered ... 40",
    "Report of Independent Registered Public Accounting Firm\nTo the Stockholders ...",
    "NETFLIX, INC.\nCONSOLIDATED STATEMENTS OF OPERATIONS\n(in thousands)",
    "NETFLIX, INC.\nNOTES TO CONSOLIDATED FINANCIAL STATEMENTS\n7. Commitments and Contingencies\nLegal Proceedings",
    "Table of Contents\nEXHIBIT INDEX\nExhibit Number Exhibit Description",
    "SIGNATURES\nPursuant to the requirements of Section 13 ...",
]


def test_statements_printed_after_part_iv_are_item_8():
    assert [s for s, _ in assign_sections(NETFLIX_LAYOUT)] == [
        "Item 7", "Item 8", "Item 9A", "Item 15", "Item 16", "Item 8", "Item 8", "Item 8", "Item 8", "Item 15", "Item 15"]


def test_an_item_8_that_held_the_statements_keeps_part_iv_as_it_is():
    """Apple, Amazon: the statements are in Item 8; an exhibit after Part IV that opens like a statement (a
    subsidiary's, an auditor's consent) stays in Part IV."""
    pages = ["Item 8. Financial Statements\nCONSOLIDATED STATEMENTS OF OPERATIONS", "Notes ...", "Notes ...",
             "PART IV\nItem 15. Exhibits", "Report of Independent Registered Public Accounting Firm\n(exhibit 99)"]
    assert [s for s, _ in assign_sections(pages)] == ["Item 8", "Item 8", "Item 8", "Item 15", "Item 15"]


def test_nvidia_statements_after_item_15_are_item_8():
    pages = {p.page_number: p.section for p in parse_filing(SAMPLE_FILINGS_DIR / "nvda-10-k-2025-02-26.html").pages}
    assert pages[49] == "Item 15"
    assert {pages[n] for n in range(50, 82)} == {"Item 8"}        # auditor's report, statements, notes
    assert pages[82] == pages[83] == "Item 15"                    # Schedule II, the exhibit index


NIKE_P24 = ("NIKE, Inc. (NKE) 10-K FY2020 | Item 2 PROPERTIES | See “United States Market” and “International Markets” "
            "for additional information regarding our retail stores. Our leases expire at various\ndates through the "
            "year 2043. ITEM 3. LEGAL PROCEEDINGS\nThere are no material pending legal proceedings, other than ordinary "
            "routine litigation incidental to our business, to which we are a party or of which any of our property is "
            "the\nsubject.\nITEM 4. MINE SAFETY DISCLOSURES\nNot applicable.\n2020 FORM 10-K 22")


def _hit(text: str, section: str | None) -> Hit:
    return Hit(chunk_id="c1", score=1.0, rank=1, filing_id="NKE-2020-10K", page_start=24, page_end=24,
               chunk_type="prose", text=text, stage="test", section=section, fiscal_year=2020)


def test_a_sentence_under_an_item_heading_is_in_that_item():
    asked = "What legal proceedings is NIKE involved in?"
    _, _, sentences = SentenceScorer().scored_sentences(asked, [_hit(NIKE_P24, "Item 2")])
    by_text = {s.text[:30]: s.section for s in sentences}
    assert by_text["There are no material pending "] == "Item 3"       # the heading run into it is left out
    assert by_text["See “United States Market” and"] == "Item 2"
    assert by_text["Not applicable."[:30]] == "Item 4" if "Not applicable." in by_text else True
    legal = next(s for s in sentences if s.text.startswith("There are no material"))
    # the same passage filed under a later Item (5): the earlier heading changes nothing, and Item 3's bonus
    # (the legal topic's first section: 0.6) is what the sentence loses
    later = next(s for s in SentenceScorer().scored_sentences(asked, [_hit(NIKE_P24, "Item 5")])[2]
                 if s.text == legal.text)
    assert later.section == "Item 5" and legal.score - later.score == pytest.approx(0.6)


def test_a_cross_reference_is_no_heading_and_the_front_matter_has_none():
    text = "Our business is described below. For more risks, see Item 1A. Risk Factors of this report, as amended."
    _, _, sentences = SentenceScorer().scored_sentences("What risks does the company face?", [_hit(text, "Item 7")])
    assert {s.section for s in sentences} == {"Item 7"}
    toc = "TABLE OF CONTENTS\nItem 1. Business 1\nItem 3. Legal Proceedings 17\nThe company has many legal proceedings."
    _, _, front = SentenceScorer().scored_sentences("What legal proceedings?", [_hit(toc, None)])
    assert {s.section for s in front} == {None}


@pytest.mark.parametrize("question,subject,topical", [
    # a risk question about competition: competition is what it is about (Netflix 2020 p.7: "If we are unable to
    # successfully or profitably compete with current and new competitors, our business will be adversely affected")
    ("What risks does Netflix identify regarding competition?", {"compet"}, False),
    ("What customer concentration risk does NVIDIA face?", {"custom", "concen"}, False),
    ("What legal proceedings is Apple involved in?", {"legal", "procee"}, True),     # the topic alone
    ("What are the main risks Netflix faces?", {"risk"}, True),
])
def test_a_second_topic_of_a_risk_question_is_its_subject(question, subject, topical):
    from finrag_pipeline.core.question_kind import classify_question
    from finrag_pipeline.core.retrieval.answer_sentences import read_subject

    read = read_subject(question, classify_question(question), None, {"netflix", "nvidia", "apple"})
    assert {g[0] for g in read.groups} == subject and read.topical == topical


def test_the_competition_risk_is_quoted_not_another_risk():
    risks = ("Netflix, Inc. (NFLX) 10-K FY2020 | Item 1A Risk Factors | Risks Related to Privacy Privacy concerns could limit our ability to collect and leverage member personal "
             "information and other data and could adversely impact our business and reputation. If we are unable to "
             "successfully or profitably compete with current and new competitors, our business will be adversely "
             "affected, and we may not be able to increase or maintain market share, revenues or profitability.")
    hit = Hit(chunk_id="c1", score=1.0, rank=1, filing_id="NFLX-2020-10K", page_start=7, page_end=7, chunk_type="prose",
              text=risks, stage="test", section="Item 1A", fiscal_year=2020)
    from finrag_pipeline.core.evaluation.narrative import NarrativeAnswerer

    result = NarrativeAnswerer().answer("What risks does Netflix identify regarding competition?", [hit])
    assert result.text.startswith("If we are unable to successfully or profitably compete")
