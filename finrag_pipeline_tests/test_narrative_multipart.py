"""The narrative answer beyond one sentence: the effect stated after the cause, the second part of a two-part
question, several legal matters, the prose beside a table hit, acronyms and program numbers in the subject,
and the calculator's narrative route reading neighbouring passages. All on real passages of the sample filings.

Facts checked by hand in the sample filings (pages 1-based, as the project's parser reads them):
  AMAZON_2022_10K.pdf  p.23-24 (Item 7): "International sales decreased 8% in 2022, compared to the prior year,
                       primarily due to the impact of changes in foreign currency exchange rates, partially offset
                       by ..." and, two sentences on, "Changes in foreign currency exchange rates reduced
                       International net sales by $15.0 billion in 2022."
  aapl-10-k-2024-11-01.html p.24 (Item 7): "Greater China net sales decreased during 2024 compared to 2023 due
                       primarily to lower net sales of iPhone and iPad. The weakness in the renminbi relative to the
                       U.S. dollar had an unfavorable year-over-year impact on Greater China net sales during 2024."
                       (Japan: "... due primarily to higher net sales of iPhone. The weakness in the yen ...").
                       p.20 (Item 3): Digital Markets Act investigations ("On March 25, 2024, the Commission ..."),
                       the Department of Justice's lawsuit, Epic Games ("On January 16, 2024, the Company implemented
                       a plan to comply with the injunction ...").
  MICROSOFT_2022_10K.pdf p.45: "Search and news advertising revenue excluding traffic acquisition costs increased
                       27% driven by higher revenue per search and search volume."
  APPLE_2022_10K.pdf   p.26: "The year-over-year growth in R&D expense in 2022 was driven primarily by increases in
                       headcount-related expenses and engineering program costs." (the text layer runs the operating
                       expenses table into it) then "The year-over-year growth in selling, general and
                       administrative expense in 2022 was driven primarily by increases in headcount-related
                       expenses, advertising and professional services."; p.25-26 "Products gross margin percentage
                       increased during 2022 compared to 2021 due primarily to a different Products mix, ..." beside
                       the gross margin table of p.26.
  BOEING_2021_10K.pdf  p.29: "Loss from operations decreased by $9,865 million in 2021 compared with 2020 primarily
                       due to lower losses at BCA and higher earnings at BGS."; p.42: "... BDS increased the
                       reach-forward loss on the KC-46A Tanker program by $402 million ..."
"""

from __future__ import annotations

import functools

import pytest
from _analyst_corpus import (
    AMZN,
    APPLE,
    APPLE_2024,
    BOEING,
    MSFT,
    ChunkTable,
    hits_from_chunks,
    parsed_samples,
)

from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.evaluation.answerers import ExtractiveAnswerer, routed_to_narrative
from finrag_pipeline.core.evaluation.narrative import NarrativeAnswerer
from finrag_pipeline.core.question_kind import classify_question
from finrag_pipeline.core.retrieval.answer_sentences import acronym_pattern, read_subject
from finrag_pipeline.core.scoring.answer_contract import key_facts_of
from finrag_pipeline.core.scoring.answer_metrics import key_fact_recall


@functools.lru_cache(maxsize=8)
def _leaves(name: str) -> tuple:
    parsed = parsed_samples()[name]
    return tuple(c for c in chunk_filing(parsed.meta, parsed.pages, parsed.table_rows) if c.is_leaf)


def _prose(name: str, needle: str):
    found = [c for c in _leaves(name) if c.chunk_type == "prose" and needle in " ".join(c.text.split())]
    assert found, f"no prose chunk of {name} holds {needle!r}"
    return found[0]


def _hits(name: str, *needles: str):
    chosen = [_prose(name, n).chunk_id for n in needles]
    hits = sorted(hits_from_chunks(_leaves(name), lambda c: c.chunk_id in chosen), key=lambda h: chosen.index(h.chunk_id))
    for i, h in enumerate(hits, start=1):
        h.rank = i
    return hits



def _quoted(result) -> int:
    """How many sentences an answer quotes."""
    return len(result.details.get("sentences", []))


