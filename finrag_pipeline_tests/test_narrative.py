"""Qualitative questions: the question-kind rule, the ``narrative`` answerer on real 10-K pages, the
routing of the calculator and the extractive answerer, and the ``qualitative_routed`` retriever.

Facts checked by hand in the sample PDFs (physical page numbers, 1-based; the text as the project's
parser reads it):
  APPLE_2021_10K.pdf      p.24 (printed 21, Item 7): "Services net sales increased during 2021 compared to 2020
                          due primarily to higher net sales from advertising, the App Store and cloud services."
                          p.23: "Total net sales increased 33% or $91.3 billion during 2021 compared to 2020,
                          driven by growth in all Products and Services categories."
                          p.25: "Japan net sales increased during 2021 compared to 2020 due primarily to higher net
                          sales of iPhone and Services." (then "Rest of Asia Pacific net sales increased ...")
  APPLE_2022_10K.pdf      p.26 (Item 7): "Services gross margin percentage increased during 2022 compared to 2021
                          due primarily to improved leverage and a different Services mix, partially offset by
                          the weakness in foreign currencies relative to the U.S. dollar."
                          p.20 (printed 17, Item 3, which the page-level section detection files under Item 1A):
                          "Epic Games, Inc. (“Epic”) filed a lawsuit ... alleging violations of federal and state
                          antitrust laws ..."
  MICROSOFT_2022_10K.pdf  p.46 (Item 7): "Research and development expenses increased $3.8 billion or 18% driven by
                          investments in cloud engineering, Gaming, and LinkedIn."
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from _analyst_corpus import APPLE, MSFT, hits_from_chunks, parsed_samples

from finrag_pipeline.core.analyst.vocabulary import AnalystVocabulary, VocabularyFile
from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.evaluation.answerer_registry import build_answerer
from finrag_pipeline.core.evaluation.answerers import ExtractiveAnswerer
from finrag_pipeline.core.evaluation.narrative import NarrativeAnswerer
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR
from finrag_pipeline.core.question_kind import QuestionKinds, classify_question
from finrag_pipeline.core.retrieval.base import Retriever
from finrag_pipeline.core.retrieval.qualitative_routing import QualitativeRoutingRetriever
from finrag_pipeline.core.scoring.response_states import NON_ANSWER_STATES

APPLE_2021 = "APPLE_2021_10K.pdf"

# ---- the question-kind rule ----------------------------------------------------------------------

# (question, kind, first topic) -- phrasings of the issue, of the external analyst set and of FinanceBench
KINDS = [
    ("What drove the increase in Apple's Services net sales in FY2021?", "qualitative", "cause"),
    ("What drove the expansion of Apple's services gross margin percentage in 2022?", "qualitative", "cause"),
    ("Why did Apple's tax rate jump in fiscal 2024?", "qualitative", "cause"),
    ("What explains the growth in Microsoft's gross profit in fiscal 2022?", "qualitative", "cause"),
    ("Which of Apple's geographic segments grew fastest in fiscal 2021, and what drove it?", "qualitative", "cause"),
    ("What are the major risks to NVIDIA's business?", "qualitative", "risk"),
    ("Which risks does Boeing cite about the 737 MAX?", "qualitative", "risk"),
    ("What legal proceedings is Apple involved in?", "qualitative", "legal"),
    ("Has Boeing reported any material litigation?", "qualitative", "legal"),
    ("Who does Apple depend on as its largest customers?", "qualitative", "customers"),
    ("Who are Nvidia's largest customers?", "qualitative", "customers"),
    ("Which geographies does Amazon operate in?", "qualitative", "geography"),
    ("Which of Amazon's segments was profitable in 2022, and which ones lost money?", "qualitative", "segments"),
    ("Describe Microsoft's competition in cloud services.", "qualitative", "business"),
    ("By what percentage did Microsoft's net income grow in FY2022 compared with FY2021?", "metric", None),
    ("How much did Microsoft spend on R&D in fiscal 2022?", "metric", None),
    ("What was Apple's operating margin for fiscal 2022?", "metric", None),
    ("What was Apple's Greater China net sales in 2021?", "metric", None),
    ("What is the FY2019 fixed asset turnover ratio for Activision Blizzard?", "metric", None),
    ("Which segment contributed the most to Amazon's operating profit in 2024?", "metric", None),
    ("What percentage of Nvidia revenue came from its largest customer in FY2025?", "metric", None),
    ("What was the total amount of legal settlements accrued?", "metric", None),
    ("How many employees does Apple have?", "metric", None),
    # yes/no judgements about a financial measure are the calculator's, even when they ask to explain why
    ("Does Adobe have an improving operating margin profile as of FY2022? If operating margin is not a useful "
     "metric for a company like this, then state that and explain why.", "metric", None),
    ("Is Walmart a capital-intensive business based on FY2021 data?", "metric", None),
    ("Does 3M have a reasonably healthy liquidity profile based on its quick ratio for FY2022? If the quick "
     "ratio is not relevant to measure liquidity, please state that and explain why.", "metric", None),
    ("Is CVS a high-growth company based on its revenue growth from FY2019 to FY2020?", "metric", None),
    ("Did PepsiCo's free cash flow cover its dividends in 2020?", "metric", None),
    ("Does Apple have customer concentration?", "metric", None),   # a judgement: the shares decide it
    ("Does Boeing have positive working capital based on FY2021 data? If working capital is not a useful or "
     "relevant metric for a company like this, then please state that and explain why.", "metric", None),
    # an instruction sentence does not make a figure question a cause question
    ("What is Boeing's FY2021 gross margin? If gross margin is not a useful metric for a company like this, "
     "state that and explain why.", "metric", None),
    ("What drove Boeing's revenue decline in 2020? Answer in one sentence.", "qualitative", "cause"),
    # "based on" is no geography; "based in" is
    ("Which regions does Nike sell in, based on its FY2020 10-K?", "qualitative", "geography"),
    ("Where is Oracle based?", "qualitative", "geography"),
]


@pytest.mark.parametrize("question,kind,topic", KINDS)
def test_question_kind_rule(question, kind, topic):
    route = classify_question(question)
    assert route.kind == kind
    assert (route.topics[0] if route.topics else None) == topic
    if kind == "qualitative":
        assert route.sections and all(re.match(r"Item \d+[A-C]?$", s) for s in route.sections)
    else:
        assert route.sections == ()


def test_cause_questions_route_to_the_mdna_and_legal_ones_to_item_3():
    assert classify_question("Why did Amazon's North America segment earn more in 2024?").sections[0] == "Item 7"
    assert classify_question("What lawsuits is Apple facing?").sections[0] == "Item 3"
    assert classify_question("What are the main risk factors?").sections[0] == "Item 1A"


def test_question_kinds_file_is_validated(tmp_path):
    bad_item = tmp_path / "kinds.yaml"
    bad_item.write_text("metric_cues: ['how much']\nopen_forms: ['^which']\n"
                        "topics: {cause: {patterns: ['why'], sections: ['MD&A']}}\n")
    with pytest.raises(ValueError, match="sections must be 10-K Items"):
        QuestionKinds.load(bad_item)
    bad_regex = tmp_path / "kinds2.yaml"
    bad_regex.write_text("metric_cues: ['how (much']\nopen_forms: ['^which']\n"
                         "topics: {cause: {patterns: ['why'], sections: ['Item 7']}}\n")
    with pytest.raises(ValueError, match="invalid pattern"):
        QuestionKinds.load(bad_regex)


# ---- the narrative answerer on real pages ---------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _chunks() -> dict[str, tuple[list, dict[int, str]]]:
    """File -> (leaf chunks, page texts) of three sample filings (Apple FY2021 parsed here)."""
    from finrag_pipeline.core.ingest.parse import parse_filing

    parsed = dict(parsed_samples())
    parsed[APPLE_2021] = parse_filing(SAMPLE_FILINGS_DIR / APPLE_2021)
    out = {}
    for name in (APPLE_2021, APPLE, MSFT):
        p = parsed[name]
        out[name] = ([c for c in chunk_filing(p.meta, p.pages, p.table_rows) if c.is_leaf],
                     {pg.page_number: " ".join(pg.text.split()) for pg in p.pages})
    return out


def _hits(name: str, *needles: str) -> list[Hit]:
    """Hits for the prose chunks holding each needle, in the needles' order (a distractor first)."""
    chunks, _ = _chunks()[name]
    chosen = []
    for needle in needles:
        found = [c for c in chunks if c.chunk_type == "prose" and needle in " ".join(c.text.split())]
        assert found, f"no chunk of {name} holds {needle!r}"
        chosen.append(found[0])
    order = {c.chunk_id: i for i, c in enumerate(chosen)}
    hits = sorted(hits_from_chunks(chunks, lambda c: c.chunk_id in order), key=lambda h: order[h.chunk_id])
    for i, h in enumerate(hits, start=1):
        h.rank = i
    return hits


