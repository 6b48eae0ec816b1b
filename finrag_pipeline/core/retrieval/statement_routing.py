"""Statement routing: a stage around any retriever that prefers the statement a question needs.

"Using the cash flow statement, ..." names the statement; "What was Apple's capex ...?" asks for a
line item that lives on one (the lexicon concept's ``statement``, or the analyst vocabulary's). The
stage searches with the question expanded by the analyst vocabulary, deeper than k, and adds
``boost`` x (score range of the candidates) to table-row chunks tagged with that statement type
(``chunk.metadata["statement_type"]``, set at ingest) in a filing of the asked period. Configured
like the period filter: ``statement_mode: boost | none`` and ``statement_boost`` in retrievers.yaml.
"""

from __future__ import annotations

import re
from typing import Any

from finrag_pipeline.core.analyst.formula import FormulaError, parse_formula
from finrag_pipeline.core.analyst.vocabulary import AnalystVocabulary, default_vocabulary
from finrag_pipeline.core.models import Hit, SearchFilters
from finrag_pipeline.core.query_understanding import QueryParser
from finrag_pipeline.core.retrieval.base import Retriever, Timings, copy_hit, sort_hits
from finrag_pipeline.core.retrieval.query_understanding_stage import hit_matches

# A question naming the statement itself wins over the statements of the line items it names.
NAMED_STATEMENTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cash_flow", re.compile(r"\bcash[\s-]flows?\s+statements?\b|\bstatements?\s+of\s+(?:consolidated\s+)?cash\s+flows?\b",
                             re.IGNORECASE)),
    ("balance_sheet", re.compile(r"\bbalance\s+sheets?\b|\bstatements?\s+of\s+(?:consolidated\s+)?financial\s+position\b",
                                 re.IGNORECASE)),
    ("income_statement", re.compile(r"\bincome\s+statements?\b|\bstatements?\s+of\s+(?:consolidated\s+)?"
                                    r"(?:operations|income|earnings)\b|\bp\s*&\s*l\b|\bprofit\s+and\s+loss\b",
                                    re.IGNORECASE)),
)
# How statements are titled in 10-Ks: appended to a sub-query that is scoped to one statement.
STATEMENT_TITLES = {"income_statement": "consolidated statements of operations income",
                    "balance_sheet": "consolidated balance sheets",
                    "cash_flow": "consolidated statements of cash flows"}


def named_statements(question: str) -> list[str]:
    """Statements the question names in words, in order of appearance."""
    found = [(m.start(), st) for st, pattern in NAMED_STATEMENTS for m in [pattern.search(question)] if m]
    return [st for _, st in sorted(found)]


def concept_statements(concept: Any, lexicon: Any) -> list[str]:
    """Where a lexicon concept's figure lives; a formula's statements are those of its inputs."""
    if concept.statement:
        return [concept.statement]
    if not concept.formula:
        return []
    try:
        names = parse_formula(concept.formula).names
    except FormulaError:
        return []
    out: list[str] = []
    for name in names:
        c = lexicon.concepts.get(name)
        if c is not None and c.statement and c.statement not in out:
            out.append(c.statement)
    return out


def statements_asked(question: str, lexicon: Any, vocabulary: AnalystVocabulary | None = None) -> list[str]:
    """The statements a question needs: named ones if any, else those of its line items/metrics."""
    named = named_statements(question)
    if named:
        return named
    out: list[str] = []
    for m in lexicon.match(question):
        for st in concept_statements(m.concept, lexicon):
            if st not in out:
                out.append(st)
    for m in (vocabulary.match(question) if vocabulary is not None else []):
        if m.statement and m.statement not in out:
            out.append(m.statement)
    return out


def statement_of_hit(hit: Hit, chunk_store: Any) -> str | None:
    chunk = chunk_store.get(hit.chunk_id) if chunk_store is not None else None
    return (chunk.metadata or {}).get("statement_type") if chunk is not None else None


def boost_statements(hits: list[Hit], statements: list[str], chunk_store: Any, boost: float,
                     in_period: Any = None) -> list[Hit]:
    """Re-sort ``hits`` with ``boost`` x (score range) added to chunks tagged with one of ``statements``
    (and, when ``in_period`` is given, in a filing of the asked period). Returns new hits."""
    if not hits or not statements:
        return list(hits)
    scores = [h.score for h in hits]
    bonus = boost * ((max(scores) - min(scores)) or 1.0)
    out = []
    for h in hits:
        match = statement_of_hit(h, chunk_store) in statements and (in_period is None or in_period(h))
        out.append(copy_hit(h, score=h.score + (bonus if match else 0.0),
                            stage_scores={**h.stage_scores, "statement_boost": bonus if match else 0.0}))
    return sort_hits(out)


class StatementRoutingRetriever(Retriever):
    stage_name = "route_statement"

    def __init__(self, base: Retriever, resources: Any, boost: float = 0.5, covering_years: int = 0,
                 overfetch: int = 3, vocabulary: AnalystVocabulary | None = None):
        self.base = base
        self.resources = resources
        self.boost = boost
        self.covering_years = covering_years
        self.overfetch = overfetch
        self.vocabulary = vocabulary or default_vocabulary()
        self._parser: QueryParser | None = None

    @property
    def parser(self) -> QueryParser:
        if self._parser is None:
            self._parser = QueryParser(self.resources.get("catalog", required=False), self.covering_years)
        return self._parser

    def _retrieve(self, query: str, k: int, filters: SearchFilters | None, timings: Timings,
                  info: dict[str, Any]) -> list[Hit]:
        with timings.stage(self.stage_name):
            statements = statements_asked(query, self.resources.get("lexicon"), self.vocabulary)
            expanded = self.vocabulary.expand(query)
            wanted = self.parser.parse(query, scope=filters).to_filters()
        info["statements"] = statements
        if expanded != query:
            info["expanded_query"] = expanded
        result = self.base.retrieve(expanded, k * self.overfetch if statements else k, filters)
        timings.merge(result.timings_ms)
        if not statements:
            return result.hits[:k]
        with timings.stage("statement_boost"):
            store = self.resources.get("chunk_store", required=False)
            return boost_statements(result.hits, statements, store, self.boost,
                                    lambda h: hit_matches(h, wanted))[:k]