# ---- the effect stated after the cause: (question, filing, passage, sentences the answer quotes in order) -------
EFFECT_CASES = [
    ("Why did Amazon's International segment sales decline in 2022?", AMZN, "International sales decreased 8% in 2022",
     ["International sales decreased 8% in 2022, compared to the prior year, primarily due to the impact of changes in "
      "foreign currency exchange rates",
      "Changes in foreign currency exchange rates reduced International net sales by $15.0 billion in 2022."]),
    ("Why did Apple's Greater China net sales decrease in FY2024?", APPLE_2024, "Greater China net sales decreased",
     ["Greater China net sales decreased during 2024 compared to 2023 due primarily to lower net sales of iPhone and iPad.",
      "The weakness in the renminbi relative to the U.S. dollar had an unfavorable year-over-year impact on Greater "
      "China net sales during 2024."]),
    # a two-part question: the currency part is the sentence after the cause, about Japan (not Greater China's)
    ("What drove Apple's Japan segment sales in fiscal 2024, and how did currency affect them?", APPLE_2024,
     "Japan net sales increased during 2024",
     ["Japan net sales increased during 2024 compared to 2023 due primarily to higher net sales of iPhone.",
      "The weakness in the yen relative to the U.S. dollar had an unfavorable year-over-year impact on Japan net sales "
      "during 2024."]),
]


@pytest.mark.parametrize(("question", "name", "passage", "quoted"), EFFECT_CASES)
def test_the_effect_stated_after_the_cause_is_quoted_with_it(question, name, passage, quoted):
    result = NarrativeAnswerer().answer(question, _hits(name, passage))
    assert result.response_state == "answered"
    at = [result.text.find(q) for q in quoted]
    assert all(a >= 0 for a in at) and at == sorted(at), result.text
    assert "renminbi" not in result.text or "Greater China" in question     # another region's currency is not quoted
    assert _quoted(result) <= 3


def test_another_regions_currency_effect_is_not_quoted():
    # APPLE_2022_10K.pdf p.25: "Japan net sales decreased during 2022 compared to 2021 due to the weakness of the yen
    # relative to the U.S. dollar." then Rest of Asia Pacific's cause and "The weakness in foreign currencies ... had
    # an unfavorable year-over-year impact on Rest of Asia Pacific net sales during 2022."
    result = NarrativeAnswerer().answer("Why did Apple's Japan net sales decline in FY2022?",
                                        _hits(APPLE, "Japan net sales decreased during 2022"))
    assert result.text.startswith("Japan net sales decreased during 2022 compared to 2021 due to the weakness of the yen "
                                  "relative to the U.S. dollar.")
    assert "impact on Rest of Asia Pacific" not in result.text


def test_the_effect_is_not_added_when_the_next_sentence_is_about_something_else():
    # Apple FY2024 p.24: after Europe's cause comes the Greater China heading and sentence, not Europe's effect
    result = NarrativeAnswerer().answer("Why did Apple's Europe net sales increase in FY2024?",
                                        _hits(APPLE_2024, "Europe net sales increased during 2024"))
    assert result.response_state == "answered"
    assert result.text.startswith("Europe net sales increased during 2024 compared to 2023 due primarily to higher net "
                                  "sales of Services and iPhone.")
    assert "Greater China" not in result.text and _quoted(result) == 1


def test_the_second_part_of_a_question_is_answered_from_its_own_sentence():
    asked = "Which Boeing segment lost the most money in 2021, and why did the company's operating loss shrink versus 2020?"
    result = NarrativeAnswerer().answer(asked, _hits(BOEING, "Loss from operations decreased by $9,865 million"))
    assert result.response_state == "answered" and result.details.get("second_part")
    assert ("Loss from operations decreased by $9,865 million in 2021 compared with 2020 primarily due to lower losses "
            "at BCA and higher earnings at BGS.") in result.text
    assert _quoted(result) <= 3
    reference = ("Commercial Airplanes (loss of $6,475 million); the loss from operations fell by $9,865 million mainly "
                 "due to lower losses at BCA and higher earnings at BGS.")
    assert key_fact_recall(result.text, key_facts_of(reference, asked), asked)[0] >= 0.5


def test_a_second_part_without_its_own_subject_adds_nothing():
    # "... and what drove it?" asks about the first part's subject: no extra sentence from elsewhere
    one = NarrativeAnswerer().answer("What drove Apple's Greater China net sales in FY2024?",
                                     _hits(APPLE_2024, "Greater China net sales decreased"))
    two = NarrativeAnswerer().answer("How did Apple's Greater China net sales change in FY2024, and what drove it?",
                                     _hits(APPLE_2024, "Greater China net sales decreased"))
    assert "second_part" not in two.details and _quoted(two) <= _quoted(one)


