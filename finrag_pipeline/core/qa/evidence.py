"""Where a figure appears: every leaf chunk and page that states it, as alternative EvidencePlaces.

A figure such as Apple's FY2022 net sales (394,328) is printed in the income statement, the
segment note and MD&A; a retriever that finds any of them found the evidence. Numbers are indexed
once per filing (digits without commas) so mapping hundreds of figures stays fast.
"""

from __future__ import annotations

import re
from collections import defaultdict

from finrag_pipeline.core.models import Chunk, EvidencePlace, Page, TableRow
from finrag_pipeline.core.numbers import is_distinctive, number_tokens

_WORD_RE = re.compile(r"[a-z]{3,}")
_STOP = {"total", "net", "and", "the", "for", "other", "from", "income", "expense", "expenses", "of"}


def label_words(label: str) -> set[str]:
    """Content words of a row label, used to confirm a short, common number really is this figure."""
    words = set(_WORD_RE.findall(label.lower()))
    return (words - _STOP) or words


class EvidenceIndex:
    """Inverted index number-key -> leaf chunks / pages of one filing."""

    def __init__(self, filing_id: str, pages: list[Page], chunks: list[Chunk]):
        self.filing_id = filing_id
        self.pages = {p.page_number: p for p in pages}
        self.page_text_lower = {n: p.text.lower() for n, p in self.pages.items()}
        self.leaves = [c for c in chunks if c.is_leaf and c.filing_id == filing_id]
        self.chunk_by_id = {c.chunk_id: c for c in chunks}
        self.row_chunk: dict[tuple[str, int], Chunk] = {}
        self.by_number_chunk: dict[str, list[Chunk]] = defaultdict(list)
        self.by_number_page: dict[str, list[int]] = defaultdict(list)
        self.page_tokens: dict[int, set[str]] = {}
        for c in self.leaves:
            if c.chunk_type == "table_row" and c.table_id is not None and "row_index" in c.metadata:
                self.row_chunk[(c.table_id, int(c.metadata["row_index"]))] = c
            for key in number_tokens(c.text):
                self.by_number_chunk[key].append(c)
        for n, p in self.pages.items():
            toks = number_tokens(p.text)
            self.page_tokens[n] = toks
            for key in toks:
                self.by_number_page[key].append(n)

    def page_states(self, page: int, key: str) -> bool:
        return key in self.page_tokens.get(page, ())

    def _confirmed(self, key: str, text_lower: str, words: set[str]) -> bool:
        # Short or year-like numbers ("334", "2022") occur everywhere; require a label word too.
        return is_distinctive(key) or not words or any(w in text_lower for w in words)

    def places(self, key: str, label: str = "", row: TableRow | None = None,
               page_hint: int | None = None) -> list[EvidencePlace]:
        """Every (chunk, page) stating the number ``key``; the row's own chunk first.

        A place's page is a page of the chunk whose text contains the number, so the evidence page
        always states the figure. With no chunks at all, pages alone are returned (chunk_id None)."""
        words = label_words(label)
        out: list[EvidencePlace] = []
        seen: set[tuple[str | None, int]] = set()

        def add(chunk_id: str | None, page: int) -> None:
            if (chunk_id, page) not in seen:
                seen.add((chunk_id, page))
                out.append(EvidencePlace(chunk_id=chunk_id, page=page, filing_id=self.filing_id))

        if row is not None and (c := self.row_chunk.get((row.table_id, row.row_index))) is not None \
                and self.page_states(row.page_number, key):
            add(c.chunk_id, row.page_number)
        for c in self.by_number_chunk.get(key, []):
            if not self._confirmed(key, c.text.lower(), words):
                continue
            pages = [p for p in range(c.page_start, c.page_end + 1) if self.page_states(p, key)]
            if page_hint in pages:
                pages = [page_hint]
            if pages:
                add(c.chunk_id, pages[0])
        if not self.leaves:
            for p in self.by_number_page.get(key, []):
                if self._confirmed(key, self.page_text_lower[p], words):
                    add(None, p)
        return out
