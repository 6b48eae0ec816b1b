"""Choice questions (core/qa/choice_questions.py) on the sample filings, references checked by hand, and
the scoring rule that credits only ONE committed option (answer_metrics.choice_of / direction_of).

Hand-read figures (physical pages of the PDFs, USD millions, fiscal year of the filing unless said):
  APPLE_2022_10K p.25 net sales by region: Americas 169,658; Europe 95,118; Greater China 74,200; Japan 25,977;
      Rest of Asia Pacific 29,375 (total 394,328) -> highest Americas, lowest Japan
  MICROSOFT_2022_10K p.44 revenue by segment: Productivity and Business Processes 63,364; Intelligent Cloud
      75,251; More Personal Computing 59,655 (total 198,270) -> highest Intelligent Cloud, lowest MPC
  AMAZON_2022_10K p.24 operating income by segment: North America (2,847); International (7,746); AWS 22,841
      (consolidated 12,248) -> highest AWS (no "lowest": the least of two losses reads two ways)
  BOEING_2021_10K p.28 revenues: Commercial Airplanes 19,493; Defense, Space & Security 26,540; Global
      Services 16,328; Boeing Capital 272 (total 62,286) -> highest BDS, lowest Boeing Capital
  AMAZON_2022_10K p.37 operating income 24,879 (2021) -> 12,248 (2022): lower
  MICROSOFT_2022_10K p.57 total revenue 168,088 (FY2021) -> 198,270 (FY2022): higher
  BOEING_2021_10K p.62 total assets 152,136 (2020) -> 138,552 (2021): lower
  MICROSOFT_2022_10K p.57 operating margin 83,383 / 198,270 = 42.06% (FY2022) vs 69,916 / 168,088 = 41.59%
      (FY2021): higher in FY2022, lower in FY2021
  MICROSOFT_2022_10K p.59 current ratio 169,684 / 95,082 = 1.78 (FY2022) vs 184,406 / 88,657 = 2.08 (FY2021)
  APPLE_2022_10K p.32 effective tax rate 19,300 / 119,103 = 16.2% < 21% statutory: lower
  MICROSOFT_2022_10K p.60 cash from operations 89,035 vs p.57 net income 72,738: higher (two pages)
  AMAZON_2022_10K p.39 current ratio 146,791 / 155,393 = 0.94 < 1.0: lower
"""

from __future__ import annotations

from collections import Counter

import pytest
from _analyst_corpus import AMZN, APPLE, APPLE_2024, BOEING, MSFT, parsed_samples

from finrag_pipeline.core.chunking.chunker import chunk_filing
from finrag_pipeline.core.models import QAItem
from finrag_pipeline.core.qa.config import QAConfig
from finrag_pipeline.core.qa.model_free import generate_model_free
from finrag_pipeline.core.scoring.answer_contract import contract_options
from finrag_pipeline.core.scoring.answer_metrics import AnswerKey, correctness, direction_of, score_answer

ALL_CHOICES = QAConfig.model_validate({"max_questions_per_type": {"choice": 60}})


@pytest.fixture(scope="module")
def generated():
    parsed = parsed_samples()
    out = {}
    for name in (MSFT, APPLE, AMZN, BOEING, APPLE_2024):
        p = parsed[name]
        chunks = chunk_filing(p.meta, p.pages, p.table_rows)
        items, log = generate_model_free(p.meta, p.pages, p.table_rows, p.facts, chunks, ALL_CHOICES)
        out[name] = ([i for i in items if i.question_type == "choice"], log, chunks, p.pages)
    return out


def _find(generated, name, template, **meta) -> list[QAItem]:
    return [i for i in generated[name][0] if i.metadata["template"] == template
            and all(i.metadata.get(k) == v for k, v in meta.items())]


def _score(item: QAItem, answer: str) -> tuple[float | None, bool]:
    v = correctness(answer, question=item.question, answer_choice=item.answer_choice,
                    choice_options=contract_options(item), inputs=item.answer_figures)
    return v.correct, v.non_committal


