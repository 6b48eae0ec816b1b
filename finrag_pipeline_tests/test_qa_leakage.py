"""Phrasing leakage (core/qa/leakage.py) on hand-computed examples."""

import pytest

from finrag_pipeline.core.analyst.lexicon import Lexicon
from finrag_pipeline.core.models import Chunk, EvidencePlace, Page, QAItem
from finrag_pipeline.core.qa.leakage import (
    LeakageSettings,
    annotate_leakage,
    content_words,
    lexicon_words,
    question_leakage,
)

LEXICON = Lexicon.from_mapping({"concepts": {
    "revenue": {"aliases": ["top line", "net sales"], "line_items": ["total net sales"]},
    "gross_profit": {"aliases": ["gross margin"]},
}})


def test_content_words_are_the_bm25_stems_without_filler_numbers_or_periods():
    assert content_words("What was Apple's total net sales in FY2022 (in USD millions)?") == {
        "appl", "total", "net", "sale"}
    assert content_words("How much, in Q4 2022 or 1.5x, did it grow?") == {"grow"}
    assert lexicon_words(LEXICON) == {"top", "line", "net", "sale", "total", "gross", "margin"}


@pytest.mark.parametrize(("question", "evidence", "score", "evidence_share", "lexicon_share", "band", "shared"), [
    # C = {appl, total, net, sale}; E = {total, net, sale}; all three are lexicon words: 3/4
    ("What was Apple's total net sales in FY2022?", "Total net sales 394,328 365,817", 0.75, 0.75, 0.75, "high",
     ("net", "sale", "total")),
    # C = {big, appl, top, line, fiscal}; nothing of C in E; {top, line} in the lexicon: 0/5, lexicon 2/5
    ("How big was Apple's top line in fiscal 2022?", "Total net sales 394,328 365,817", 0.0, 0.0, 0.4, "low", ()),
    # C = {appl, gross, margin, trend, across, servic}; E = {servic, gross, margin}; L ∩ C = {gross, margin}
    ("Apple gross margin trend across services", "Services gross margin 56,054 47,710", 2 / 6, 3 / 6, 2 / 6,
     "medium", ("gross", "margin")),
])
def test_question_leakage_hand_computed(question, evidence, score, evidence_share, lexicon_share, band, shared):
    leak = question_leakage(question, [evidence], lexicon_words(LEXICON))
    assert leak.score == pytest.approx(score)
    assert leak.evidence_share == pytest.approx(evidence_share)
    assert leak.lexicon_share == pytest.approx(lexicon_share)
    assert leak.band == band and leak.shared_words == shared and leak.reason is None


def test_not_computable_is_none_with_a_reason_never_low():
    vocab = lexicon_words(LEXICON)
    unanswerable = question_leakage("What was Apple's FY2023 guidance?", [], vocab)
    assert unanswerable.score is None and unanswerable.band is None and "no evidence" in unanswerable.reason
    empty = question_leakage("What was it in 2022?", ["Total net sales 1"], vocab)
    assert empty.score is None and empty.reason == "question has no content words"


@pytest.mark.parametrize(("score", "band"), [(0.0, "low"), (0.199, "low"), (0.2, "medium"), (0.399, "medium"),
                                             (0.4, "high"), (1.0, "high"), (None, None)])
def test_band_edges(score, band):
    assert LeakageSettings().band(score) == band


def test_band_thresholds_must_be_ordered():
    with pytest.raises(ValueError, match="low_below"):
        LeakageSettings(low_below=0.5, high_from=0.3)


def test_annotate_uses_evidence_chunks_and_page_text_for_page_only_places():
    fid = "AAPL-2022-10K"
    chunk = Chunk(chunk_id="c1", filing_id=fid, ticker=None, company="Apple", fiscal_year=2022, form_type="10-K",
                  section=None, page_start=32, page_end=32, chunk_type="table_row",
                  text="Total net sales 394,328 365,817")
    page = Page(fid, 34, "Gross margin 170,782 152,836", None, None)
    item = QAItem("q1", fid, "Apple total net sales and gross margin", "x", "metric",
                  evidence=[[EvidencePlace("c1", 32, fid)], [EvidencePlace(None, 34, fid)]])
    none = QAItem("q2", fid, "Apple FY2023 guidance", "n/a", "unanswerable")
    annotate_leakage([item, none], [chunk], [page], lexicon=LEXICON)
    # C = {appl, total, net, sale, gross, margin}; E = chunk + page words; shared = all but appl: 5/6
    assert item.metadata["leakage"]["score"] == pytest.approx(5 / 6)
    assert item.metadata["leakage"]["band"] == "high"
    assert item.metadata["leakage"]["shared_words"] == ["gross", "margin", "net", "sale", "total"]
    assert none.metadata["leakage"]["score"] is None and none.metadata["leakage"]["band"] is None
