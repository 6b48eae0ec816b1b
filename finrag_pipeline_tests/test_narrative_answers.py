"""Narrative answers to real analysts' phrasings: routing to the 10-K Items, the sentences quoted from real
filing passages, "insufficient context", the neighbouring-passage window, passage ranking by sentences,
and the project's key-fact recall metric on lazy and reworded answers.

Facts checked by hand in the sample filings (physical pages, 1-based, as the project's parser reads them;
finrag_pipeline_tests/data/external/evidence_pages.json holds the Amazon and Microsoft pages):
  APPLE_2022_10K.pdf      p.24 (Item 7): "Services net sales increased during 2022 compared to 2021 due primarily to
                          higher net sales from advertising, cloud services and the App Store."
                          p.26: "Services gross margin percentage increased during 2022 compared to 2021 due primarily
                          to improved leverage and a different Services mix, partially offset by the weakness in
                          foreign currencies relative to the U.S. dollar."
  AMAZON_2022_10K.pdf     p.24 (Item 7): "AWS sales increased 29% in 2022, compared to the prior year. The sales growth
                          primarily reflects increased customer usage, ..." and "The increase in AWS operating income
                          in absolute dollars in 2022, compared to the prior year, is primarily due to increased sales
                          and cost structure productivity, ..."
  MICROSOFT_2022_10K.pdf  p.43 (Item 7): "Gross margin increased $19.8 billion or 17% driven by growth across each of
                          our segments." and "Revenue increased $30.2 billion or 18% driven by growth across each of
                          our segments."
"""

from __future__ import annotations

import functools
import re

import pytest
from _analyst_corpus import AMZN, APPLE, MSFT, ChunkTable, hits_from_chunks, parsed_samples

from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.evaluation.narrative import NarrativeAnswerer
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.question_kind import classify_question, default_question_kinds
from finrag_pipeline.core.retrieval.answer_sentences import prose_vocabulary, read_subject
from finrag_pipeline.core.retrieval.base import Retriever
from finrag_pipeline.core.retrieval.qualitative_routing import QualitativeRoutingRetriever
from finrag_pipeline.core.scoring.answer_contract import key_facts_of
from finrag_pipeline.core.scoring.answer_metrics import key_fact_recall

# ---- real phrasings -> kind, topic and the Item searched first -------------------------------------------
# Phrasings of analysts (the external sets of finrag_pipeline_tests/data/external, FinanceBench's styles and
# the outside set: legal matters, geographies, drivers of a change, customer concentration).
ROUTES = [
    # drivers of a change: the MD&A (Item 7)
    ("What drove the year-over-year growth in Apple's R&D expense in 2021?", "cause", "Item 7"),
    ("Why did Amazon's International segment sales decline in 2022?", "cause", "Item 7"),
    ("What was the main driver of Amazon's other income (expense), net of $(16.8) billion in 2022?", "cause", "Item 7"),
    ("Why did NVIDIA's Graphics segment operating income decrease in fiscal 2025 even though its revenue grew?",
     "cause", "Item 7"),
    ("What explains the increase in Apple's Products gross margin percentage in FY2024?", "cause", "Item 7"),
    ("Why did Amazon's sales and marketing costs decrease in 2024?", "cause", "Item 7"),
    ("What factors contributed to the decline in Intel's operating margin in 2022?", "cause", "Item 7"),
    ("Why was Apple's effective tax rate lower in FY2021 than in FY2020?", "cause", "Item 7"),
    # legal matters: Item 3, then the contingencies note
    ("What are the main legal matters related to the 737 MAX that Boeing discloses in its 2021 10-K?", "legal", "Item 3"),
    ("What are the main legal proceedings Apple describes in Item 3 of its FY2024 10-K?", "legal", "Item 3"),
    ("Is Johnson & Johnson facing significant litigation over talc?", "legal", "Item 3"),
    ("Which antitrust investigations does Microsoft disclose?", "legal", "Item 3"),
    # risks: Item 1A
    # the effect of a named matter: the MD&A, the risk factors, the business section's regulation
    ("How have U.S. export controls affected NVIDIA's business, according to its FY2025 10-K?", "impact", "Item 7"),
    ("How did the pandemic impact Boeing's commercial airplane deliveries in 2021?", "impact", "Item 7"),
    ("What production risk affected Boeing's 787 program in 2021?", "risk", "Item 1A"),
    ("What are the key uncertainties Pfizer highlights for its business?", "risk", "Item 1A"),
    # customer concentration: the notes (Item 8), then Item 1A
    ("Who are Nvidia's largest customers?", "customers", "Item 8"),
    ("Who are Apple's major customers?", "customers", "Item 8"),
    ("How concentrated is Costco's customer base?", "customers", "Item 8"),
    # geographies and segments: the segment and revenue notes (Item 8)
    ("Which geographies does Amazon operate in?", "geography", "Item 8"),
    ("Which international markets does Nike sell in?", "geography", "Item 8"),
    ("Which of Amazon's segments was profitable in 2022, and which ones lost money?", "segments", "Item 8"),
    ("List the reportable segments of 3M.", "segments", "Item 8"),
]


