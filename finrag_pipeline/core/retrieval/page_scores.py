"""Page scores: the page ranking's rule (see core/retrieval/pages.py), in a leaf module that imports
only the models, so the Retriever contract (base.py) and the evaluation can use it without a cycle."""


from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from finrag_pipeline.core.models import Hit


class PageRankingConfig(BaseModel):
    """``page_ranking`` of a retriever configuration."""

    model_config = ConfigDict(extra="forbid")
    depth: int = Field(50, ge=1, description="candidate chunks whose pages are ranked")
    rrf_k: float = Field(60.0, gt=0)
    table_row_weight: float = Field(0.0, ge=0.0, description="extra weight of a table-row chunk")
    statement_weight: float = Field(0.0, ge=0.0, description="bonus (in first-rank units) for a page "
                                    "holding a chunk of an asked statement")


DEFAULT_PAGE_RANKING = PageRankingConfig()


@dataclass(frozen=True)
class PageHit:
    filing_id: str
    page: int
    score: float
    n_chunks: int

    @property
    def key(self) -> tuple[str, int]:
        return (self.filing_id, self.page)


def rank_pages(hits: Sequence[Hit], config: PageRankingConfig = DEFAULT_PAGE_RANKING,
               statement_of: Callable[[Hit], str | None] | None = None,
               statements: Iterable[str] = ()) -> list[PageHit]:
    """Pages of ``hits`` (in rank order) scored as in the module docstring, best first. A chunk spanning
    pages contributes to each; a chunk listed twice counts once, at its first rank."""
    wanted = set(statements)
    scores: dict[tuple[str, int], float] = {}
    counts: dict[tuple[str, int], int] = {}
    on_statement: set[tuple[str, int]] = set()
    seen: set[str] = set()
    rank = 0
    for h in hits:
        if h.chunk_id in seen:
            continue
        seen.add(h.chunk_id)
        rank += 1
        weight = 1.0 + (config.table_row_weight if h.chunk_type == "table_row" else 0.0)
        tagged = bool(wanted) and statement_of is not None and statement_of(h) in wanted
        for p in h.pages:
            key = (h.filing_id, int(p))
            scores[key] = scores.get(key, 0.0) + weight / (config.rrf_k + rank)
            counts[key] = counts.get(key, 0) + 1
            if tagged:
                on_statement.add(key)
    for key in on_statement:
        scores[key] += config.statement_weight / (config.rrf_k + 1)
    ordered = sorted(scores, key=lambda key: (-scores[key], key))
    return [PageHit(f, p, scores[(f, p)], counts[(f, p)]) for f, p in ordered]


