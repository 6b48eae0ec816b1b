"""``decomposed``: a metric question is split into its inputs, each searched on its own statement.

"What was Apple's fixed asset turnover in fiscal 2022, defined as revenue divided by average PP&E?"
-> the fact layer's planner (core/analyst/plan.py: the definition in the question, else the lexicon's
formula) gives ``revenue / avg(ppe)``; its inputs are grouped by the statement they live on
(revenue: income statement, ppe: balance sheet) and each group gets one search with the base
retriever: the company and years of the question, the inputs' printed line items and the statement's
title, with rows tagged with that statement (in a filing of the asked period) boosted. The groups'
rankings are fused round-robin, so every input's best page reaches the top k even when one statement
dominates the plain search. A question that is not a computation (one line item's value, a narrative
"what drove ...") passes through to the base retriever unchanged. At most three searches (one per
statement).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from finrag_pipeline.core.analyst.plan import PlanError, make_plan
from finrag_pipeline.core.analyst.store import strip_total
from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.query_understanding import QueryParser
from finrag_pipeline.core.question_kind import is_qualitative
from finrag_pipeline.core.retrieval.base import Retriever, Timings, copy_hit
from finrag_pipeline.core.retrieval.config import WrapperConfig
from finrag_pipeline.core.retrieval.plugins import register_retriever
from finrag_pipeline.core.retrieval.query_understanding_stage import hit_matches
from finrag_pipeline.core.retrieval.statement_routing import (
    NAMED_STATEMENTS,
    STATEMENT_TITLES,
    boost_statements,
)

_YEAR_RE = re.compile(r"\b(?:FY\s?)?((?:19|20)\d\d)\b", re.IGNORECASE)


@dataclass
class InputSearch:
    """One search of a decomposed question: the inputs that live on one statement."""

    statement: str | None
    inputs: list[str]                      # lexicon concept keys
    labels: list[str]                      # their printed line items (searched)
    query: str = ""
    hits: list[Hit] = field(default_factory=list)


def decompose(question: str, lexicon: Any) -> tuple[str | None, list[InputSearch]]:
    """The plan's formula and its inputs grouped by statement. No groups (pass through) when the
    question is narrative, names no quantity the planner can read, or asks for one line item's value.

    A growth or change question over one line item is one group (its statement, scoped). When the
    planner reads a single line item but the question names line items on two or more statements
    ("what share of its revenue did Microsoft spend on capex"), those named items are the inputs."""
    # "What drove the expansion of the gross margin?" names a metric but asks for the narrative (MD&A):
    # a qualitative question (the one rule, question_kind.py) is not a computation and passes through.
    if is_qualitative(question):
        return None, []
    try:
        plan = make_plan(question, [], lexicon)
    except PlanError:
        return None, []
    names = plan.parsed.names
    if len(names) < 2 and plan.operation == "value":
        # "cash flow statement" names a statement, not the line item "cash"
        unnamed = question
        for _, pattern in NAMED_STATEMENTS:
            unnamed = pattern.sub(" ", unnamed)
        named = [m.concept for m in lexicon.match(unnamed) if not m.concept.formula and m.concept.statement]
        if len({c.statement for c in named}) < 2:
            return plan.formula, []
        names = list(dict.fromkeys(c.key for c in named))
    groups: dict[str | None, InputSearch] = {}
    for name in names:
        concept = lexicon.concepts.get(name)
        if concept is None:
            continue
        group = groups.setdefault(concept.statement, InputSearch(concept.statement, [], []))
        group.inputs.append(name)
        group.labels.extend(x for x in query_labels(concept.line_items) if x not in group.labels)
    return plan.formula, list(groups.values())


def query_labels(line_items: list[str], wordings: int = 3) -> list[str]:
    """The printed labels an input's search names: its first ``wordings`` wordings, each with and without a
    leading "total" (companies title the same line differently: "Total net sales", "Net sales", "Total
    revenues"), so the query does not hang on the order the lexicon lists its labels in for the calculator."""
    stems = list(dict.fromkeys(strip_total(x) for x in line_items))[:wordings]
    return list(dict.fromkeys(x for stem in stems for x in (f"total {stem}", stem)))


@register_retriever("decomposed", config=WrapperConfig)
class DecomposedRetriever(Retriever):
    stage_name = "decomposed"

    def __init__(self, base: Retriever, resources: Any, boost: float = 0.5, covering_years: int = 0,
                 fetch_k: int | None = None):
        self.base = base
        self.resources = resources
        self.boost = boost
        self.covering_years = covering_years
        self.fetch_k = fetch_k
        self._parser: QueryParser | None = None

    @classmethod
    def from_config(cls, config: Any, resources: Any, builder: Any) -> DecomposedRetriever:
        return cls(builder.build(config.base or "hybrid_rrf"), resources, config.statement_boost,
                   config.covering_years, config.fetch_k)

    @property
    def parser(self) -> QueryParser:
        if self._parser is None:
            self._parser = QueryParser(self.resources.get("catalog", required=False), self.covering_years)
        return self._parser

    def _context(self, question: str, filters: SearchFilters | None) -> tuple[str, SearchFilters | None]:
        """The company names and years of the question (kept in every sub-query), and its scope."""
        understanding = self.parser.parse(question, scope=filters)
        catalog = self.resources.get("catalog", required=False)
        names: list[str] = []
        for key in understanding.companies:
            for f in (catalog.filings if catalog is not None else []):
                if key in (f.ticker, f.company) and isinstance(f.company, str) and f.company not in names:
                    names.append(f.company)
        years = list(dict.fromkeys(m.group(1) for m in _YEAR_RE.finditer(question)))
        return " ".join([*names, *years]), understanding.to_filters()

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        with timings.stage("decompose"):
            formula, groups = decompose(query, self.resources.get("lexicon"))
        info["formula"] = formula
        if not groups:
            info["decomposed"] = False
            result = self.base.retrieve(query, k, filters)
            timings.merge(result.timings_ms)
            return result.hits
        with timings.stage("decompose"):
            context, wanted = self._context(query, filters)
        store = self.resources.get("chunk_store", required=False)
        depth = max(k, self.fetch_k or 20)
        for group in groups:
            title = STATEMENT_TITLES.get(group.statement or "", "")
            group.query = " ".join(x for x in [context, *group.labels, title] if x)
            result = self.base.retrieve(group.query, depth, filters)
            timings.merge(result.timings_ms)
            with timings.stage("statement_boost"):
                group.hits = boost_statements(result.hits, [group.statement] if group.statement else [], store,
                                              self.boost, lambda h: hit_matches(h, wanted))
        info["decomposed"] = True
        info["inputs"] = [{"statement": g.statement, "inputs": g.inputs, "query": g.query} for g in groups]
        with timings.stage(self.stage_name):
            return round_robin([g.hits for g in groups], [g.statement or "" for g in groups], k)


def round_robin(rankings: list[list[Hit]], labels: list[str], k: int) -> list[Hit]:
    """Take each ranking's next unseen chunk in turn, so every ranking's best chunks reach the top k.
    Scores are 1/position in the fused list (monotone; the rank is what counts)."""
    out: list[Hit] = []
    seen: set[str] = set()
    cursors = [0] * len(rankings)
    while len(out) < k and any(c < len(r) for c, r in zip(cursors, rankings, strict=True)):
        for i, ranking in enumerate(rankings):
            while cursors[i] < len(ranking) and ranking[cursors[i]].chunk_id in seen:
                cursors[i] += 1
            if cursors[i] < len(ranking) and len(out) < k:
                h = ranking[cursors[i]]
                cursors[i] += 1
                seen.add(h.chunk_id)
                score = 1.0 / (len(out) + 1)
                out.append(copy_hit(h, score=score, stage="decomposed",
                                    stage_scores={**h.stage_scores, "decomposed_input": float(i),
                                                  f"input:{labels[i] or 'any'}": h.score}))
    return out
