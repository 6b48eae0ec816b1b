"""Company-first corpus search: a stage around any retriever that searches the filings of the company
(and year) a question names before anything else.

"What was Walmart's capex in fiscal 2023?" over a corpus of many 10-Ks: every 10-K has a capex row, so
an unscoped search fills the top k with other companies' rows. The stage resolves the company (catalog
names, the company map's tickers, former and common names: ``query_understanding.QueryParser``) and
the fiscal year, and searches only the matching filings; the slots they cannot fill come from the
caller's whole scope, ranked after them. A question that names no company searches the whole scope.
Configured like the period filter: ``company_mode: prefilter | none`` in retrievers.yaml.

``info["company_first"]`` records the resolution (companies, filing ids, why a fallback happened), so
the evaluation can score it against the question's own filing (:func:`resolution_outcome`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.query_understanding import CatalogFiling, QueryUnderstanding, company_key
from finrag_pipeline.core.retrieval.base import Retriever, Timings, copy_hit, merge_filters
from finrag_pipeline.core.retrieval.query_understanding_stage import ParsesQueries

# no_company: the question names none, the whole scope is searched; outside_scope: the named company has
# no filing in the caller's scope, so the scope is searched; year_unmatched: the company's filings of the
# asked year are not in the corpus, so all of its filings are searched.
Fallback = Literal["no_company", "outside_scope", "year_unmatched"]
# How a resolution compares with the question's own filing (the evaluation's ``resolution`` column).
Outcome = Literal["exact", "covers", "wrong", "unresolved"]


@dataclass
class CompanyResolution:
    companies: list[str] = field(default_factory=list)
    filing_ids: list[str] | None = None     # None: nothing resolved, the caller's scope is searched
    fallback: Fallback | None = None

    def as_info(self) -> dict[str, Any]:
        return {"companies": self.companies, "filing_ids": self.filing_ids, "fallback": self.fallback}


def resolve_company_filings(qu: QueryUnderstanding, in_scope: list[CatalogFiling]) -> CompanyResolution:
    """The filings of the named companies in scope, narrowed to the asked years when any of them match."""
    if not qu.companies:
        return CompanyResolution(fallback="no_company")
    company_filings = [f.filing_id for f in in_scope if company_key(f.ticker, f.company) in qu.companies]
    if not company_filings:
        return CompanyResolution(qu.companies, None, "outside_scope")
    if qu.periods:
        dated = [fid for fid in company_filings if fid in set(qu.filing_ids or ())]
        if dated:
            return CompanyResolution(qu.companies, dated)
        return CompanyResolution(qu.companies, company_filings, "year_unmatched")
    return CompanyResolution(qu.companies, company_filings)


class CompanyFirstRetriever(ParsesQueries, Retriever):
    """Search the resolved filings first; fill the remaining slots from the caller's scope (``fill``)."""

    stage_name = "company"

    def __init__(self, base: Retriever, resources: Any, covering_years: int = 0, fill: bool = True):
        self.base = base
        self.resources = resources
        self.covering_years = covering_years
        self.fill = fill

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        with timings.stage(self.stage_name):
            qu = self.parser.parse(query, scope=filters)
            resolution = resolve_company_filings(qu, self.parser.catalog.in_scope(filters))
        info["company_first"] = resolution.as_info()
        if resolution.filing_ids is None:
            result = self.base.retrieve(query, k, filters)
            timings.merge(result.timings_ms)
            return result.hits
        applied = merge_filters(filters, SearchFilters(filing_ids=tuple(resolution.filing_ids)))
        first = self.base.retrieve(query, k, applied)
        timings.merge(first.timings_ms)
        hits = list(first.hits)
        if not self.fill or len(hits) >= k:
            return hits[:k]
        # Too few in the company's filings: the rest of the scope, strictly below every first-pass hit.
        with timings.stage("company_fill"):
            rest = self.base.retrieve(query, k, filters)
        timings.merge({key: v for key, v in rest.timings_ms.items() if key != self.stage_name})
        seen = {h.chunk_id for h in hits}
        floor = min((h.score for h in hits), default=0.0)
        extra = [h for h in rest.hits if h.chunk_id not in seen][:k - len(hits)]
        for i, h in enumerate(extra, start=1):
            hits.append(copy_hit(h, score=floor - i, stage_scores={**h.stage_scores, "company_fill": 1.0}))
        info["company_first"]["filled"] = len(extra)
        return hits


def resolution_outcome(info: dict[str, Any] | None, question_filing_id: str) -> tuple[Outcome | None, float | None,
                                                                                       list[str] | None]:
    """(outcome, correct, resolved filing ids) of a search's company/period resolution against the
    question's own filing. ``correct`` is 1 when the resolved filings include it, 0 when they exclude it
    or nothing was resolved; (None, None, None) when the configuration resolves nothing (no stage)."""
    if not info:
        return None, None, None
    if "company_first" in info:
        filing_ids = info["company_first"].get("filing_ids")
    elif "understanding" in info:   # the period filter's resolution (company AND period)
        filing_ids = info["understanding"].get("filing_ids")
    else:
        return None, None, None
    if filing_ids is None:
        return "unresolved", 0.0, None
    filing_ids = list(filing_ids)
    if question_filing_id not in filing_ids:
        return "wrong", 0.0, filing_ids
    return ("exact" if filing_ids == [question_filing_id] else "covers"), 1.0, filing_ids