def key_fact_recall(answer: str, key_facts: list[tuple[str, ...]]) -> float:
    """Share of the key facts the answer states (each fact: alternative wordings). A test-side stand-in
    for the key-fact recall metric of the scoring branch (to reconcile on merge)."""
    text = " ".join(re.sub(r"[^a-z0-9&% ]", " ", answer.lower()).split())
    return sum(any(" ".join(alt.lower().split()) in text for alt in fact) for fact in key_facts) / len(key_facts)


SERVICES_FACTS = [("advertising",), ("app store",), ("cloud",)]


def test_services_cause_is_quoted_with_its_page_not_the_total():
    """The issue's example: the calculator answered "$68,425M"; the cause is on p.24."""
    hits = _hits(APPLE_2021, "Total net sales increased 33%", "Services net sales increased during 2021")
    result = NarrativeAnswerer().answer("What drove the increase in Apple's Services net sales in FY2021?", hits)
    assert result.response_state == "answered"
    assert "due primarily to higher net sales from advertising, the App Store and cloud services" in result.text
    assert not result.text.startswith("Total net sales")  # the Services sentence leads, not the total's
    fid = hits[0].filing_id
    assert (fid, 24, hits[1].chunk_id) in result.citations
    assert "Services net sales increased during 2021" in _chunks()[APPLE_2021][1][24]
    assert key_fact_recall(result.text, SERVICES_FACTS) == 1.0


