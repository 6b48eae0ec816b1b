"""Company-first corpus search: resolution by common name, ticker, former name and none; the stage
searches the resolved filings first and fills from the corpus; the runner scores the resolution."""

from __future__ import annotations

import pytest
from _retrieval_fakes import chunk, fake_resources

from finrag_pipeline.core.evaluation.runner import EvalMatrix, run_retrieval_eval
from finrag_pipeline.core.models import EvidencePlace, QAItem, SearchFilters
from finrag_pipeline.core.query_understanding import CorpusCatalog, QueryParser
from finrag_pipeline.core.retrieval import build_retriever
from finrag_pipeline.core.retrieval.company_first import resolution_outcome, resolve_company_filings

# Block files without a ticker (its 10-K cover gave none): the company map gives "Square" (former name)
# and SQ (former ticker); Meta's former name Facebook and ticker FB; Walmart's "Wal-Mart Stores".
CATALOG = CorpusCatalog([
    {"filing_id": "BLOCK-2023-10K", "ticker": None, "company": "Block, Inc.", "fiscal_year": 2023,
     "period_end_date": "2023-12-31", "cik": "1512673"},
    {"filing_id": "META-2023-10K", "ticker": "META", "company": "Meta Platforms, Inc.", "fiscal_year": 2023,
     "period_end_date": "2023-12-31"},
    {"filing_id": "WMT-2023-10K", "ticker": "WMT", "company": "Walmart Inc.", "fiscal_year": 2023,
     "period_end_date": "2023-01-31"},
    {"filing_id": "WMT-2024-10K", "ticker": "WMT", "company": "Walmart Inc.", "fiscal_year": 2024,
     "period_end_date": "2024-01-31"},
    {"filing_id": "MSFT-2022-10K", "ticker": "MSFT", "company": "MICROSOFT CORP", "fiscal_year": 2022,
     "period_end_date": "2022-06-30"},
])

RESOLUTION_CASES = [
    # (question, companies, resolved filing ids, fallback)
    ("What was Block's bitcoin revenue in 2023?", ["Block, Inc."], ["BLOCK-2023-10K"], None),        # name
    ("What was Square's transaction-based revenue in 2023?", ["Block, Inc."], ["BLOCK-2023-10K"], None),  # former
    ("SQ gross profit 2023", ["Block, Inc."], ["BLOCK-2023-10K"], None),                             # former ticker
    ("Facebook advertising revenue in 2023", ["META"], ["META-2023-10K"], None),                    # former name
    ("FB capex in fiscal 2023", ["META"], ["META-2023-10K"], None),                                 # former ticker
    ("What were Wal-Mart Stores' net sales in fiscal 2024?", ["WMT"], ["WMT-2024-10K"], None),      # former name
    ("Walmart inventories as of January 31, 2023", ["WMT"], ["WMT-2023-10K"], None),                # common + date
    ("WMT operating income", ["WMT"], ["WMT-2023-10K", "WMT-2024-10K"], None),                      # ticker, no year
    ("How much did Microsoft spend on capex in FY2022?", ["MSFT"], ["MSFT-2022-10K"], None),        # common name
    ("MSFT revenue FY2030", ["MSFT"], ["MSFT-2022-10K"], "year_unmatched"),                         # year not held
    ("What was total capital expenditure in 2023?", [], None, "no_company"),                        # none
    ("What does a block of shares entitle its holder to?", [], None, "no_company"),                 # ordinary word
]


@pytest.mark.parametrize(("question", "companies", "filing_ids", "fallback"), RESOLUTION_CASES,
                         ids=[c[0] for c in RESOLUTION_CASES])
def test_resolution_by_name_ticker_former_name_and_none(question, companies, filing_ids, fallback):
    qu = QueryParser(CATALOG).parse(question)
    res = resolve_company_filings(qu, CATALOG.in_scope(None))
    assert (res.companies, res.filing_ids, res.fallback) == (companies, filing_ids, fallback)


def test_named_company_outside_the_scope_searches_the_scope():
    qu = QueryParser(CATALOG).parse("Walmart net sales 2024", scope=SearchFilters(filing_ids=("META-2023-10K",)))
    res = resolve_company_filings(qu, CATALOG.in_scope(SearchFilters(filing_ids=("META-2023-10K",))))
    assert (res.filing_ids, res.fallback) == (None, "outside_scope")


def _crowded_corpus():
    """Microsoft's one revenue row against three Apple rows that share more of the question's words."""
    m22 = "MSFT-2022-10K"
    rows = [chunk(f"a22-{i}", "AAPL-2022-10K", f"Apple total revenue net sales fiscal 2022 segment {i} revenue",
                  fy=2022, page=30 + i, ctype="table_row") for i in range(3)]
    return [*rows,
            chunk("m22-r1", m22, "Microsoft total revenue 2022 198,270", fy=2022, page=57, ctype="table_row",
                  company="Microsoft Corporation"),
            chunk("a21-r1", "AAPL-2021-10K", "Apple total revenue net sales fiscal 2021", fy=2021, page=29,
                  ctype="table_row")]


