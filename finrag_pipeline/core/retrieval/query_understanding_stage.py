"""Query understanding as a stage around any retriever: ``prefilter``, ``boost`` or ``none``."""

from __future__ import annotations

from typing import Any

from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.query_understanding import QueryParser
from finrag_pipeline.core.retrieval.base import Retriever, Timings, copy_hit, merge_filters, sort_hits


class ParsesQueries:
    """The query parser of a stage over ``self.resources`` and ``self.covering_years``, built on first query
    (the catalog may load from the warehouse); shared by the period and company-first stages."""

    _parser: QueryParser | None = None

    @property
    def parser(self) -> QueryParser:
        if self._parser is None:
            self._parser = QueryParser(self.resources.get("catalog", required=False), self.covering_years)
        return self._parser


class QueryUnderstandingRetriever(ParsesQueries, Retriever):
    """prefilter: the question's company/period become SearchFilters (intersected with the caller's
    scope), so nothing from another fiscal year can come back. boost: search unfiltered (deeper)
    and add ``boost`` x (score range of the candidates) to hits of matching filings, which keeps
    recall when the question's period is misread."""

    stage_name = "understand"

    def __init__(self, base: Retriever, resources: Any, mode: str = "prefilter", boost: float = 0.5,
                 covering_years: int = 0, overfetch: int = 3):
        self.base = base
        self.resources = resources
        self.mode = mode
        self.boost = boost
        self.covering_years = covering_years
        self.overfetch = overfetch

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        with timings.stage(self.stage_name):
            qu = self.parser.parse(query, scope=filters)
        info["understanding"] = qu.as_info()
        info["period_mode"] = self.mode
        if self.mode == "prefilter":
            applied = merge_filters(filters, qu.to_filters())
            info["applied_filters"] = applied
            result = self.base.retrieve(query, k, applied)
            timings.merge(result.timings_ms)
            return result.hits
        result = self.base.retrieve(query, k * self.overfetch if qu.constrained else k, filters)
        timings.merge(result.timings_ms)
        if self.mode != "boost" or not qu.constrained or not result.hits:
            return result.hits[:k]
        with timings.stage("boost"):
            wanted = qu.to_filters()
            scores = [h.score for h in result.hits]
            bonus = self.boost * ((max(scores) - min(scores)) or 1.0)
            boosted = []
            for h in result.hits:
                match = hit_matches(h, wanted)
                score = h.score + (bonus if match else 0.0)
                boosted.append(copy_hit(h, score=score, stage_scores={**h.stage_scores,
                                                                      "period_boost": bonus if match else 0.0}))
            return sort_hits(boosted)[:k]


def hit_matches(hit: Hit, wanted: SearchFilters | None) -> bool:
    if wanted is None:
        return True
    if wanted.filing_ids is not None and hit.filing_id not in wanted.filing_ids:
        return False
    return wanted.fiscal_years is None or hit.fiscal_year in wanted.fiscal_years
