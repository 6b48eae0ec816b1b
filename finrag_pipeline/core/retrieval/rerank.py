"""Reranking: a stage any retriever can end with (``reranker:`` in retrievers.yaml).

- ``features``: cheap signals a financial question gives away (figures, periods, line items,
  table rows) added to the base score. Microseconds per pair: usable at full evaluation speed.
- ``cross_encoder``: a sentence-transformers CrossEncoder or FlagEmbedding FlagReranker loaded from
  a LOCAL ``model_path``. No such weights ship offline (none are on PyPI); configuring it without
  the directory fails at build time with an error that says so.
- ``llm``: any ``score_pairs(query, passages) -> list[float]`` (default: the local GGUF model's
  P(Yes) vs P(No) from finrag_pipeline.core.llm, loaded on first use; ~1 pair/s, so keep depth small).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.numbers import figure_keys
from finrag_pipeline.core.query_understanding import parse_periods
from finrag_pipeline.core.retrieval.base import Retriever, Timings, copy_hit, sort_hits
from finrag_pipeline.core.retrieval.fusion import normalize_scores
from finrag_pipeline.core.retrieval.plugins import register_reranker


class RerankerUnavailable(RuntimeError):
    """A configured reranker cannot run here (missing local weights or optional package)."""


class Reranker:
    name = "reranker"

    def score(self, query: str, hits: Sequence[Hit]) -> list[float]:
        raise NotImplementedError

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        """New scores, sorted (ties by chunk_id); the previous score stays in stage_scores."""
        if not hits:
            return []
        scores = self.score(query, hits)
        stage = f"rerank:{self.name}"
        return sort_hits(copy_hit(h, score=float(s), stage=stage, stage_scores={**h.stage_scores, stage: float(s)})
                         for h, s in zip(hits, scores, strict=True))


class RerankingRetriever(Retriever):
    """Base retriever -> top ``depth`` candidates -> reranker -> top k."""

    def __init__(self, base: Retriever, reranker: Reranker, depth: int = 50):
        self.base = base
        self.reranker = reranker
        self.depth = depth
        self.stage_name = f"rerank:{reranker.name}"

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        result = self.base.retrieve(query, max(k, self.depth), filters)
        timings.merge(result.timings_ms)
        info.update(result.info)
        with timings.stage(self.stage_name):
            return self.reranker.rerank(query, result.hits)[:k]


# -- features ----------------------------------------------------------------------------------

QUANT_WORDS = re.compile(r"\b(how much|how many|what (?:was|were|is|are) the|total|amount|increase|decrease|"
                         r"change|grow|growth|ratio|margin|percentage|revenue|sales|income|cash|assets|"
                         r"liabilities|expense|expenses|eps|per share)\b", re.IGNORECASE)
DEFAULT_FEATURE_WEIGHTS = {"figure": 0.8, "period": 0.3, "line_item": 0.4, "table_row": 0.15}


def figures_in(text: str) -> list[str]:
    """Digit strings of the figures in a text, normalised ("$394,328" -> "394328"; "4.2" stays)."""
    return list(_figures(text))


# Pure functions of a string, memoised: the feature reranker scores ~50 hits per question, the
# same question against each hit, and the same chunks come back for many questions.
@functools.lru_cache(maxsize=65536)
def _figures(text: str) -> tuple[str, ...]:
    # a figure in a question: 394,328 | $4.2 billion | 28.5% | (1,234); years are periods, not figures
    return tuple(figure_keys(text))


@functools.lru_cache(maxsize=4096)
def _asked_years(query: str) -> tuple[int, ...]:
    return tuple(p.year for p in parse_periods(query))


def figure_match(query: str, passage: str) -> float:
    """Fraction of the question's figures that appear in the passage (0 when it names none)."""
    wanted = set(_figures(query))
    if not wanted:
        return 0.0
    have = set(_figures(passage))
    return len(wanted & have) / len(wanted)


def period_match(query: str, hit: Hit, fiscal_years: Sequence[int] | None = None) -> float:
    """Half for the chunk's filing year being one the question asks about, half for the passage
    naming those years (a FY2022 10-K also prints 2021 and 2020 columns)."""
    years = sorted(set(fiscal_years or _asked_years(query)))
    if not years:
        return 0.0
    in_filing = 1.0 if hit.fiscal_year in years else 0.0
    mentioned = sum(1 for y in years if str(y) in hit.text) / len(years)
    return 0.5 * in_filing + 0.5 * mentioned


