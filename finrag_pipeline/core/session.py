"""One place that opens what the CLI, the Dagster assets and the tests search with.

A :class:`FinragSession` over a FINRAG_HOME opens the indexes, the embedder and the chunk store once
(lazily) and builds named retrievers from assets_config/retrievers.yaml with overrides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse


@dataclass
class CorpusState:
    corpus_state: str
    filing_ids: list[str]
    n_filings: int

    @classmethod
    def empty(cls) -> CorpusState:
        return cls("empty", [], 0)


@dataclass
class FinragSession:
    paths: FinragPaths
    retriever_overrides: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, home: str | None = None, **kwargs: Any) -> FinragSession:
        return cls(FinragPaths.from_env(home).ensure(), **kwargs)

    @cached_property
    def warehouse(self) -> Warehouse:
        return Warehouse(self.paths.warehouse)

    @cached_property
    def resources(self):
        from finrag_pipeline.core.retrieval.resources import RetrievalResources

        return RetrievalResources.from_paths(self.paths, warehouse=self.warehouse)

    @cached_property
    def _retrievers(self) -> dict[str, Any]:
        return {}

    def retriever(self, name: str) -> Any:
        """A named retriever of retrievers.yaml (with this session's overrides), built once."""
        if name not in self._retrievers:
            from finrag_pipeline.core.retrieval.registry import build_named_retrievers

            self._retrievers[name] = build_named_retrievers(self.resources, [name],
                                                            overrides=self.retriever_overrides)[name]
        return self._retrievers[name]

    def retriever_factory(self, name: str, chunking: str | None = None) -> Any:
        """The evaluation runner's factory: (retriever name, chunking variant) -> retriever."""
        if chunking not in (None, "default"):
            raise NotImplementedError(
                f"chunking variant {chunking!r} has no index of its own yet: only the default chunking is "
                "indexed by the pipeline (see docs/EVALUATION.md)")
        return self.retriever(name)

    def corpus_state(self) -> CorpusState:
        df = self.warehouse.query_df(
            "SELECT corpus_state, filing_ids, n_filings FROM core.corpus_versions ORDER BY created_at DESC LIMIT 1")
        if not len(df):
            return CorpusState.empty()
        row = df.iloc[0]
        return CorpusState(row["corpus_state"], json.loads(row["filing_ids"]), int(row["n_filings"]))