@pytest.mark.parametrize("question,topic,first_item", ROUTES)
def test_real_phrasings_route_to_the_items_that_answer_them(question, topic, first_item):
    route = classify_question(question)
    assert route.kind == "qualitative"
    assert topic in route.topics
    assert route.sections[0] == first_item


@pytest.mark.parametrize("question", [
    "How much did Microsoft spend on R&D in fiscal 2022?",
    "By what percentage did Apple's R&D expense grow in FY2022 compared with FY2021? Round to one decimal place.",
    "Does Apple have a healthy liquidity profile based on its quick ratio at the end of FY2022?",
    "What is Amazon's FY2022 capex as a % of revenue?",
    # a choice made by comparing figures, and a yes/no judgement on customer concentration: the calculator's
    "In which regions does Nike generate most of its revenue?",
    "Does Apple rely on a small number of customers or resellers for most of its sales?",
])
def test_figure_and_judgement_phrasings_stay_metric(question):
    assert classify_question(question).kind == "metric"


# ---- the narrative answerer on real passages ----------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _chunks() -> dict[str, list]:
    parsed = parsed_samples()
    return {name: [c for c in chunk_filing(parsed[name].meta, parsed[name].pages, parsed[name].table_rows) if c.is_leaf]
            for name in (APPLE, AMZN, MSFT)}


def _chunk(name: str, needle: str):
    found = [c for c in _chunks()[name] if c.chunk_type == "prose" and needle in " ".join(c.text.split())]
    assert found, f"no prose chunk of {name} holds {needle!r}"
    return found[0]


def _hits(name: str, *needles: str) -> list[Hit]:
    chosen = [_chunk(name, n) for n in needles]
    order = {c.chunk_id: i for i, c in enumerate(chosen)}
    hits = sorted(hits_from_chunks(_chunks()[name], lambda c: c.chunk_id in order), key=lambda h: order[h.chunk_id])
    for i, h in enumerate(hits, start=1):
        h.rank = i
    return hits


SERVICES_Q = "What drove Apple's Services net sales growth in fiscal 2022?"
SERVICES_REF = "Higher net sales from advertising, cloud services and the App Store."
SERVICES_SENTENCE = ("Services net sales increased during 2022 compared to 2021 due primarily to higher net sales from "
                     "advertising, cloud services and the App Store.")


def test_apple_fy2022_services_drivers_are_quoted_with_their_page():
    hits = _hits(APPLE, "Services gross margin percentage increased", "Services net sales increased during 2022")
    result = NarrativeAnswerer().answer(SERVICES_Q, hits)
    assert result.response_state == "answered"
    assert result.text.startswith(SERVICES_SENTENCE)
    assert not re.match(r"\s*\$?[\d,.]+", result.text)           # a cause question never gets a bare figure
    assert (hits[1].filing_id, 24, hits[1].chunk_id) in result.citations
    assert key_fact_recall(result.text, key_facts_of(SERVICES_REF, SERVICES_Q), SERVICES_Q)[0] == 1.0