@register_reranker("features")
class FeatureReranker(Reranker):
    """score = base_weight * minmax(base score) + sum(weight_f * feature_f).

    Default weights let an exact figure match plus a line-item match outrank the best lexical hit
    that lacks them (0.5 base vs 0.8 + 0.4), while among hits without signals the base order holds."""

    name = "features"

    def __init__(self, lexicon: Any = None, weights: dict[str, float] | None = None, base_weight: float = 0.5):
        self.lexicon = lexicon
        self.weights = {**DEFAULT_FEATURE_WEIGHTS, **(weights or {})}
        unknown = set(self.weights) - set(DEFAULT_FEATURE_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown features {sorted(unknown)}; known: {sorted(DEFAULT_FEATURE_WEIGHTS)}")
        self.base_weight = base_weight

    @classmethod
    def from_config(cls, config, resources) -> FeatureReranker:
        return cls(resources.get("lexicon"), config.weights, config.base_weight)

    def features(self, query: str, hit: Hit, line_items: Sequence[str], quantitative: bool) -> dict[str, float]:
        line_item = 0.0
        if self.lexicon is not None and line_items:
            line_item = 1.0 if self.lexicon.contains_any(hit.text, line_items) else 0.0
        return {
            "figure": figure_match(query, hit.text),
            "period": period_match(query, hit),
            "line_item": line_item,
            "table_row": 1.0 if quantitative and hit.chunk_type in ("table_row", "table") else 0.0,
        }

    def score(self, query: str, hits: Sequence[Hit]) -> list[float]:
        base = normalize_scores({h.chunk_id: h.score for h in hits}, "minmax")
        line_items = self.lexicon.line_items_for(query) if self.lexicon is not None else []
        quantitative = bool(line_items or figures_in(query) or QUANT_WORDS.search(query))
        out = []
        for h in hits:
            feats = self.features(query, h, line_items, quantitative)
            h.stage_scores.update({f"feature:{k}": v for k, v in feats.items()})
            out.append(self.base_weight * base[h.chunk_id] + sum(self.weights[k] * v for k, v in feats.items()))
        return out

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        # Score copies, so the feature values land in the new hits' stage_scores only.
        return super().rerank(query, [copy_hit(h) for h in hits])


# -- cross-encoder ------------------------------------------------------------------------------

_MODEL_CACHE: dict[tuple[str, str], Any] = {}


@register_reranker("cross_encoder")
class CrossEncoderReranker(Reranker):
    name = "cross_encoder"

    def __init__(self, model_path: str | None, backend: str = "sentence_transformers", batch_size: int = 16,
                 max_length: int = 512):
        if not model_path:
            raise RerankerUnavailable(
                "reranker 'cross_encoder' needs model_path: a local directory with cross-encoder weights "
                "(e.g. bge-reranker-base or ms-marco-MiniLM-L6-v2). No cross-encoder weights ship offline "
                "(none are on PyPI); use reranker 'features' or 'llm' instead.")
        if not Path(model_path).expanduser().exists():
            raise RerankerUnavailable(
                f"reranker 'cross_encoder': model_path {model_path!r} does not exist. No cross-encoder weights "
                "ship offline (none are on PyPI) and the model hub is unreachable: copy the model directory "
                "there, or use reranker 'features' or 'llm'.")
        self.model_path = str(Path(model_path).expanduser())
        self.backend = backend
        self.batch_size = batch_size
        self.max_length = max_length
        self.name = f"cross_encoder:{Path(self.model_path).name}"

    @classmethod
    def from_config(cls, config, resources) -> CrossEncoderReranker:
        return cls(config.model_path, config.backend, config.batch_size, config.max_length)

    def _model(self) -> Any:
        # Loaded once per process and path (shared by every configuration that names it).
        key = (self.backend, self.model_path)
        if key not in _MODEL_CACHE:
            if self.backend == "flag":
                from FlagEmbedding import FlagReranker
                _MODEL_CACHE[key] = FlagReranker(self.model_path, use_fp16=False, devices="cpu",
                                                 batch_size=self.batch_size, max_length=self.max_length)
            else:
                from sentence_transformers import CrossEncoder
                _MODEL_CACHE[key] = CrossEncoder(self.model_path, device="cpu", max_length=self.max_length,
                                                 local_files_only=True)
        return _MODEL_CACHE[key]

    def score(self, query: str, hits: Sequence[Hit]) -> list[float]:
        pairs = [(query, h.text) for h in hits]
        model = self._model()
        if self.backend == "flag":
            scores = model.compute_score(pairs, batch_size=self.batch_size, max_length=self.max_length)
            return [float(s) for s in (scores if isinstance(scores, list) else [scores])]
        return [float(s) for s in model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)]


# -- LLM ----------------------------------------------------------------------------------------

ScorePairs = Callable[[str, list[str]], list[float]]


def local_llm_score_pairs(model: str = "qwen2.5-0.5b", max_passage_chars: int = 2000) -> ScorePairs:
    """The local GGUF model's P(Yes) scorer (finrag_pipeline.core.llm), imported on first call."""
    def score_pairs(query: str, passages: list[str]) -> list[float]:
        from finrag_pipeline.core.llm.local_provider import score_pairs as local_score_pairs
        return local_score_pairs(query, passages, model=model, max_passage_chars=max_passage_chars)
    return score_pairs


@register_reranker("llm")
class LLMReranker(Reranker):
    """Relevance from an LLM. ``score_pairs`` is any (query, passages) -> scores callable."""

    name = "llm"

    def __init__(self, score_pairs: ScorePairs | None = None, model: str = "qwen2.5-0.5b",
                 max_passage_chars: int = 2000):
        self.score_pairs = score_pairs or local_llm_score_pairs(model, max_passage_chars)
        self.max_passage_chars = max_passage_chars

    @classmethod
    def from_config(cls, config, resources) -> LLMReranker:
        extra = config.model_extra or {}
        return cls(resources.get("score_pairs", required=False), extra.get("model", "qwen2.5-0.5b"),
                   config.max_passage_chars)

    def score(self, query: str, hits: Sequence[Hit]) -> list[float]:
        scores = self.score_pairs(query, [h.text[: self.max_passage_chars] for h in hits])
        if len(scores) != len(hits):
            raise ValueError(f"score_pairs returned {len(scores)} scores for {len(hits)} passages")
        return [float(s) for s in scores]