# ---- several legal matters ---------------------------------------------------------------------------------
def test_the_main_legal_proceedings_quote_several_matters_each_with_its_page():
    hits = _hits(APPLE_2024, "Digital Markets Act Investigations", "Department of Justice",
                 "implemented a plan to comply with the injunction")
    result = NarrativeAnswerer().answer("What are the main legal proceedings Apple describes in Item 3 of its FY2024 10-K?",
                                        hits)
    assert result.response_state == "answered"
    assert "the Commission announced that it had opened two formal noncompliance investigations" in result.text
    matters = {c[2] for c in result.citations}
    assert len(matters) >= 2 and all(c[1] == 20 for c in result.citations)     # Item 3, p.20, distinct passages
    assert 2 <= _quoted(result) <= 3


def test_a_single_matter_question_quotes_one_matter():
    hits = _hits(APPLE_2024, "Digital Markets Act Investigations", "implemented a plan to comply with the injunction")
    result = NarrativeAnswerer().answer("What did the European Commission open against Apple under the Digital Markets "
                                        "Act in 2024?", hits)
    assert result.response_state == "answered"
    assert len({c[2] for c in result.citations}) == 1


# ---- the subject: acronyms and program numbers -------------------------------------------------------------
@pytest.mark.parametrize(("acronym", "text", "names"), [
    ("TAC", "revenue excluding traffic acquisition costs increased 27%", True),
    ("BGS", "boeing global services earnings from operations increased", True),
    ("TAC", "the accounting change was recorded", False),        # "the" never stands for a letter
    ("TAC", "total cost", False),                                  # one word short
])
def test_an_acronym_names_the_words_it_abbreviates(acronym, text, names):
    assert bool(acronym_pattern(acronym).search(text)) is names


def test_an_acronym_in_the_question_is_named_by_its_spelled_out_words():
    asked = "Why did Microsoft's search and news advertising revenue excluding TAC increase in FY2022?"
    result = NarrativeAnswerer().answer(asked, _hits(MSFT, "excluding traffic acquisition costs increased 27% driven"))
    assert result.response_state == "answered"
    assert result.text.startswith("Search and news advertising revenue excluding traffic acquisition costs increased 27% "
                                  "driven by higher revenue per search and search volume.")
    assert key_fact_recall(result.text, key_facts_of("Higher revenue per search and search volume (up 27% excluding "
                                                     "traffic acquisition costs).", asked), asked)[0] == 1.0


@pytest.mark.parametrize(("question", "numbers"), [
    ("Why did Boeing record a reach-forward loss on the 787 program in 2021?", {"787"}),
    ("What are the main legal matters related to the 737 MAX in 2021?", {"737"}),
    ("How did export controls on the A100 and H100 affect NVIDIA in fiscal 2025?", {"a100", "h100"}),
    ("Why did revenue of $1,234 million fall 12% in 2021?", set()),                # figures and years are no names
])
def test_program_numbers_are_names_of_the_subject(question, numbers):
    subject = read_subject(question, classify_question(question), None, {"boeing", "nvidia"})
    assert {n for n in subject.names if n[-1].isdigit()} == numbers


def test_a_reach_forward_loss_on_another_program_does_not_answer_the_787_question():
    result = NarrativeAnswerer().answer("Why did Boeing record a reach-forward loss on the 787 program in 2021?",
                                        _hits(BOEING, "reach-forward loss on the KC-46A"))
    assert "KC-46A" not in result.text


# ---- a cause that names its own line item is not a continuation; a table run into a sentence is cut -------
def test_a_cause_naming_another_line_item_does_not_take_the_previous_subject():
    asked = "What drove the year-over-year growth in Apple's R&D expense in 2022?"
    answerer = NarrativeAnswerer()
    _, _, sentences = answerer.scored_sentences(asked, _hits(APPLE, "growth in R&D expense in 2022"))
    sga = next(s for s in sentences if "selling, general and administrative expense in 2022" in s.text)
    assert sga.antecedent is None and not sga.answers
    result = answerer.answer(asked, _hits(APPLE, "growth in R&D expense in 2022"))
    assert result.text.startswith("The year-over-year growth in R&D expense in 2022 was driven primarily by increases in "
                                  "headcount-related expenses and engineering program costs.")
    assert "selling, general and administrative" not in result.text