def test_stage_puts_the_named_company_first_and_fills_from_the_corpus():
    res = fake_resources(_crowded_corpus())
    q = "What was Microsoft's total revenue net sales in fiscal 2022?"
    plain = build_retriever({"type": "bm25"}, res).search(q, 3)
    assert "m22-r1" not in [h.chunk_id for h in plain]           # crowded out without the stage
    r = build_retriever({"type": "bm25", "company_mode": "prefilter"}, res)
    result = r.retrieve(q, 3)
    ids = [h.chunk_id for h in result.hits]
    assert ids[0] == "m22-r1" and len(ids) == 3                  # its own filing first, then corpus fill
    assert {h.filing_id for h in result.hits[1:]} <= {"AAPL-2022-10K", "AAPL-2021-10K"}
    assert all(h.score < result.hits[0].score for h in result.hits[1:])   # the runner re-sorts by score
    assert result.info["company_first"] == {"companies": ["MSFT"], "filing_ids": ["MSFT-2022-10K"],
                                            "fallback": None, "filled": 2}
    assert "company" in result.timings_ms
    no_fill = build_retriever({"type": "bm25", "company_mode": "prefilter", "company_fill": False}, res)
    assert [h.chunk_id for h in no_fill.search(q, 3)] == ["m22-r1"]


def test_stage_without_a_company_searches_the_whole_scope():
    res = fake_resources(_crowded_corpus())
    q = "total revenue net sales fiscal 2022"
    plain = [h.chunk_id for h in build_retriever({"type": "bm25"}, res).search(q, 4)]
    result = build_retriever({"type": "bm25", "company_mode": "prefilter"}, res).retrieve(q, 4)
    assert [h.chunk_id for h in result.hits] == plain
    assert result.info["company_first"]["fallback"] == "no_company"


@pytest.mark.parametrize(("info", "expected"), [
    ({"company_first": {"filing_ids": ["F"]}}, ("exact", 1.0, ["F"])),
    ({"company_first": {"filing_ids": ["F", "F-prev"]}}, ("covers", 1.0, ["F", "F-prev"])),
    ({"company_first": {"filing_ids": ["G"]}}, ("wrong", 0.0, ["G"])),
    ({"company_first": {"filing_ids": None, "fallback": "no_company"}}, ("unresolved", 0.0, None)),
    ({"understanding": {"filing_ids": ["F"]}}, ("exact", 1.0, ["F"])),   # the period filter's resolution
    ({"statement_routing": {}}, (None, None, None)),                      # a configuration that resolves nothing
    (None, (None, None, None)),
])
def test_resolution_outcome_against_the_question_filing(info, expected):
    assert resolution_outcome(info, "F") == expected


def test_runner_records_resolution_per_question():
    res = fake_resources(_crowded_corpus())
    item = QAItem(qa_id="q1", filing_id="MSFT-2022-10K", question="Microsoft total revenue fiscal 2022?",
                  reference_answer="198,270", question_type="factual",
                  evidence=[[EvidencePlace("m22-r1", 57, "MSFT-2022-10K")]])
    other = QAItem(qa_id="q2", filing_id="MSFT-2022-10K", question="total revenue net sales fiscal 2022?",
                   reference_answer="198,270", question_type="factual",
                   evidence=[[EvidencePlace("m22-r1", 57, "MSFT-2022-10K")]])
    matrix = EvalMatrix.model_validate({"retrieval": {"retrievers": ["company", "plain"], "top_k": [1],
                                                      "scopes": ["corpus"]}})
    specs = {"company": {"type": "bm25", "company_mode": "prefilter"}, "plain": {"type": "bm25"}}

    def factory(name, chunking):
        return build_retriever(specs[name], res)

    _, rows = run_retrieval_eval([item, other], factory, matrix, "corpus", "MSFT-2022-10K", "v1",
                                 retriever_specs=specs)
    got = {(r["config_name"], r["qa_id"]): (r["resolution"], r["resolution_correct"], r["resolved_filings"],
                                            r["hit_page"]) for r in rows}
    assert got == {
        ("company@1", "q1"): ("exact", 1.0, "MSFT-2022-10K", 1.0),
        ("company@1", "q2"): ("unresolved", 0.0, None, 0.0),
        ("plain@1", "q1"): (None, None, None, 0.0),
        ("plain@1", "q2"): (None, None, None, 0.0),
    }