def test_services_gross_margin_cause_keeps_its_offset():
    hits = _hits(APPLE, "Products gross margin increased during 2022", "Services gross margin percentage increased")
    result = NarrativeAnswerer().answer(
        "What drove the expansion of Apple's services gross margin percentage in 2022?", hits)
    assert result.response_state == "answered"
    assert "improved leverage and a different Services mix, partially offset by the weakness in foreign currencies" \
        in result.text
    assert [c[1] for c in result.citations] == [26]


def test_research_and_development_cause_and_the_vocabulary(tmp_path):
    hits = _hits(MSFT, "Sales and marketing expenses increased", "Research and development expenses increased $3.8")
    asked = "What drove the increase in Microsoft's research and development expenses in fiscal 2022?"
    result = NarrativeAnswerer().answer(asked, hits)
    assert "driven by investments in cloud engineering, Gaming, and LinkedIn" in result.text
    assert "Sales and marketing" not in result.text
    # "R&D" is the same subject when the analyst vocabulary says so (the file the calc branch extends)
    vocab = AnalystVocabulary(VocabularyFile.model_validate(
        {"terms": {"rnd": {"terms": ["R&D"], "expansions": ["research and development"]}}}))
    abbreviated = NarrativeAnswerer(vocabulary=vocab).answer(
        "What drove the increase in Microsoft's R&D spending in fiscal 2022?", hits)
    assert abbreviated.response_state == "answered"
    assert "cloud engineering, Gaming, and LinkedIn" in abbreviated.text


