"""Hybrid retrievers: fuse the rankings of several base retrievers (default bm25 + dense)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.retrieval.base import Retriever, Timings, copy_hit
from finrag_pipeline.core.retrieval.config import RetrieverConfig
from finrag_pipeline.core.retrieval.fusion import reciprocal_rank_fusion, weighted_score_fusion
from finrag_pipeline.core.retrieval.plugins import register_retriever

DEFAULT_BASES = ("bm25", "dense")


class FusionConfig(RetrieverConfig):
    """Fields of the fusion types: the component retrievers and one weight per component."""

    bases: list[str | dict[str, Any]] = Field(default_factory=list,
                                              description="component retrievers: names or inline configs")
    weights: list[float] | None = None

    @model_validator(mode="after")
    def _check_weights(self) -> FusionConfig:
        if self.weights is not None and self.bases and len(self.weights) != len(self.bases):
            raise ValueError(f"retriever {self.name!r}: {len(self.weights)} weights for {len(self.bases)} bases")
        return self

    def references(self) -> list[str | dict[str, Any]]:
        return list(self.bases)


class HybridRRFConfig(FusionConfig):
    rrf_k: float = Field(60.0, gt=0)


class HybridWeightedConfig(FusionConfig):
    normalization: Literal["minmax", "zscore"] = "minmax"


class _FusionRetriever(Retriever):
    stage_name = "fusion"

    def __init__(self, bases: Sequence[Retriever], weights: Sequence[float] | None = None,
                 fetch_k: int | None = None):
        if not bases:
            raise ValueError("a fusion retriever needs at least one base retriever")
        if weights is not None and len(weights) != len(bases):
            raise ValueError(f"{len(weights)} weights for {len(bases)} base retrievers")
        self.bases = list(bases)
        self.weights = list(weights) if weights is not None else None
        self.fetch_k = fetch_k

    @classmethod
    def from_config(cls, config, resources, builder):
        bases = [builder.build(ref) for ref in (config.bases or DEFAULT_BASES)]
        return cls(bases, config.weights, config.fetch_k, **cls._extra(config))

    @classmethod
    def _extra(cls, config) -> dict[str, Any]:
        return {}

    def _fuse(self, rankings: list[dict[str, float]]) -> list[tuple[str, float]]:
        raise NotImplementedError

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        # Fetch deeper than k: a doc ranked 30th by BM25 and 2nd by dense belongs in the fused top 10.
        depth = max(k, self.fetch_k or 50)
        rankings: list[dict[str, float]] = []
        by_id: dict[str, Hit] = {}
        stage_scores: dict[str, dict[str, float]] = {}
        for i, base in enumerate(self.bases):
            result = base.retrieve(query, depth, filters)
            timings.merge(result.timings_ms)
            label = getattr(base, "name", None) or f"base{i}"
            rankings.append({h.chunk_id: h.score for h in result.hits})
            for h in result.hits:
                by_id.setdefault(h.chunk_id, h)
                stage_scores.setdefault(h.chunk_id, {})[label] = h.score
        with timings.stage(self.stage_name):
            fused = self._fuse(rankings)[:k]
        return [copy_hit(by_id[cid], score=score, stage=self.stage_name,
                         stage_scores={**stage_scores[cid], self.stage_name: score})
                for cid, score in fused]


@register_retriever("hybrid_rrf", config=HybridRRFConfig)
class HybridRRFRetriever(_FusionRetriever):
    """Reciprocal rank fusion; ties broken by chunk_id."""

    stage_name = "rrf"

    def __init__(self, bases, weights=None, fetch_k=None, rrf_k: float = 60.0):
        super().__init__(bases, weights, fetch_k)
        self.rrf_k = rrf_k

    @classmethod
    def _extra(cls, config) -> dict[str, Any]:
        return {"rrf_k": config.rrf_k}

    def _fuse(self, rankings):
        return reciprocal_rank_fusion(rankings, self.rrf_k, self.weights)


@register_retriever("hybrid_weighted", config=HybridWeightedConfig)
class HybridWeightedRetriever(_FusionRetriever):
    """Weighted sum of min-max or z-normalised scores."""

    stage_name = "weighted"

    def __init__(self, bases, weights=None, fetch_k=None, normalization: str = "minmax"):
        super().__init__(bases, weights, fetch_k)
        self.normalization = normalization

    @classmethod
    def _extra(cls, config) -> dict[str, Any]:
        return {"normalization": config.normalization}

    def _fuse(self, rankings):
        return weighted_score_fusion(rankings, self.weights, self.normalization)  # type: ignore[arg-type]
