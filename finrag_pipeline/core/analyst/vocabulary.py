"""The analyst vocabulary (``assets_config/analyst_vocabulary.yaml``): how analysts abbreviate a figure
("capex", "PP&E", "D&A", "top line") -> the labels 10-K statements print, and the statement it lives on.

Kept apart from the lexicon (the fact layer's concepts) and from the QA generator's phrasing, so that
retrieval stages reading it are not tuned to the generator's own aliases. Used by statement routing
(``statement_routing.py``) and the ``decomposed`` retriever for query expansion.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from finrag_pipeline.core.config import config_path, read_yaml

StatementName = Literal["income_statement", "balance_sheet", "cash_flow"]


class VocabularyTerm(BaseModel):
    model_config = ConfigDict(extra="forbid")
    terms: list[str] = Field(min_length=1)
    expansions: list[str] = Field(min_length=1)
    statement: StatementName | None = None
    # a company's own name for the figure ("Technology and development" is Netflix's R&D): labels some filers print
    # in place of the standard one, read as lines of the lexicon concept ``concept`` (Lexicon.load_default adds
    # them after the concept's own labels, so the fact layer, the calculator and the lexicon's query expansion
    # read them); not appended to every search (``expansions`` is)
    printed_as: list[str] = Field(default_factory=list)
    concept: str | None = None

    @model_validator(mode="after")
    def _printed_as_names_a_concept(self) -> VocabularyTerm:
        if self.printed_as and not self.concept:
            raise ValueError("printed_as needs concept: the lexicon concept those labels are lines of")
        return self


class VocabularyFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    terms: dict[str, VocabularyTerm]


@dataclass(frozen=True)
class VocabularyMatch:
    key: str
    term: str
    expansions: tuple[str, ...]
    statement: str | None


def _term_pattern(term: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in re.split(r"[\s\-]+", term.lower()) if p]
    return re.compile(r"(?<![\w&])" + r"[\s\-]+".join(parts) + r"(?![\w&])", re.IGNORECASE)


class AnalystVocabulary:
    def __init__(self, file: VocabularyFile):
        self.file = file
        self._patterns = [(key, t, _term_pattern(t), spec) for key, spec in file.terms.items()
                          for t in sorted(spec.terms, key=len, reverse=True)]

    @classmethod
    def load(cls, path: str | Path | None = None) -> AnalystVocabulary:
        path = Path(path or config_path("analyst_vocabulary.yaml"))
        return cls(VocabularyFile.model_validate(read_yaml(path)))   # a missing file: read_yaml names it

    def match(self, text: str) -> list[VocabularyMatch]:
        """Terms named in ``text``, in order of first appearance, one match per key."""
        found: dict[str, tuple[int, VocabularyMatch]] = {}
        for key, term, pattern, spec in self._patterns:
            m = pattern.search(text)
            if m and (key not in found or m.start() < found[key][0]):
                found[key] = (m.start(), VocabularyMatch(key, term, tuple(spec.expansions), spec.statement))
        return [v for _, v in sorted(found.values(), key=lambda x: x[0])]

    def expansions(self, text: str) -> list[str]:
        """The printed labels of every analyst term ``text`` uses and does not already spell out, in order
        ("How much did Microsoft spend on R&D?" -> ["research and development"])."""
        out: list[str] = []
        for m in self.match(text):
            for e in m.expansions:
                if not _term_pattern(e).search(text) and e not in out:
                    out.append(e)
        return out

    def expand(self, text: str) -> str:
        """``text`` with the printed labels of every analyst term it uses appended (for the search only)."""
        extra = self.expansions(text)
        return f"{text} {' '.join(extra)}" if extra else text


def default_vocabulary(path: str | None = None) -> AnalystVocabulary:
    """The vocabulary at ``path`` (default: analyst_vocabulary.yaml as resolved now), loaded once per file."""
    return _vocabulary_at(str(path or config_path("analyst_vocabulary.yaml")))


@lru_cache(maxsize=4)
def _vocabulary_at(path: str) -> AnalystVocabulary:
    return AnalystVocabulary.load(path)


def company_labels(path: str | None = None) -> dict[str, list[str]]:
    """Public: lexicon concept key -> the labels companies print for it under their own name
    (``printed_as``), e.g. ``research_and_development -> ["technology and development", "product development", ...]``."""
    out: dict[str, list[str]] = {}
    for spec in default_vocabulary(path).file.terms.values():
        if spec.concept and spec.printed_as:
            out.setdefault(spec.concept, []).extend(x for x in spec.printed_as if x not in out.get(spec.concept, []))
    return out


def query_expansions(query: str, path: str | None = None) -> list[str]:
    """Public: the statement labels the analyst terms of a query stand for (abbreviations and synonyms of
    assets_config/analyst_vocabulary.yaml), for query expansion in retrieval: "R&D" -> "research and
    development", "DSO" -> "accounts receivable net", "total net sales". Terms the query already spells
    out are not repeated."""
    return default_vocabulary(path).expansions(query)