def test_the_next_region_is_not_quoted_as_a_second_cause():
    # APPLE_2021_10K.pdf p.25: "Japan net sales increased during 2021 compared to 2020 due primarily to higher net
    # sales of iPhone and Services." followed by the Rest of Asia Pacific sentence in the same passage
    hits = _hits(APPLE_2021, "Japan net sales increased during 2021")
    result = NarrativeAnswerer().answer("Why did Apple's Japan net sales rise in fiscal 2021?", hits)
    assert "Japan net sales increased during 2021 compared to 2020 due primarily to higher net sales of iPhone and " \
           "Services." in result.text
    assert "Rest of Asia Pacific" not in result.text and "Japan Japan" not in result.text
    assert [c[1] for c in result.citations] == [25]


def test_legal_question_quotes_the_lawsuit():
    hits = _hits(APPLE, "The number of claims, legal proceedings and government investigations", "Epic Games, Inc.")
    result = NarrativeAnswerer().answer("What legal proceedings is Apple involved in?", hits)
    assert result.response_state == "answered"
    assert "filed a lawsuit" in result.text and "antitrust" in result.text
    assert [c[1] for c in result.citations] == [20]


def test_unrelated_question_is_insufficient_context():
    hits = _hits(APPLE_2021, "Total net sales increased 33%", "Services net sales increased during 2021")
    result = NarrativeAnswerer().answer("What drove the change in the boiling point of mercury on Mars in 2021?", hits)
    assert result.response_state == "insufficient_context"
    assert result.response_state in NON_ANSWER_STATES
    assert result.citations == [] and result.text.startswith("Insufficient context")
    assert NarrativeAnswerer().answer("What drove the increase in Apple's Services net sales?", []).response_state \
        == "no_evidence"


@pytest.mark.parametrize("lazy", [
    "What drove the increase in Apple's Services net sales in FY2021?",          # the question restated
    "Services net sales increased in fiscal 2021 due to various factors.",
    "The increase was driven by several factors, partially offset by others.",
    "",
])
def test_lazy_narratives_score_zero_and_a_reworded_answer_scores_one(lazy):
    assert key_fact_recall(lazy or " ", SERVICES_FACTS) == 0.0
    assert key_fact_recall("Growth came from advertising, App Store and cloud revenue.", SERVICES_FACTS) == 1.0


# ---- routing: no bare figure for a qualitative question -----------------------------------------

def test_calculator_and_extractive_route_qualitative_questions_to_the_narrative():
    from finrag_pipeline.core.analyst.store import FactStore
    from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer

    parsed = parsed_samples()
    calc = calculator_answerer(FactStore.from_parsed([parsed[APPLE]]))
    hits = _hits(APPLE, "Products gross margin increased during 2022", "Services gross margin percentage increased")
    asked = "What drove the expansion of Apple's services gross margin percentage in 2022?"
    for answerer in (calc, ExtractiveAnswerer(), build_answerer("narrative")):
        result = answerer.answer(asked, hits)
        assert result.response_state == "answered"
        assert "different Services mix" in result.text
        assert not re.match(r"\s*\$?[\d,.]+\s*(?:%|million|billion)", result.text)  # no figure first
    # a metric question still gets the calculator's figure (Apple FY2022 p.32: 170,782 / 394,328 = 43.3%)
    metric = calc.answer("What was Apple's total gross margin percentage in fiscal 2022?", [])
    assert metric.response_state == "answered" and metric.text.startswith("43.3%")
    assert metric.details.get("routed_to") is None
    # the example: without evidence the routed answer abstains instead of printing "$68,425M"
    routed = calc.answer("What drove the increase in Apple's Services net sales in FY2022?", [])
    assert routed.response_state == "no_evidence" and routed.details["routed_to"] == "narrative"