SEGMENTS = [
    (APPLE, "revenue", {"Americas": 169658, "Europe": 95118, "Greater China": 74200, "Japan": 25977,
                        "Rest of Asia Pacific": 29375}, {25}),
    (MSFT, "revenue", {"Productivity and Business Processes": 63364, "Intelligent Cloud": 75251,
                       "More Personal Computing": 59655}, {44}),
    (AMZN, "operating_income", {"North America": -2847, "International": -7746, "AWS": 22841}, {24}),
    (BOEING, "revenue", {"Commercial Airplanes": 19493, "Defense, Space & Security": 26540,
                         "Global Services": 16328, "Boeing Capital": 272}, {28}),
]


@pytest.mark.parametrize("name, concept, values, pages", SEGMENTS)
def test_which_segment_references(generated, name, concept, values, pages):
    items = [i for i in _find(generated, name, "choice_segment", line_item=concept)
             if set(i.metadata["choice_options"]) == set(values)]
    assert len(items) == 1, [(i.metadata["choice_options"], i.question) for i in _find(generated, name, "choice_segment")]
    item = items[0]
    want = item.metadata["extreme"]
    expected = (max if want == "highest" else min)(values, key=values.get)
    assert item.answer_choice == expected
    if min(values.values()) < 0:
        assert want == "highest"       # never "the least" among losses
    # every option is named in the question, each component is one evidence group on the table's page
    assert all(o in item.question for o in values)
    assert {round(f["value"]) for f in item.answer_figures} == set(values.values())
    assert len(item.evidence) == len(values) and {g[0].page for g in item.evidence} == pages
    assert _score(item, item.reference_answer) == (1.0, False)


@pytest.mark.parametrize("name, concept, cur, prev, choice, page", [
    (AMZN, "operating_income", 12248, 24879, "lower", 37),
    (MSFT, "revenue", 198270, 168088, "higher", 57),
    (BOEING, "total_assets", 138552, 152136, "lower", 62),
])
def test_rise_or_fall_references(generated, name, concept, cur, prev, choice, page):
    [item] = _find(generated, name, "choice_direction", line_item=concept)
    assert item.answer_choice == choice and item.metadata["choice_options"] == ["higher", "lower"]
    assert [round(f["value"]) for f in item.answer_figures] == [cur, prev]
    assert {g[0].page for g in item.evidence} == {page}
    assert _score(item, item.reference_answer) == (1.0, False)


@pytest.mark.parametrize("name, metric, values, pages", [
    (MSFT, "operating_margin", {"FY2022": 83383 / 198270, "FY2021": 69916 / 168088}, {57}),
    (MSFT, "current_ratio", {"FY2022": 169684 / 95082, "FY2021": 184406 / 88657}, {59}),
    (APPLE, "gross_margin_pct", {"FY2022": 170782 / 394328, "FY2021": 152836 / 365817}, {32}),
])
def test_which_year_references(generated, name, metric, values, pages):
    [item] = _find(generated, name, "choice_year", metric=metric)
    want = item.metadata["direction"]
    assert item.answer_choice == (max if want == "higher" else min)(values, key=values.get)
    assert set(item.metadata["choice_options"]) == set(values)
    assert "fiscal 2022" in item.question and "fiscal 2021" in item.question and " as " in item.question
    assert len(item.evidence) == 4 and {g[0].page for g in item.evidence} == pages   # 2 inputs x 2 years
    assert _score(item, item.reference_answer) == (1.0, False)


@pytest.mark.parametrize("name, a, choice, pages, shown", [
    (APPLE, "effective_tax_rate", "lower", {32}, "16.2%"),
    (MSFT, "operating_cash_flow", "higher", {57, 60}, "$89,035 million"),
    (AMZN, "current_ratio", "lower", {39}, "0.94"),
])
def test_higher_or_lower_than_references(generated, name, a, choice, pages, shown):
    [item] = [i for i in _find(generated, name, "choice_pair") if i.metadata["pair"][0] == a]
    assert item.answer_choice == choice and shown in item.reference_answer
    assert {g[0].page for g in item.evidence} == pages
    assert item.metadata["multi_page"] == (len(pages) > 1)
    assert _score(item, item.reference_answer) == (1.0, False)