# ---- the prose beside a table hit ----------------------------------------------------------------------------
def test_a_table_row_hit_brings_the_prose_of_its_page():
    leaves = _leaves(APPLE)
    row = next(c for c in leaves if c.chunk_type == "table_row" and c.page_start == 26
               and "Gross margin percentage > Products" in c.text)
    hits = hits_from_chunks(leaves, lambda c: c.chunk_id == row.chunk_id)
    asked = "What explains the increase in Apple's Products gross margin percentage in 2022?"
    assert NarrativeAnswerer().answer(asked, hits).response_state == "insufficient_context"   # the row alone
    result = NarrativeAnswerer(warehouse=ChunkTable(leaves)).answer(asked, hits)
    assert result.response_state == "answered"
    assert result.text.startswith("Products gross margin percentage increased during 2022 compared to 2021 due primarily "
                                  "to a different Products mix")
    assert result.citations[0][1] in (25, 26)


# ---- the calculator's and extractive's narrative route read the neighbouring passages --------------------------
def test_the_narrative_route_reads_neighbouring_passages_with_the_warehouse():
    leaves = _leaves(APPLE_2024)
    cause = _prose(APPLE_2024, "Greater China net sales decreased")
    before = max((c for c in leaves if c.chunk_type == "prose" and c.position < cause.position), key=lambda c: c.position)
    hits = hits_from_chunks(leaves, lambda c: c.chunk_id == before.chunk_id)
    asked = "Why did Apple's Greater China net sales decrease in FY2024?"
    alone = routed_to_narrative(asked, hits, None)
    windowed = routed_to_narrative(asked, hits, None, warehouse=ChunkTable(leaves))
    assert "Greater China net sales decreased during 2024" not in alone.text
    assert windowed.response_state == "answered" and windowed.details["routed_to"] == "narrative"
    assert windowed.text.startswith("Greater China net sales decreased during 2024 compared to 2023 due primarily to "
                                    "lower net sales of iPhone and iPad.")


def test_a_neighbouring_passage_without_a_section_is_read_as_none_not_nan():
    """A passage whose section is NULL in core.chunks (pandas reads a NULL text cell as NaN) is quoted like any other:
    read through records.load_chunks it has section None. Read as NaN it broke the sentence scoring's regexes and the
    answer was a backend_error (9 narrative answers of the demo's evaluation)."""
    import dataclasses

    leaves = _leaves(APPLE_2024)
    cause = _prose(APPLE_2024, "Greater China net sales decreased")
    before = max((c for c in leaves if c.chunk_type == "prose" and c.position < cause.position), key=lambda c: c.position)
    # an Item heading printed in the passage is read against the passage's section (answer_sentences._section_at)
    stored = [dataclasses.replace(c, section=None, text="Item 7. Management's Discussion and Analysis\n" + c.text)
              if c.chunk_id == cause.chunk_id else c for c in leaves]
    hits = hits_from_chunks(leaves, lambda c: c.chunk_id == before.chunk_id)
    result = NarrativeAnswerer(warehouse=ChunkTable(stored)).answer(
        "Why did Apple's Greater China net sales decrease in FY2024?", hits)
    assert result.response_state == "answered"
    assert "Greater China net sales decreased during 2024 compared to 2023" in result.text


def test_the_route_kept_by_an_answerer_reads_each_filing_once_and_answers_as_a_fresh_one():
    """The window reads a filing's passages once per narrative answerer (one warehouse query per question was a
    third of an evaluation's answer time): the extractive answerer keeps its route's answerer."""
    leaves = _leaves(APPLE_2024)
    cause = _prose(APPLE_2024, "Greater China net sales decreased")
    before = max((c for c in leaves if c.chunk_type == "prose" and c.position < cause.position), key=lambda c: c.position)
    hits = hits_from_chunks(leaves, lambda c: c.chunk_id == before.chunk_id)
    asked = ["Why did Apple's Greater China net sales decrease in FY2024?",
             "What drove the decrease in Apple's Greater China net sales in fiscal 2024?"]

    class CountingTable(ChunkTable):
        queries = 0

        def query_df(self, sql, params=None):
            # the passages' reads (the figures' fact store asks for the filing too, once: test_narrative_figures.py)
            CountingTable.queries += "core.chunks" in sql
            return super().query_df(sql, params)

    table = CountingTable(leaves)
    kept = ExtractiveAnswerer(warehouse=table)
    answers = [kept.answer(q, hits) for q in asked]
    assert CountingTable.queries == 1
    fresh = [routed_to_narrative(q, hits, None, warehouse=ChunkTable(leaves)) for q in asked]
    assert [a.text for a in answers] == [a.text for a in fresh]
    assert all(a.text.startswith("Greater China net sales decreased during 2024") for a in answers)


@pytest.mark.parametrize("lazy", ["The change was due to various factors.", "Several legal matters are pending.",
                                  "Currency had an impact."])