# ---- the qualitative_routed retriever --------------------------------------------------------------

class _FixedBase(Retriever):
    """A base retriever that returns fixed hits and records the queries it was asked."""

    def __init__(self, hits: list[Hit]):
        self.hits, self.queries = hits, []

    def _retrieve(self, query, k, filters, timings, info):
        self.queries.append(query)
        return [Hit(**{**h.__dict__}) for h in self.hits][:k]


def _hit(cid: str, score: float, section: str, chunk_type: str = "prose") -> Hit:
    return Hit(chunk_id=cid, score=score, rank=0, filing_id="F", page_start=1, page_end=1, chunk_type=chunk_type,
               text=cid, stage="test", section=section)


def test_section_routing_hand_computed():
    # spread 1.0 - 0.5 = 0.5; cause -> (Item 7, Item 8); bonus = spread x (0.5 x section weight + 0.1 if prose)
    #   item8_row  1.0 + 0.5 x (0.5 x 0.75)     = 1.1875
    #   item7_text 0.9 + 0.5 x (0.5 x 1.0 + 0.1) = 1.2
    #   item1a     0.5 + 0.5 x 0.1               = 0.55
    base = _FixedBase([_hit("item8_row", 1.0, "Item 8", "table_row"), _hit("item7_text", 0.9, "Item 7"),
                       _hit("item1a", 0.5, "Item 1A")])
    routed = QualitativeRoutingRetriever(base, expand=False)
    result = routed.retrieve("What drove the increase in Apple's Services net sales in FY2021?", 3)
    assert [h.chunk_id for h in result.hits] == ["item7_text", "item8_row", "item1a"]
    assert [round(h.score, 4) for h in result.hits] == [1.2, 1.1875, 0.55]
    assert result.info["question_kind"]["topics"] == ["cause"]


def test_metric_question_passes_through_and_qualitative_is_searched_expanded():
    hits = [_hit("a", 1.0, "Item 8", "table_row"), _hit("b", 0.9, "Item 7")]
    base = _FixedBase(hits)
    routed = QualitativeRoutingRetriever(base)
    metric = routed.retrieve("What was Apple's operating margin for fiscal 2022?", 2)
    assert [h.chunk_id for h in metric.hits] == ["a", "b"] and [h.score for h in metric.hits] == [1.0, 0.9]
    assert base.queries == ["What was Apple's operating margin for fiscal 2022?"]
    routed.retrieve("What legal proceedings is Apple involved in?", 2)
    assert len(base.queries) == 3 and "litigation" in base.queries[-1]


def test_each_kind_goes_to_its_own_base_and_names_are_abbreviated():
    from finrag_pipeline.core.retrieval.qualitative_routing import acronyms

    metric_base, prose_base = _FixedBase([_hit("row", 1.0, "Item 8", "table_row")]), _FixedBase([_hit("p", 1.0, "Item 7")])
    routed = QualitativeRoutingRetriever(metric_base, qualitative_base=prose_base)
    routed.retrieve("What was Boeing's total revenue in 2021?", 3)
    routed.retrieve("Why did Boeing Global Services become more profitable in 2021?", 3)
    assert metric_base.queries == ["What was Boeing's total revenue in 2021?"]
    assert len(prose_base.queries) == 2 and " BGS " in prose_base.queries[1] + " "
    assert acronyms("What drove Amazon Web Services growth?") == ["AWS"]
    assert acronyms("What drove the increase in Apple's Services net sales?") == []


def test_retriever_builds_from_the_yaml():
    from finrag_pipeline.core.retrieval.config import load_retrievers

    cfg = load_retrievers()["qualitative_routed"]
    assert cfg.type == "qualitative_routed" and cfg.base == "decomposed_routed"
    assert Path(__file__).resolve().parents[1].joinpath("assets_config", "question_kinds.yaml").exists()