def test_every_choice_item_rewards_only_one_committed_option(generated):
    """Over every generated choice item: the reference scores 1; naming every option, both directions,
    a hedge or the wrong option scores 0 (the first three as non-committal)."""
    n = 0
    for name, (items, _, _chunks, _pages) in generated.items():
        assert len(items) >= QAConfig().cap("choice"), (name, len(items))   # enough for the default mix
        assert {i.metadata["template"] for i in items} >= {"choice_segment", "choice_direction", "choice_year"}, name
        for item in items:
            options = contract_options(item)
            assert item.answer_choice in options and len(options) >= 2
            assert _score(item, item.reference_answer) == (1.0, False), (item.question, item.reference_answer)
            wrong = next(o for o in options if o != item.answer_choice)
            everything = " and ".join(options) if options[0] != "higher" else "higher or lower"
            assert _score(item, everything) == (0.0, True), (item.question, everything)
            assert _score(item, f"Either {options[0]} or {options[1]}") == (0.0, True)
            assert _score(item, wrong if wrong != "lower" else "It fell.")[0] == 0.0
            n += 1
    assert n >= 50


def test_evidence_pages_state_every_compared_figure(generated):
    from finrag_pipeline.core.numbers import figure_in_text

    for _name, (items, _, chunks, pages) in generated.items():
        text = {p.page_number: p.text for p in pages}
        by_id = {c.chunk_id: c for c in chunks}
        for item in items:
            figs = [f for f in item.answer_figures if f.get("role") == "source"]
            assert len(figs) == len(item.evidence), item.question
            for fig, group in zip(figs, item.evidence, strict=True):
                assert group
                for place in group:
                    assert figure_in_text(fig["value"], text[place.page], fig["scale"], fig["text"]), \
                        (item.question, fig, place.page)
                    assert place.chunk_id in by_id


def test_choice_questions_use_analyst_words_not_the_lexicon(generated):
    from finrag_pipeline.core.qa.phrasing import load_phrasing

    vocab = load_phrasing()
    words = {w.lower() for ws in vocab.line_items.values() for w in ws}
    words |= {n.lower() for m in vocab.metrics.values() for n in m.name}
    items = [i for its, *_ in generated.values() for i in its if i.metadata["template"] != "choice_segment"]
    assert all(any(w in i.question.lower() for w in words) for i in items)


def test_default_mix_includes_choice_and_is_seeded():
    parsed = parsed_samples()
    p = parsed[MSFT]
    chunks = chunk_filing(p.meta, p.pages, p.table_rows)
    a, log = generate_model_free(p.meta, p.pages, p.table_rows, p.facts, chunks, QAConfig())
    b, _ = generate_model_free(p.meta, p.pages, p.table_rows, p.facts, chunks, QAConfig())
    counts = Counter(i.question_type for i in a)
    assert counts["choice"] == QAConfig().cap("choice") == 5
    chosen = [i for i in a if i.question_type == "choice"]
    # round-robin: the five cover every template before a second of any
    assert len({i.metadata["template"] for i in chosen}) == 4
    assert [i.qa_id for i in a] == [i.qa_id for i in b]


# ------------------------------------------------------------------------------------------------
# Adversarial answers, table-driven (the scoring rule itself)

SEG_Q = ("Among Services; iPhone; Mac; Wearables, Home and Accessories; and iPad, which had the smallest "
         "revenue at Apple in fiscal 2022?")
SEG_OPTS = ["iPhone", "Mac", "iPad", "Wearables, Home and Accessories", "Services"]
RISE_Q = "Did Apple's top line rise or fall in fiscal 2022 compared with fiscal 2021?"
PAIR_Q = "Was Microsoft's operating cash flow higher or lower than its net earnings in fiscal 2022?"
YEAR_Q = "In which year was Microsoft's EBIT margin lower, fiscal 2022 or fiscal 2021?"