def test_aws_earning_more_reads_operating_income_not_sales():
    """"earn more" is how analysts say it; the filing prints "operating income" (question_kinds.yaml phrasings)."""
    hits = _hits(AMZN, "AWS sales increased 29% in 2022", "The increase in AWS operating income in absolute dollars")
    asked = "Why did Amazon's AWS segment earn more in 2022?"
    subject = read_subject(asked, classify_question(asked), NarrativeAnswerer().vocabularies, {"amazon"})
    assert "earn more" in [g[0] for g in subject.groups]
    result = NarrativeAnswerer().answer(asked, hits)
    assert result.response_state == "answered"
    assert result.text.startswith("The increase in AWS operating income in absolute dollars in 2022")
    assert "increased sales and cost structure productivity" in result.text
    assert "increased customer usage" not in result.text


def test_gross_profit_is_read_as_the_gross_margin_the_filing_prints():
    hits = _hits(MSFT, "Revenue increased $30.2 billion or 18%")   # one passage holds both sentences (p.43)
    asked = "What explains the growth in Microsoft's gross profit in fiscal 2022?"
    result = NarrativeAnswerer().answer(asked, hits)
    assert result.response_state == "answered"
    assert result.text.startswith("Gross margin increased $19.8 billion or 17% driven by growth across each of our "
                                  "segments.")
    assert [c[1] for c in result.citations] == [43]


def test_insufficient_context_when_the_passages_do_not_answer():
    # the Services passages say nothing of Greater China
    hits = _hits(APPLE, "Services gross margin percentage increased", "Services net sales increased during 2022")
    result = NarrativeAnswerer().answer("Why did Apple's Greater China net sales rise in fiscal 2022?", hits)
    assert result.response_state == "insufficient_context"
    assert result.text.startswith("Insufficient context") and result.citations == []


# ---- the window: a passage's neighbours are read at answer time ---------------------------------------------


def test_the_window_reads_the_passage_after_the_hit():
    chunks = _chunks()[APPLE]
    cause = _chunk(APPLE, "Services net sales increased during 2022")
    before = next(c for c in chunks if c.chunk_type == "prose" and c.position < cause.position
                  and "Services net sales increased during 2022" not in " ".join(c.text.split())
                  and c.position == max(p.position for p in chunks if p.chunk_type == "prose"
                                        and p.position < cause.position))
    hits = hits_from_chunks(chunks, lambda c: c.chunk_id == before.chunk_id)
    alone = NarrativeAnswerer(window=1).answer(SERVICES_Q, hits)             # no warehouse: the hit alone
    assert SERVICES_SENTENCE not in alone.text
    windowed = NarrativeAnswerer(warehouse=ChunkTable(chunks), window=1).answer(SERVICES_Q, hits)
    assert windowed.response_state == "answered" and windowed.text.startswith(SERVICES_SENTENCE)
    assert (cause.filing_id, 24, cause.chunk_id) in windowed.citations
    assert NarrativeAnswerer(warehouse=ChunkTable(chunks), window=0).answer(SERVICES_Q, hits).text == alone.text


def test_a_neighbour_without_a_fiscal_year_is_read_as_none_not_nan():
    """A NULL fiscal year comes back from DuckDB through pandas as NaN in a numeric column: the window's hit
    must carry None (NaN breaks sorting and equality, and int(NaN) raises)."""
    import dataclasses

    chunks = [dataclasses.replace(c, fiscal_year=None) if c.chunk_type == "prose" else c for c in _chunks()[APPLE]]
    cause = next(c for c in chunks if "Services net sales increased during 2022" in " ".join(c.text.split()))
    before = max((c for c in chunks if c.chunk_type == "prose" and c.position < cause.position),
                 key=lambda c: c.position)
    hits = hits_from_chunks(chunks, lambda c: c.chunk_id == before.chunk_id)
    table = ChunkTable(chunks)   # table rows keep their year: a numeric column, NULL read back as NaN
    year = table.query_df("SELECT fiscal_year FROM core.chunks WHERE chunk_id = ?", [cause.chunk_id])["fiscal_year"][0]
    assert isinstance(year, float) and year != year
    read = NarrativeAnswerer(warehouse=table, window=1)._with_neighbours(hits)
    neighbours = [h for h in read if h.stage == "window"]
    assert cause.chunk_id in {h.chunk_id for h in neighbours}
    assert all(h.fiscal_year is None for h in neighbours)


