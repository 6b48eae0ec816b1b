"""Which financial statement a table is (contract 1 of docs: owned by the ingest branch).

This is the interim title-keyword implementation the cross-branch contract allows; the ingest
branch's version (with row structure) replaces it at merge time. Same API.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

STATEMENT_TYPES = ("income_statement", "balance_sheet", "cash_flow", "equity", "segment_note", "other")

_TITLE_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("segment_note", re.compile(r"\bsegments?\b|\bby (geograph|region|reportable)", re.I)),
    ("cash_flow", re.compile(r"\bcash flows?\b", re.I)),
    ("equity", re.compile(r"\b(shareholders|stockholders)['\u2019]? equity\b|\bchanges in equity\b", re.I)),
    ("balance_sheet", re.compile(r"\bbalance sheets?\b|\bfinancial (position|condition)\b", re.I)),
    ("income_statement", re.compile(r"\bstatements? of (consolidated )?(operations|income|earnings)\b"
                                    r"|\bincome statements?\b", re.I)),
)
_LABEL_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cash_flow", ("operating activities", "investing activities", "financing activities")),
    ("balance_sheet", ("total assets", "total current assets", "total liabilities", "total current liabilities")),
    ("income_statement", ("net income", "operating income", "income before", "provision for income taxes",
                          "gross margin", "gross profit", "earnings per share", "cost of sales", "total revenues",
                          "net sales", "total net sales", "earnings from operations", "net earnings")),
)


def classify_table(title: str | None, row_labels: Sequence[str], section: str | None = None) -> str:
    """The statement type of a table from its title, else from the line items its rows carry."""
    t = title or ""
    if "statement" in t.lower() or "balance sheet" in t.lower() or "segment" in t.lower():
        for kind, pattern in _TITLE_RULES:
            if pattern.search(t):
                return kind
    labels = " | ".join(label.lower() for label in row_labels)
    hits = {kind: sum(1 for phrase in phrases if phrase in labels) for kind, phrases in _LABEL_RULES}
    best = max(hits, key=lambda k: hits[k])
    return best if hits[best] >= 2 else "other"