@pytest.mark.parametrize("question, options, choice, answer, expected", [
    # committed and right
    (SEG_Q, SEG_OPTS, "iPad", "iPad", (1.0, False)),
    (SEG_Q, SEG_OPTS, "iPad", "iPhone brought the most, iPad the least.", (1.0, False)),
    (SEG_Q, SEG_OPTS, "iPad", "iPad had the smallest, $29,292 million, below Mac at $40,177 million.", (1.0, False)),
    (RISE_Q, ["higher", "lower"], "higher", "It rose 7.8%, from $365,817 million to $394,328 million.", (1.0, False)),
    (RISE_Q, ["higher", "lower"], "higher", "Revenue in 2021 was lower than in 2022.", (1.0, False)),
    (PAIR_Q, ["higher", "lower"], "higher", "Net earnings were lower than operating cash flow.", (1.0, False)),
    (PAIR_Q, ["higher", "lower"], "higher", "Higher: $89,035 million vs $72,738 million.", (1.0, False)),
    (YEAR_Q, ["FY2022", "FY2021"], "FY2021", "Fiscal 2021 had the lower margin (41.6% vs 42.1%).", (1.0, False)),
    (SEG_Q.replace("Services; iPhone", "More Personal Computing; iPhone"), ["More Personal Computing", "iPad"], "iPad",
     "iPad had the smallest revenue; More Personal Computing is not an Apple line.", (1.0, False)),
    # every candidate, both directions, a hedge: non-committal, 0
    (SEG_Q, SEG_OPTS, "iPad", "iPhone, Mac, iPad, Wearables, Home and Accessories and Services", (0.0, True)),
    (SEG_Q, SEG_OPTS, "iPad", "Either iPad or Mac.", (0.0, True)),
    (SEG_Q, SEG_OPTS, "iPad", "iPad had the smallest. Mac had the smallest.", (0.0, True)),
    (RISE_Q, ["higher", "lower"], "higher", "Higher or lower.", (0.0, True)),
    (RISE_Q, ["higher", "lower"], "higher", "It rose, then fell.", (0.0, True)),
    (RISE_Q, ["higher", "lower"], "higher", "Possibly higher.", (0.0, True)),
    (RISE_Q, ["higher", "lower"], "higher", "Revenue was $394,328 million.", (0.0, True)),
    (YEAR_Q, ["FY2022", "FY2021"], "FY2021", "Fiscal 2022 and fiscal 2021.", (0.0, True)),
    # two years and no comparison word: a list, not a choice (strict on purpose: lazy answers look like this)
    (YEAR_Q, ["FY2022", "FY2021"], "FY2021", "Fiscal 2021 (41.6% vs 42.1% in fiscal 2022).", (0.0, True)),
    (YEAR_Q, ["FY2022", "FY2021"], "FY2021", YEAR_Q, (0.0, True)),    # an echo names both years
    # committed and wrong
    (SEG_Q, SEG_OPTS, "iPad", "Wearables, Home and Accessories", (0.0, False)),
    (RISE_Q, ["higher", "lower"], "higher", "It did not rise; it fell.", (0.0, False)),
    (RISE_Q, ["higher", "lower"], "higher", "2022 revenue was lower than 2021 revenue.", (0.0, False)),
    (PAIR_Q, ["higher", "lower"], "higher", "Operating cash flow was lower than net earnings.", (0.0, False)),
])
def test_adversarial_choice_answers(question, options, choice, answer, expected):
    v = correctness(answer, question=question, answer_choice=choice, choice_options=options)
    assert (v.correct, v.non_committal) == expected, v.reason


def test_direction_words_and_negation():
    assert direction_of("Revenue increased.", RISE_Q)[0] == "higher"
    assert direction_of("It wasn't higher.", RISE_Q)[0] == "lower"
    assert direction_of("Lower", RISE_Q)[0] == "lower"
    assert direction_of("The answer is 42.", RISE_Q) == (None, "states no direction (higher/lower, rose/fell)")


def test_score_answer_on_a_choice_item_counts_non_committal():
    key = AnswerKey(question=SEG_Q, answer_choice="iPad", choice_options=SEG_OPTS,
                    gold_page_groups=[[("AAPL-2022-10K", 24)]])
    metrics, notes = score_answer(answer=", ".join(SEG_OPTS), response_state="answered",
                                  citations=[("AAPL-2022-10K", 24, None)], cited_texts=["iPad | 2022: 29,292"], key=key)
    assert metrics["correctness"] == 0.0 and metrics["non_committal"] == 1.0
    metrics, _ = score_answer(answer="iPad", response_state="answered", citations=[("AAPL-2022-10K", 24, None)],
                              cited_texts=["iPad | 2022: 29,292"], key=key)
    assert metrics["correctness"] == 1.0 and metrics["non_committal"] == 0.0
