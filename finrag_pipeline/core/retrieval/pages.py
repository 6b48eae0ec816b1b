"""Page-level ranking: rank the pages of a filing, not only its chunks.

A page's score is built from every candidate chunk on it (a page holding three good table rows beats a
page with one slightly better sentence), weighted by chunk type, plus a bonus when the page carries the
statement the question asks for (statement routing's ``statements_asked``):

    score(page) = sum over candidate chunks c on the page of (1 + table_row_weight * [c is a table row])
                  / (rrf_k + rank(c))
                  + statement_weight / (rrf_k + 1)   if a chunk on the page is tagged with an asked statement

Reciprocal ranks make the score independent of the retriever's score scale (BM25, cosine, RRF). Ties
break by (filing_id, page). ``top_pages`` on every :class:`RetrievalResult` is this ranking: without the
stage it aggregates the returned hits with the defaults below; ``page_ranking: {depth, ...}`` in
retrievers.yaml ranks the pages of ``depth`` candidates instead (:class:`PageRankingRetriever`).
The evaluation's ``*_ranked_page`` metrics read ``top_pages`` directly: no chunk-to-page mapping.
"""

from __future__ import annotations

from typing import Any

from finrag_pipeline.core.analyst.vocabulary import default_vocabulary
from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.retrieval.base import Retriever, Timings
from finrag_pipeline.core.retrieval.page_scores import (  # noqa: F401  (re-exported)
    DEFAULT_PAGE_RANKING,
    PageHit,
    PageRankingConfig,
    rank_pages,
)
from finrag_pipeline.core.retrieval.statement_routing import statement_of_hit, statements_asked


class PageRankingRetriever(Retriever):
    """Ranks the pages of ``depth`` candidates of ``base`` into ``info["top_pages"]``; the chunk hits
    returned are the base's first k, unchanged."""

    stage_name = "rank_pages"

    def __init__(self, base: Retriever, resources: Any, config: PageRankingConfig):
        self.base = base
        self.resources = resources
        self.config = config

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        result = self.base.retrieve(query, max(k, self.config.depth), filters)
        timings.merge(result.timings_ms)
        info.update({key: v for key, v in result.info.items() if key != "top_pages"})
        with timings.stage(self.stage_name):
            statements: list[str] = []
            statement_of = None
            if self.config.statement_weight > 0:
                statements = statements_asked(query, self.resources.get("lexicon"), default_vocabulary())
                store = self.resources.get("chunk_store", required=False)

                def statement_of(h: Hit) -> str | None:
                    return statement_of_hit(h, store)

            info["top_pages"] = rank_pages(result.hits, self.config, statement_of, statements)
            info["page_statements"] = statements
        return result.hits[:k]
