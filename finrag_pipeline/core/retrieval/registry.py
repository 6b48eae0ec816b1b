"""Registries: a retriever or reranker type is a registered name or an import path.

    @register_retriever("bm25")
    class BM25Retriever(Retriever): ...

    build_retriever({"type": "my_pkg.mod:MyRetriever", "k": 5}, resources)

A class is built with ``cls.from_config(config, resources, builder)`` when it has that classmethod
(``builder`` builds referenced base retrievers), else ``cls(config=config, resources=resources)``.
Query understanding, company-first search, statement routing and reranking are wrapped around whatever the type builds, so every type gets
``period_mode``, ``company_mode``, ``statement_mode`` and ``reranker`` for free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from finrag_pipeline.core.config import unknown_names_error
from finrag_pipeline.core.retrieval.config import (
    RerankerConfig,
    RetrieverConfig,
    load_retrievers_file,
    parse_retriever_config,
)
from finrag_pipeline.core.retrieval.plugins import (  # noqa: F401  (re-exported)
    RERANKERS,
    RETRIEVERS,
    ensure_builtins,
    import_type,
    is_import_path,
    register_reranker,
    register_retriever,
)
from finrag_pipeline.core.retrieval.resources import RetrievalResources


def resolve_type(type_ref: str, registry: Mapping[str, type], kind: str) -> type:
    """A registered name, or "package.module:ClassName" (also "package.module.ClassName")."""
    ensure_builtins()
    if type_ref in registry:
        return registry[type_ref]
    if is_import_path(type_ref):
        return import_type(type_ref, kind)
    raise ValueError(f"unknown {kind} type {type_ref!r}; registered: {sorted(registry)} "
                     "(or give an import path 'package.module:ClassName')")




class RetrieverBuilder:
    """Builds named configurations, resolving ``base``/``bases`` references by name."""

    def __init__(self, resources: RetrievalResources, named: Mapping[str, RetrieverConfig] | None = None):
        self.resources = resources
        self.named = dict(named or {})

    def config_of(self, ref: str | Mapping[str, Any] | RetrieverConfig) -> RetrieverConfig:
        if isinstance(ref, RetrieverConfig):
            return ref
        if isinstance(ref, str):
            if ref in self.named:
                return self.named[ref]
            ensure_builtins()
            if ref in RETRIEVERS or ":" in ref:
                return parse_retriever_config({"name": ref, "type": ref})
            raise unknown_names_error("retriever", [ref], self.named)
        data = dict(ref)
        data.setdefault("name", str(data.get("type", "inline")))
        return parse_retriever_config(data)

    def build(self, ref: str | Mapping[str, Any] | RetrieverConfig) -> Any:
        from finrag_pipeline.core.retrieval.company_first import CompanyFirstRetriever
        from finrag_pipeline.core.retrieval.query_understanding_stage import QueryUnderstandingRetriever
        from finrag_pipeline.core.retrieval.rerank import RerankingRetriever
        from finrag_pipeline.core.retrieval.statement_routing import StatementRoutingRetriever

        config = self.config_of(ref)
        cls = resolve_type(config.type, RETRIEVERS, "retriever")
        if hasattr(cls, "from_config"):
            retriever = cls.from_config(config, self.resources, self)
        else:
            retriever = cls(config=config, resources=self.resources)
        if config.reranker is not None:
            retriever = RerankingRetriever(retriever, build_reranker(config.reranker, self.resources),
                                           depth=config.reranker.depth)
        if config.statement_mode != "none":
            retriever = StatementRoutingRetriever(retriever, self.resources, boost=config.statement_boost,
                                                  covering_years=config.covering_years)
        if config.company_mode != "none":
            retriever = CompanyFirstRetriever(retriever, self.resources, covering_years=config.covering_years,
                                              fill=config.company_fill)
        if config.period_mode != "none":
            retriever = QueryUnderstandingRetriever(retriever, self.resources, mode=config.period_mode,
                                                    boost=config.period_boost,
                                                    covering_years=config.covering_years)
        if config.page_ranking is not None:  # outermost: it ranks the pages of everything inside
            from finrag_pipeline.core.retrieval.pages import PageRankingRetriever

            retriever = PageRankingRetriever(retriever, self.resources, config.page_ranking)
        retriever.name = config.name or config.type
        return retriever


def build_retriever(config: str | Mapping[str, Any] | RetrieverConfig, resources: RetrievalResources,
                    named: Mapping[str, RetrieverConfig] | None = None) -> Any:
    """Build one retriever. ``config`` is a RetrieverConfig, a dict, or a name in ``named``."""
    return RetrieverBuilder(resources, named).build(config)


def build_named_retrievers(resources: RetrievalResources, names: list[str] | None = None,
                           path: Any = None, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Build (some of) the configurations in retrievers.yaml, e.g. an evaluation matrix row set."""
    file = load_retrievers_file(path, overrides)
    named = dict(file.retrievers)
    if file.lexicon_paths and resources.lexicon is None:
        from finrag_pipeline.core.analyst.lexicon import Lexicon
        resources.lexicon = Lexicon.load_default(file.lexicon_paths)
    builder = RetrieverBuilder(resources, named)
    return {n: builder.build(n) for n in (names or list(named))}


def build_reranker(config: str | Mapping[str, Any] | RerankerConfig, resources: RetrievalResources) -> Any:
    if isinstance(config, str):
        config = RerankerConfig(type=config)
    elif not isinstance(config, RerankerConfig):
        config = RerankerConfig.model_validate(dict(config))
    cls = resolve_type(config.type, RERANKERS, "reranker")
    if hasattr(cls, "from_config"):
        return cls.from_config(config, resources)
    return cls(config=config, resources=resources)
