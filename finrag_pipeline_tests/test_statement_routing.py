"""Statement routing, the analyst vocabulary and formula decomposition on the hand-written analyst
questions (finrag_pipeline_tests/data/external/analyst_questions.jsonl). Fast: no index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finrag_pipeline.core.analyst.lexicon import Lexicon
from finrag_pipeline.core.analyst.vocabulary import AnalystVocabulary, VocabularyFile, default_vocabulary
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.retrieval.config import RetrieverConfig, load_retrievers
from finrag_pipeline.core.retrieval.decomposed import decompose, round_robin
from finrag_pipeline.core.retrieval.statement_routing import named_statements, statements_asked

EXTERNAL = Path(__file__).parent / "data/external/analyst_questions.jsonl"
QUESTIONS = {q["financebench_id"]: q["question"] for q in map(json.loads, EXTERNAL.read_text().splitlines())}


@pytest.fixture(scope="module")
def lexicon():
    return Lexicon.load_default()


@pytest.mark.parametrize(("text", "keys", "added"), [
    ("What was Apple's capex in fiscal 2021?", ["capex"], "purchases of property and equipment"),
    ("How much D&A did Boeing record in 2021?", ["d_and_a"], "depreciation and amortization"),
    ("What was Amazon's top line in 2024?", ["top_line"], "total net sales"),
    ("Amazon's SG&A and COGS in 2022", ["sga", "cogs"], "cost of sales"),
    ("net PP&E and the bottom line", ["ppe", "bottom_line"], "property plant and equipment net"),
    ("What was EBIT and FCF?", ["ebit", "fcf"], "operating income"),
    ("What did Apple say about capexx plans?", [], None),      # whole words only
])
def test_vocabulary_matches_and_expands(text, keys, added):
    vocab = default_vocabulary()
    assert [m.key for m in vocab.match(text)] == keys
    expanded = vocab.expand(text)
    if added is None:
        assert expanded == text
    else:
        assert expanded.startswith(text) and added in expanded


def test_vocabulary_rejects_unknown_statement():
    with pytest.raises(ValueError, match="statement"):
        AnalystVocabulary(VocabularyFile.model_validate(
            {"terms": {"x": {"terms": ["x"], "expansions": ["y"], "statement": "notes"}}}))


@pytest.mark.parametrize(("text", "expected"), [
    ("Using the cash flow statement, what was capex?", ["cash_flow"]),
    ("per the consolidated statements of cash flows", ["cash_flow"]),
    ("shown in the balance sheet", ["balance_sheet"]),
    ("from the statement of financial position", ["balance_sheet"]),
    ("in its P&L", ["income_statement"]),
    ("the statements of operations and the balance sheet", ["income_statement", "balance_sheet"]),
    ("What drove services growth?", []),
])
def test_named_statements(text, expected):
    assert named_statements(text) == expected


@pytest.mark.parametrize(("qid", "expected"), [
    ("analyst_001", ["income_statement"]),                    # "Using the income statement"
    ("analyst_002", ["income_statement", "balance_sheet"]),   # revenue / average PP&E
    ("analyst_003", ["cash_flow"]),                           # names the cash flow statement
    ("analyst_005", ["cash_flow"]),                           # D&A: analyst vocabulary only
    ("analyst_013", ["balance_sheet"]),                       # current ratio
    ("analyst_028", ["income_statement"]),                    # top line
    ("analyst_044", ["cash_flow"]),                           # capex
    ("analyst_011", []),                                      # geographic segments: no statement
])
def test_statements_asked_on_analyst_questions(lexicon, qid, expected):
    assert statements_asked(QUESTIONS[qid], lexicon, default_vocabulary()) == expected


# (question id, formula from the fact layer's planner, [(statement, inputs)] per search)
DECOMPOSITIONS = [
    ("analyst_002", "revenue / avg(ppe)", [("income_statement", ["revenue"]), ("balance_sheet", ["ppe"])]),
    ("analyst_003", "abs(capital_expenditure) / revenue",
     [("income_statement", ["revenue"]), ("cash_flow", ["capital_expenditure"])]),
    ("analyst_004", "operating_cash_flow - abs(capital_expenditure)",  # capex is the amount paid
     [("cash_flow", ["operating_cash_flow", "capital_expenditure"])]),
    ("analyst_009", "cost_of_revenue / avg(inventory)",
     [("income_statement", ["cost_of_revenue"]), ("balance_sheet", ["inventory"])]),
    ("analyst_013", "total_current_assets / total_current_liabilities",
     [("balance_sheet", ["total_current_assets", "total_current_liabilities"])]),
    ("analyst_017", "accounts_receivable / revenue * 365",  # "year-end receivables / FY2022 revenue x 365"
     [("balance_sheet", ["accounts_receivable"]), ("income_statement", ["revenue"])]),
    ("analyst_022", "cost_of_revenue / avg(inventory)",
     [("income_statement", ["cost_of_revenue"]), ("balance_sheet", ["inventory"])]),
    ("analyst_037", "accounts_receivable / revenue * 365",  # the question's own "(year-end receivables / ... x 365)"
     [("balance_sheet", ["accounts_receivable"]), ("income_statement", ["revenue"])]),
    ("analyst_045", "operating_income / revenue", [("income_statement", ["operating_income", "revenue"])]),
    # growth of one line item: one search, scoped to its statement
    ("analyst_008", "revenue", [("income_statement", ["revenue"])]),
    # "what share of its revenue did Microsoft spend on capex": capex as a percentage of revenue
    ("analyst_018", "abs(capital_expenditure) / revenue",
     [("income_statement", ["revenue"]), ("cash_flow", ["capital_expenditure"])]),
]


@pytest.mark.parametrize(("qid", "formula", "groups"), DECOMPOSITIONS, ids=[d[0] for d in DECOMPOSITIONS])
def test_decomposes_metric_questions(lexicon, qid, formula, groups):
    got_formula, got = decompose(QUESTIONS[qid], lexicon)
    assert got_formula == formula
    assert [(g.statement, g.inputs) for g in got] == groups
    assert all(g.labels for g in got)  # every search has printed line items to look for


@pytest.mark.parametrize("qid", [
    "analyst_010",   # capex: one line item
    "analyst_024",   # capex "in its cash flow statement": the statement's name is not the line item "cash"
    "analyst_047",   # same
    "analyst_028",   # top line: one line item
    "analyst_006",   # "what drove ... gross margin": narrative, not a computation
    "analyst_039",   # same
    "analyst_011",   # no quantity at all
])
def test_non_metric_questions_pass_through(lexicon, qid):
    assert decompose(QUESTIONS[qid], lexicon)[1] == []


def _hit(cid: str, page: int) -> Hit:
    return Hit(chunk_id=cid, score=1.0, rank=0, filing_id="F", page_start=page, page_end=page,
               chunk_type="table_row", text=cid, stage="x")


def test_round_robin_puts_every_inputs_best_chunk_in_top_k():
    income = [_hit(f"is{i}", 31) for i in range(5)]
    balance = [_hit("is0", 31), _hit("bs0", 33), _hit("bs1", 33)]
    fused = round_robin([income, balance], ["income_statement", "balance_sheet"], 3)
    # balance's first hit duplicates income's: its next unseen chunk takes the slot
    assert [h.chunk_id for h in fused] == ["is0", "bs0", "is1"]
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)
    assert round_robin([[], []], ["a", "b"], 5) == []


def test_retrievers_yaml_routes_and_decomposes():
    named = load_retrievers()
    assert named["hybrid_rrf_routed"].statement_mode == "boost"
    assert named["decomposed"].type == "decomposed" and named["decomposed"].base == "hybrid_rrf"
    with pytest.raises(ValueError):
        RetrieverConfig(type="bm25", statement_mode="prefer")


# --- the routing stage around a fixed base ranking (row texts as printed in Apple's FY2022 and FY2021 10-Ks) ---

from datetime import date  # noqa: E402

from finrag_pipeline.core.models import Chunk, SearchFilters  # noqa: E402
from finrag_pipeline.core.query_understanding import CorpusCatalog  # noqa: E402
from finrag_pipeline.core.retrieval.base import Retriever, hit_from_chunk  # noqa: E402
from finrag_pipeline.core.retrieval.resources import ChunkStore, RetrievalResources  # noqa: E402
from finrag_pipeline.core.retrieval.statement_routing import StatementRoutingRetriever  # noqa: E402

ROWS = [  # (chunk id, filing, fiscal year, page, statement_type, text), in the base ranking's order
    ("mdna", "AAPL-2022-10K", 2022, 26, None, "Apple 10-K FY2022 | Item 7 | capital expenditures were ..."),
    ("ppe_note", "AAPL-2022-10K", 2022, 44, "other",
     "Apple 10-K FY2022 | Property, Plant and Equipment, Net | Total property, plant and equipment, net | 2022: 42,117"),
    ("cf_2021", "AAPL-2021-10K", 2021, 35, "cash_flow", "Apple 10-K FY2021 | Consolidated Statements of Cash Flows | "
     "Payments for acquisition of property, plant and equipment | 2021: (11,085)"),
    ("cf_2022", "AAPL-2022-10K", 2022, 36, "cash_flow", "Apple 10-K FY2022 | Consolidated Statements of Cash Flows | "
     "Payments for acquisition of property, plant and equipment | 2022: (10,708)"),
    ("bs_2022", "AAPL-2022-10K", 2022, 34, "balance_sheet", "Apple 10-K FY2022 | Consolidated Balance Sheets | "
     "Property, plant and equipment, net | September 24, 2022: 42,117"),
    ("risk", "AAPL-2022-10K", 2022, 11, None, "Apple 10-K FY2022 | Item 1A Risk Factors | outsourcing partners ..."),
]


def _chunk(cid, filing, year, page, statement, text):
    return Chunk(chunk_id=cid, filing_id=filing, ticker="AAPL", company="Apple Inc.", fiscal_year=year,
                 form_type="10-K", section=None, page_start=page, page_end=page,
                 chunk_type="prose" if statement is None else "table_row", text=text,
                 metadata={} if statement is None else {"statement_type": statement})


class FixedRanking(Retriever):
    """The base: always the same ranking (scores 1.0, 0.9, ...), and the query it was asked."""

    def __init__(self, chunks):
        self.chunks = chunks
        self.queries = []

    def _retrieve(self, query, k, filters, timings, info):
        self.queries.append(query)
        return [hit_from_chunk(c, 1.0 - 0.1 * i, "fixed") for i, c in enumerate(self.chunks)][:k]


@pytest.fixture
def routed():
    chunks = [_chunk(*row) for row in ROWS]
    catalog = CorpusCatalog([{"filing_id": "AAPL-2022-10K", "ticker": "AAPL", "company": "Apple Inc.",
                              "fiscal_year": 2022, "period_end_date": date(2022, 9, 24)},
                             {"filing_id": "AAPL-2021-10K", "ticker": "AAPL", "company": "Apple Inc.",
                              "fiscal_year": 2021, "period_end_date": date(2021, 9, 25)}])
    resources = RetrievalResources(chunk_store=ChunkStore(chunks), catalog=catalog, lexicon=Lexicon.load_default())
    base = FixedRanking(chunks)
    return base, StatementRoutingRetriever(base, resources, boost=1.0, covering_years=0)


@pytest.mark.parametrize(("question", "first", "statements"), [
    # capex lives on the cash-flow statement; the asked period picks the FY2022 filing's row
    ("What was Apple's capex in fiscal 2022?", "cf_2022", ["cash_flow"]),
    ("What was Apple's capex in fiscal 2021?", "cf_2021", ["cash_flow"]),
    # the balance sheet named in words wins over the note's PP&E table
    ("Per the balance sheet, what was Apple's net PP&E at the end of fiscal 2022?", "bs_2022", ["balance_sheet"]),
    # no statement asked: the base ranking is kept
    ("What risks does Apple describe for fiscal 2022?", "mdna", []),
])
def test_routing_stage_boosts_the_asked_statement_in_the_asked_period(routed, question, first, statements):
    base, retriever = routed
    result = retriever.retrieve(question, 3)
    assert result.info["statements"] == statements
    assert result.hits[0].chunk_id == first
    if statements:
        assert result.hits[0].stage_scores["statement_boost"] == pytest.approx(1.0 * 0.5)  # boost x score range
        other_year = {"cf_2022": "cf_2021", "cf_2021": "cf_2022"}.get(first)
        if other_year:  # the same statement in the other year's filing gets no bonus
            ranked = retriever.retrieve(question, 5).hits
            assert next(h for h in ranked if h.chunk_id == other_year).stage_scores["statement_boost"] == 0.0


def test_routing_expands_analyst_words_and_keeps_the_callers_scope(routed):
    base, retriever = routed
    hits = retriever.search("How much capex did Apple report?", 5, SearchFilters(filing_ids=("AAPL-2022-10K",)))
    assert "purchases of property and equipment" in base.queries[-1]   # from analyst_vocabulary.yaml
    assert hits[0].chunk_id in {"cf_2022", "cf_2021"}                  # no period asked: any year's row
