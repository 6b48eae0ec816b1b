"""The texts an answer cites, whatever it cites: a retrieved chunk, any chunk of the warehouse (a
table row the calculator read without retrieving it), an XBRL fact, or a page.

Grounding (answer_metrics.grounding) and the period check read what an answer cites. Reading only
the retrieved chunks counted the calculator's right answers as ungrounded: it cites the table-row
chunks and XBRL facts it computed from, which retrieval need not have returned. A citation is
``(filing_id, page, chunk_id)`` (answerers.Citation); :class:`CitedEvidence` resolves it, in order:

1. ``chunk_id`` among the retrieved hits -> the hit's text;
2. ``chunk_id`` in ``core.chunks`` -> that chunk's text (a table row: "label | 2022: 394,328 | USD millions");
3. ``chunk_id`` an XBRL ``fact_id`` -> the fact written as a table row (concept | year: value as displayed | unit
   and scale), so its scale is known;
4. no chunk (an XBRL fact displayed in no table row): the retrieved hits on the page, else the page's
   text and the XBRL facts tagged on it.

Tables are read once per filing and kept (a few thousand rows each).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.numbers import SCALE_NAME

Citation = tuple[str, int, Any]


class CitedEvidence:
    """Resolves citations to texts from a warehouse (anything with ``query_df(sql, params)``)."""

    def __init__(self, warehouse: Any) -> None:
        self.warehouse = warehouse
        self._chunks: dict[str, dict[str, str]] = {}
        self._pages: dict[str, dict[int, str]] = {}
        self._facts: dict[str, dict[str, dict[str, Any]]] = {}

    # -- per-filing tables, read once ---------------------------------------------------------

    def _filing_chunks(self, filing_id: str) -> dict[str, str]:
        if filing_id not in self._chunks:
            df = self.warehouse.query_df("SELECT chunk_id, text FROM core.chunks WHERE filing_id = ?", [filing_id])
            self._chunks[filing_id] = dict(zip(df.chunk_id, df.text, strict=True))
        return self._chunks[filing_id]

    def _filing_pages(self, filing_id: str) -> dict[int, str]:
        if filing_id not in self._pages:
            df = self.warehouse.query_df("SELECT page_number, text FROM core.pages WHERE filing_id = ?", [filing_id])
            self._pages[filing_id] = {int(p): str(t or "") for p, t in zip(df.page_number, df.text, strict=True)}
        return self._pages[filing_id]

    def _filing_facts(self, filing_id: str) -> dict[str, dict[str, Any]]:
        if filing_id not in self._facts:
            df = self.warehouse.query_df(
                "SELECT fact_id, concept, value_text, unit, scale, period_end, page_number FROM core.xbrl_facts "
                "WHERE filing_id = ?", [filing_id])
            self._facts[filing_id] = {r["fact_id"]: r for r in df.to_dict("records")}
        return self._facts[filing_id]

    # -- resolution -----------------------------------------------------------------------------

    def texts(self, citations: Sequence[Citation], hits: Sequence[Hit] = ()) -> list[str]:
        """The texts of every citation, each once, in citation order."""
        out: list[str] = []
        by_id = {h.chunk_id: h for h in hits}
        for filing, page, chunk_id in citations:
            for text in self.resolve(str(filing), int(page or 0), chunk_id, hits, by_id):
                if text and text not in out:
                    out.append(text)
        return out

    def resolve(self, filing_id: str, page: int, chunk_id: str | None, hits: Sequence[Hit] = (),
                by_id: dict[str, Hit] | None = None) -> list[str]:
        by_id = by_id if by_id is not None else {h.chunk_id: h for h in hits}
        if chunk_id:
            if chunk_id in by_id:
                return [by_id[chunk_id].text]
            chunk = self._filing_chunks(filing_id).get(chunk_id)
            if chunk is not None:
                return [chunk]
            fact = self._filing_facts(filing_id).get(chunk_id)
            if fact is not None:
                return [fact_text(fact)]
        on_page = [h.text for h in hits if h.filing_id == filing_id and h.page_start <= page <= h.page_end]
        if on_page:
            return on_page
        page_text = self._filing_pages(filing_id).get(page)
        facts = [fact_text(f) for f in self._filing_facts(filing_id).values() if f.get("page_number") == page]
        return [t for t in (page_text, *facts) if t]


def fact_text(fact: dict[str, Any]) -> str:
    """An XBRL fact as a table-row text: "us-gaap:Revenues | 2022: 394,328 | USD millions" (the value as
    displayed, with the scale it is displayed in, so a figure read from it keeps its scale)."""
    end = fact.get("period_end")
    year = getattr(end, "year", None) or (str(end)[:4] if end else "")
    scale = SCALE_NAME.get(10.0 ** int(fact.get("scale") or 0), "")
    unit = str(fact.get("unit") or "")
    unit_text = {"USD/shares": "USD per share", "pure": ""}.get(unit, unit)
    if scale and unit_text in ("USD", "shares"):
        unit_text = f"{unit_text} {scale}s"
    return f"{fact.get('concept')} | {year}: {fact.get('value_text')} | {unit_text}".rstrip(" |")