# ---- passages ranked by their best sentence (qualitative_sentences) ---------------------------------------

def test_passage_relevance_prefers_the_passage_stating_the_cause():
    hits = _hits(AMZN, "AWS sales increased 29% in 2022", "The increase in AWS operating income in absolute dollars")
    relevance = NarrativeAnswerer().passage_relevance("Why did Amazon's AWS segment earn more in 2022?", hits)
    assert hits[0].chunk_id != hits[1].chunk_id     # the two sentences sit in two passages of p.24
    assert relevance[hits[1].chunk_id] > relevance[hits[0].chunk_id]
    assert all(0.0 <= v <= 1.0 for v in relevance.values())


class _FixedBase(Retriever):
    def __init__(self, hits: list[Hit]):
        self.hits = hits

    def _retrieve(self, query, k, filters, timings, info):
        return [Hit(**{**h.__dict__}) for h in self.hits][:k]


def _hit(cid: str, score: float, text: str) -> Hit:
    return Hit(chunk_id=cid, score=score, rank=0, filing_id="F", page_start=1, page_end=1, chunk_type="prose",
               text=text, stage="test", section="Item 7")


def test_sentence_weight_hand_computed():
    question = "Why did widget sales increase in 2022?"
    top = _hit("mentions", 1.0, "Widget sales were $5 million in 2022 and $4 million in 2021, as the table shows.")
    cause = _hit("cause", 0.8, "Widget sales increased in 2022 due primarily to higher volumes in Europe.")
    scorer = NarrativeAnswerer()
    rel = scorer.passage_relevance(question, [top, cause])
    # the cause sentence names the subject (widget, sales) and leads with it, and carries "due primarily to"
    # (cue weight 3 + 1 >= 4): (1 + 0.5 x 1 + 0.5 x 4/4) / 2 = 1.0; the other names the subject without a cue
    # of the asked topic: (1 + 0.5 x 1 + 0) / 2 x 0.5 = 0.375
    assert rel == {"cause": pytest.approx(1.0), "mentions": pytest.approx(0.375)}
    # spread 1.0 - 0.8 = 0.2; both in Item 7 (section 0.5 x 1), prose 0.1, sentences 1.0 x relevance:
    #   mentions 1.0 + 0.2 x (0.5 + 0.1 + 0.375) = 1.195; cause 0.8 + 0.2 x (0.5 + 0.1 + 1.0) = 1.12
    #   with sentence_weight 2: mentions 1.0 + 0.2 x (0.6 + 0.75) = 1.27; cause 0.8 + 0.2 x (0.6 + 2.0) = 1.32
    plain = QualitativeRoutingRetriever(_FixedBase([top, cause]), expand=False).retrieve(question, 2)
    assert [h.chunk_id for h in plain.hits] == ["mentions", "cause"]
    one = QualitativeRoutingRetriever(_FixedBase([top, cause]), expand=False, sentence_weight=1.0).retrieve(question, 2)
    assert [round(h.score, 3) for h in one.hits] == [1.195, 1.12]
    two = QualitativeRoutingRetriever(_FixedBase([top, cause]), expand=False, sentence_weight=2.0).retrieve(question, 2)
    assert [h.chunk_id for h in two.hits] == ["cause", "mentions"]
    assert [round(h.score, 3) for h in two.hits] == [1.32, 1.27]


def test_phrasings_expand_the_search_only_when_configured():
    routed = QualitativeRoutingRetriever(_FixedBase([]))
    asked = "Why did Amazon's North America segment earn more in 2024?"
    route = classify_question(asked)
    assert "operating income" not in routed.expanded_query(asked, route)
    assert "operating income" in QualitativeRoutingRetriever(_FixedBase([]), phrasings=True).expanded_query(asked, route)
    assert prose_vocabulary(default_question_kinds()) is not None


