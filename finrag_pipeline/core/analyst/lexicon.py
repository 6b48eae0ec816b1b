"""The financial concept lexicon (assets_config/lexicon.yaml): question words -> statement labels.

A question says "capital expenditure"; Apple's cash-flow statement says "Payments for acquisition of
property, plant and equipment". Lexical retrieval cannot bridge that; the lexicon does, for
multi-query expansion and for the line-item feature of the features reranker.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finrag_pipeline.core.config import config_path, read_yaml
from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR

DEFAULT_LEXICON_PATH = ASSETS_CONFIG_DIR / "lexicon.yaml"
STATEMENTS = ("income_statement", "balance_sheet", "cash_flow")


@dataclass
class Concept:
    key: str
    aliases: list[str] = field(default_factory=list)
    line_items: list[str] = field(default_factory=list)
    components: list[str] = field(default_factory=list)
    statement: str | None = None     # income_statement | balance_sheet | cash_flow (where the line lives)
    xbrl: list[str] = field(default_factory=list)   # us-gaap concepts carrying the figure
    formula: str | None = None       # a derived figure: arithmetic over other concept keys
    unit: str | None = None          # the figure's unit when it is not an amount (percent, ratio, days, ...)
    outflow: bool = False            # cash paid out, printed negative in the cash-flow statement
    fallback: str | None = None      # a base line not printed as one row: the formula of its parts (calculator)
    expense: bool = False            # a cost: some filers print it in parentheses; computed with as an amount
    parts_labelled: list[str] = field(default_factory=list)  # a line some filers print only as several rows whose
                                     # labels start with these words ("Cost of services" + "Cost of wireless
                                     # equipment"): their sum, on the concept's statement (calculator)
    unsuited_without: str | None = None  # a concept key: a filer whose statements print no such line (a bank, a
                                     # carrier reporting costs by nature) is one for which this figure is "not a
                                     # useful metric" (said, no figure forced)

    @property
    def phrases(self) -> list[str]:
        """Every phrase that names the figure in a passage (aliases and line items)."""
        return _unique([*self.aliases, *self.line_items, *self.components])


@dataclass(frozen=True)
class ConceptMatch:
    concept: Concept
    alias: str       # the alias as it matched
    start: int
    end: int


def _unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for x in items:
        seen.setdefault(x, None)
    return list(seen)


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    # Whole words, flexible whitespace and optional apostrophes/hyphens ("shareholders' equity" ==
    # "shareholders equity", "long-term" == "long term").
    parts = [re.escape(p) for p in re.split(r"[\s\-]+", phrase.lower().replace("'", "").replace("\u2019", "")) if p]
    body = r"[\s\-]+".join(parts)
    return re.compile(r"(?<![\w&])" + body + r"(?![\w&])", re.IGNORECASE)


def normalize_text(text: str) -> str:
    return text.lower().replace("'", "").replace("\u2019", "")


def _parsed_yaml(path: Path) -> dict:
    """The file's YAML, parsed once per version of the file (path, size, mtime) in this process: every
    QA set, evaluation session and answerer loads the lexicon, and parsing it is most of that cost.
    A deep copy is returned, so a caller can never change what the next one reads."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _YAML_CACHE:
        _YAML_CACHE[key] = read_yaml(path)
    return copy.deepcopy(_YAML_CACHE[key])


_YAML_CACHE: dict[tuple[str, int, int], dict] = {}
_MATCH_MEMO_SIZE = 4096   # texts whose concepts one lexicon keeps (an evaluation asks a few hundred)