def test_lazy_answers_to_two_part_questions_recall_nothing(lazy):
    asked = "What drove Apple's Japan segment sales in fiscal 2024, and how did currency affect them?"
    reference = ("Japan net sales rose 3% to $25,052 million due primarily to higher net sales of iPhone, while the "
                 "weakness in the yen relative to the U.S. dollar had an unfavorable year-over-year impact.")
    assert key_fact_recall(lazy, key_facts_of(reference, asked), asked)[0] == 0.0


# nvda-10-k-2025-02-26.html p.42 (Item 7), as the project's parser reads it (the demo home's core.chunks): the
# operating expenses table runs into the sentence that explains it
NVDA_OPEX = ("Operating Expenses\nYear Ended\nJan 26, 2025 Jan 28, 2024 $ Change % Change\n($ in millions)\n"
             "Research and development expenses 12,914 8,675 4,239 49 %\n% of net revenue 9.9 % 14.2 %\n"
             "Sales, general and administrative expenses 3,491 2,654 837 32 %\n% of net revenue 2.7 % 4.4 %\n"
             "Total operating expenses 16,405 11,329 5,076 45 %\n% of net revenue 12.6 % 18.6 %\n"
             "The increases in research and development expenses for fiscal year 2025 were driven by a 32% increase in "
             "compensation and benefits, including stock-based compensation, reflecting employee growth and compensation "
             "increases, a 100% increase in compute and infrastructure, and a 234% increase in engineering development "
             "costs for new product introductions.")


def test_the_sentence_after_a_table_run_into_it_is_quoted_without_the_table():
    from finrag_pipeline.core.models import Hit

    header = "NVIDIA Corporation (NVDA) 10-K FY2025 | Item 7 Management's Discussion and Analysis | "
    hit = Hit(chunk_id="NVDA-p42", score=1.0, rank=1, filing_id="NVDA-2025-10K", page_start=42, page_end=42,
              chunk_type="prose", text=header + NVDA_OPEX, stage="test", section="Item 7")
    asked = "What drove the increase in NVIDIA's research and development expenses in fiscal 2025?"
    result = NarrativeAnswerer().answer(asked, [hit])
    assert result.response_state == "answered"
    assert result.text.startswith("The increases in research and development expenses for fiscal year 2025 were driven by "
                                  "a 32% increase in compensation and benefits")
    assert "12,914" not in result.text and "% of net revenue" not in result.text
    reference = ("A 32% increase in compensation and benefits, a 100% increase in compute and infrastructure, and a 234% "
                 "increase in engineering development costs for new product introductions (R&D up 49%).")
    recall = key_fact_recall(result.text, key_facts_of(reference, asked), asked)[0]
    assert 0.5 <= recall < 1.0     # the 49% is the table's, not the sentence's


# ---- the year-over-year comparison answers a change; a sentence about other years is not quoted beside it -----
def test_the_year_over_year_comparison_answers_why_the_rate_changed():
    # aapl-10-k-2024-11-01.html: "The Company's effective tax rate for 2024 was higher than the statutory federal
    # income tax rate due primarily to ..." and "The Company's effective tax rate for 2024 was higher compared to 2023
    # due primarily to a one-time income tax charge of $10.2 billion, net, related to the State Aid Decision, ..."
    hits = _hits(APPLE_2024, "higher than the statutory federal income tax rate", "was higher compared to 2023")
    result = NarrativeAnswerer().answer("Why did Apple's tax rate jump in fiscal 2024?", hits)
    assert result.text.startswith("The Company’s effective tax rate for 2024 was higher compared to 2023 due primarily to "
                                  "a one-time income tax charge of $10.2 billion, net, related to the State Aid Decision")


def test_a_second_sentence_about_other_years_is_not_quoted():
    # BOEING_2021_10K.pdf p.28: "Revenues increased by $4,128 million in 2021 compared with 2020 driven by higher
    # revenues at BCA, BDS and BGS." ... "BCA revenues increased by $3,331 million in 2021 compared with 2020 ..." and
    # the same passage's 2020-vs-2019 sentences ("... decreased by ... in 2020 compared with 2019 ...")
    hits = _hits(BOEING, "BCA revenues increased by $3,331 million")
    result = NarrativeAnswerer().answer("What drove the increase in Boeing's revenues in 2021?", hits)
    assert result.text.startswith("Revenues increased by $4,128 million in 2021 compared with 2020 driven by higher "
                                  "revenues at BCA, BDS and BGS.")
    assert "compared with 2019" not in result.text and result.citations[0][1] == 28