def test_qualitative_sentences_builds_from_the_yaml():
    from finrag_pipeline.core.retrieval.config import load_retrievers

    cfg = load_retrievers()["qualitative_sentences"]
    assert cfg.type == "qualitative_routed" and cfg.phrasings and cfg.sentence_weight > 0
    # the existing configuration keeps its behaviour
    old = load_retrievers()["qualitative_routed"]
    assert not old.phrasings and old.sentence_weight == 0.0


# ---- key-fact recall (the project's metric) on lazy and reworded narrative answers ---------------------------

@pytest.mark.parametrize("lazy", [
    SERVICES_Q,                                                              # the question echoed
    "Services net sales increased in fiscal 2022 due to various factors.",
    # a real sentence of the same filing that does not answer (p.26, the margin's cause)
    "Services gross margin percentage increased during 2022 compared to 2021 due primarily to improved leverage and "
    "a different Services mix.",
    "",
])
def test_lazy_answers_recall_no_key_fact_and_a_paraphrase_recalls_all(lazy):
    facts = key_facts_of(SERVICES_REF, SERVICES_Q)
    assert len(facts) >= 2
    assert key_fact_recall(lazy, facts, SERVICES_Q)[0] == 0.0
    paraphrase = "Growth came from advertising, the App Store and cloud services, whose net sales were higher."
    assert key_fact_recall(paraphrase, facts, SERVICES_Q)[0] == 1.0


# ---- what the text layer does to sentences ----------------------------------------------------------------

def _page_hit(text: str, page: int, filing: str = "NVDA-2025-10K", rank: int = 1) -> Hit:
    """A prose hit with the chunk's context header, as the chunker writes it (the company is read from it)."""
    header = "NVIDIA Corporation (NVDA) 10-K FY2025 | Item 7 Management's Discussion and Analysis | "
    return Hit(chunk_id=f"{filing}-p{page}-{rank}", score=1.0, rank=rank, filing_id=filing, page_start=page,
               page_end=page, chunk_type="prose", text=header + text, stage="test", section="Item 7")


# nvda-10-k-2025-02-26.html p.42 (Item 7), as the project's parser reads it
NVDA_GROSS_MARGIN = ("Gross Profit and Gross Margin Gross profit consists of total net revenue less cost of revenue. "
                     "Gross margins increased to 75.0% in fiscal year 2025 from 72.7% in fiscal year 2024. The year over "
                     "year increase was primarily driven by a higher mix of Data Center revenue.")


def test_a_cause_that_refers_back_is_quoted_with_the_sentence_it_continues():
    asked = "What drove NVIDIA's gross margin expansion in fiscal 2025?"
    result = NarrativeAnswerer().answer(asked, [_page_hit(NVDA_GROSS_MARGIN, 42)])
    assert result.response_state == "answered"
    assert result.text.startswith("Gross margins increased to 75.0% in fiscal year 2025 from 72.7% in fiscal year 2024. "
                                  "The year over year increase was primarily driven by a higher mix of Data Center "
                                  "revenue.")
    reference = "A higher mix of Data Center revenue (75.0% vs 72.7% in fiscal 2024)."
    assert key_fact_recall(result.text, key_facts_of(reference, asked), asked)[0] == 1.0
    # the anaphoric sentence alone, without what it refers to, answers nothing
    alone = NarrativeAnswerer().answer(asked, [_page_hit("The year over year increase was primarily driven by a higher "
                                                         "mix of Data Center revenue.", 42)])
    assert alone.response_state == "insufficient_context"


def test_the_page_header_run_into_a_sentence_is_not_quoted():
    hits = _hits(AMZN, "International sales decreased 8% in 2022")
    result = NarrativeAnswerer().answer("Why did Amazon's International segment sales decline in 2022?", hits)
    assert result.response_state == "answered"
    assert result.text.startswith("International sales decreased 8% in 2022, compared to the prior year, primarily due "
                                  "to the impact of changes in foreign currency exchange rates")


def test_a_sentence_about_another_segment_does_not_answer():
    # APPLE_2022_10K.pdf p.26: the Services margin sentence names the margin but not the asked Products
    hits = _hits(APPLE, "Services gross margin percentage increased")
    result = NarrativeAnswerer().answer("What drove the increase in Apple's Wearables gross margin percentage in 2022?",
                                        hits)
    assert result.response_state == "insufficient_context"