class Lexicon:
    def __init__(self, concepts: Iterable[Concept] = ()):
        self.concepts: dict[str, Concept] = {}
        self._patterns: dict[str, re.Pattern[str]] = {}
        self._matches: dict[str, tuple[ConceptMatch, ...]] = {}
        for c in concepts:
            self.add(c)

    def add(self, concept: Concept) -> None:
        """Add or merge (same key: lists appended, duplicates dropped) so user files extend ours."""
        old = self.concepts.get(concept.key)
        if old is None:
            self.concepts[concept.key] = concept
        else:
            old.aliases = _unique([*old.aliases, *concept.aliases])
            old.line_items = _unique([*old.line_items, *concept.line_items])
            old.components = _unique([*old.components, *concept.components])
            old.xbrl = _unique([*old.xbrl, *concept.xbrl])
            old.statement = concept.statement or old.statement
            old.formula = concept.formula or old.formula
            old.unit = concept.unit or old.unit
            old.outflow = concept.outflow or old.outflow
            old.fallback = concept.fallback or old.fallback
            old.expense = concept.expense or old.expense
            old.parts_labelled = _unique([*old.parts_labelled, *concept.parts_labelled])
            old.unsuited_without = concept.unsuited_without or old.unsuited_without
        self._patterns = {}
        self._matches = {}

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Lexicon:
        concepts = (data or {}).get("concepts", data or {})
        out = []
        for key, spec in concepts.items():
            spec = spec or {}
            unknown = set(spec) - {"aliases", "line_items", "components", "statement", "xbrl", "formula", "unit",
                                   "outflow", "fallback", "expense", "parts_labelled",
                                   "unsuited_without"}
            if unknown:
                raise ValueError(f"lexicon concept {key!r}: unknown fields {sorted(unknown)}")
            statement = spec.get("statement")
            if statement is not None and statement not in STATEMENTS:
                raise ValueError(f"lexicon concept {key!r}: statement {statement!r} is not one of {STATEMENTS}")
            out.append(Concept(key, [str(a) for a in spec.get("aliases", [])],
                               [str(a) for a in spec.get("line_items", [])],
                               [str(a) for a in spec.get("components", [])],
                               statement=statement, xbrl=[str(a) for a in spec.get("xbrl", [])],
                               formula=str(spec["formula"]) if spec.get("formula") else None,
                               unit=str(spec["unit"]) if spec.get("unit") else None,
                               outflow=bool(spec.get("outflow", False)),
                               fallback=str(spec["fallback"]) if spec.get("fallback") else None,
                               expense=bool(spec.get("expense", False)),
                               parts_labelled=[str(a) for a in spec.get("parts_labelled", [])],
                               unsuited_without=str(spec["unsuited_without"]) if spec.get("unsuited_without") else None))
        return cls(out)

    @classmethod
    def load(cls, *paths: str | Path) -> Lexicon:
        """Load and merge lexicon files, later files extending earlier ones."""
        lex = cls()
        for p in paths:
            for concept in cls.from_mapping(_parsed_yaml(Path(p))).concepts.values():
                lex.add(concept)
        return lex

    @classmethod
    def load_default(cls, extra_paths: Iterable[str | Path] = ()) -> Lexicon:
        """lexicon.yaml (then ``extra_paths``), with the companies' own names for a concept that the analyst
        vocabulary holds (``printed_as``: Netflix's "Technology and development" is research and development)
        added after the concept's own labels."""
        from finrag_pipeline.core.analyst.vocabulary import company_labels

        lex = cls.load(config_path("lexicon.yaml"), *extra_paths)
        for key, labels in company_labels().items():
            if key not in lex.concepts:
                raise ValueError(f"analyst_vocabulary.yaml: printed_as names no lexicon concept {key!r}")
            lex.add(Concept(key, line_items=list(labels)))
        return lex

    def _pattern(self, phrase: str) -> re.Pattern[str]:
        pat = self._patterns.get(phrase)
        if pat is None:
            pat = self._patterns[phrase] = _phrase_pattern(phrase)
        return pat

    def contains(self, text: str, phrase: str) -> bool:
        return self._pattern(phrase).search(normalize_text(text)) is not None

    def contains_any(self, text: str, phrases: Iterable[str]) -> bool:
        """``contains`` for several phrases, the text normalised once (the reranker asks every hit for each of a
        question's line items)."""
        norm = normalize_text(text)
        return any(self._pattern(p).search(norm) is not None for p in phrases)

    def match(self, text: str) -> list[ConceptMatch]:
        """Concepts named in a text, longest alias first and non-overlapping ("quick ratio" wins
        over "ratio"; "net sales" inside "total net sales" counts once).

        Read once per text and lexicon: every retriever, planner and answerer of an evaluation asks for the
        same question's concepts (hundreds of alias patterns each time). Concepts change only through
        :meth:`add`, which forgets what was read."""
        known = self._matches.get(text)
        if known is None:
            if len(self._matches) >= _MATCH_MEMO_SIZE:
                self._matches.clear()
            known = self._matches[text] = tuple(self._match(text))
        return list(known)

    def _match(self, text: str) -> list[ConceptMatch]:
        norm = normalize_text(text)
        found: list[ConceptMatch] = []
        candidates = sorted(((alias, c) for c in self.concepts.values() for alias in c.aliases),
                            key=lambda ac: (-len(ac[0]), ac[1].key))
        taken: list[tuple[int, int]] = []
        for alias, concept in candidates:
            for m in self._pattern(alias).finditer(norm):
                if any(m.start() < e and s < m.end() for s, e in taken):
                    continue
                if any(f.concept.key == concept.key for f in found):
                    taken.append((m.start(), m.end()))
                    continue
                taken.append((m.start(), m.end()))
                found.append(ConceptMatch(concept, alias, m.start(), m.end()))
        return sorted(found, key=lambda f: f.start)

    def expand(self, question: str, max_queries: int = 8) -> list[str]:
        """Search texts for a question: the question itself, then the question with the concept
        phrase replaced by each statement line item, then one search per component (with the
        question's remaining context, e.g. company and year, kept)."""
        queries = [question]
        norm = normalize_text(question)
        for m in self.match(question):
            head, tail = norm[:m.start], norm[m.end:]
            for item in m.concept.line_items:
                if item.lower() != m.alias.lower():
                    queries.append(f"{head}{item}{tail}".strip())
            context = (head + " " + tail).strip()
            for comp in m.concept.components:
                queries.append(f"{comp} {context}".strip())
        return _unique(q for q in queries if q)[:max_queries]

    def line_items_for(self, text: str) -> list[str]:
        """Statement labels a passage should contain to answer a text (for the features reranker)."""
        return _unique(p for m in self.match(text) for p in [*m.concept.line_items, *m.concept.components,
                                                              m.alias])
