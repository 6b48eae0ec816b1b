"""The records of the fact layer: a figure with its unit, scale, sign, period and where it was read."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any, Literal

SourceKind = Literal["table_row", "xbrl_fact"]


@dataclass(frozen=True)
class FactSource:
    """Where a figure was read: a table-row cell (PDF or HTML) or an inline-XBRL fact.

    ``chunk_id`` is the table-row chunk that prints the figure (what an answer cites); an XBRL
    fact gets the chunk of the table row that displays it when one was found on its page."""

    kind: SourceKind
    filing_id: str
    page: int | None
    chunk_id: str | None = None
    # table-row cell
    table_id: str | None = None
    row_index: int | None = None
    row_label: str | None = None
    column_header: str | None = None
    table_title: str | None = None
    statement_type: str | None = None
    # XBRL fact
    concept: str | None = None
    context_id: str | None = None
    fact_id: str | None = None
    dimensions: tuple[tuple[str, str], ...] = ()
    unit_inferred: bool = False   # the table printed no unit: the filing's statement unit was assumed

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if v not in (None, (), False)}
        if self.dimensions:
            out["dimensions"] = dict(self.dimensions)
        return out

    def describe(self) -> str:
        """'p.40 row "Total net sales" [2022]' or 'p.31 XBRL us-gaap:Revenues (c-1)'."""
        page = f"p.{self.page}" if self.page else "p.?"
        if self.kind == "table_row":
            return f'{page} row "{self.row_label}" [{self.column_header}]'
        dims = ", ".join(f"{a}={m}" for a, m in self.dimensions)
        return f"{page} XBRL {self.concept} ({self.context_id}{'; ' + dims if dims else ''})"


@dataclass
class FactValue:
    """One figure. ``value`` is as stated in ``scale`` units with its sign applied
    (394328 with scale 10**6 and unit "USD" is $394,328 million; "(10,708)" is -10708)."""

    filing_id: str
    line_item: str                 # lexicon concept key ("revenue") or the label asked
    label: str                     # row label or XBRL concept as filed
    period: str                    # fiscal-year label "FY2022" (durations and period-end instants)
    period_end: date | None
    value: Decimal
    unit: str | None               # base unit: "USD", "USD per share", "shares", "percent", None
    scale: int                     # multiplier of ``value``: 1, 1_000, 1_000_000, 1_000_000_000
    value_text: str
    source: FactSource
    corroborated_by: list[FactSource] = field(default_factory=list)

    @property
    def sign(self) -> int:
        return -1 if self.value < 0 else 1

    @property
    def base_value(self) -> Decimal:
        return self.value * self.scale

    def as_dict(self) -> dict[str, Any]:
        return {"line_item": self.line_item, "label": self.label, "period": self.period,
                "period_end": self.period_end.isoformat() if self.period_end else None,
                "value": str(self.value), "unit": self.unit, "scale": self.scale, "sign": self.sign,
                "value_text": self.value_text, "source": self.source.as_dict(),
                "corroborated_by": [s.as_dict() for s in self.corroborated_by]}


@dataclass(frozen=True)
class Disagreement:
    """A figure found both as an XBRL fact and in a table row with different values (kept as data)."""

    filing_id: str
    line_item: str
    period: str
    fact_value: Decimal
    row_value: Decimal                  # in base units (scale applied)
    fact_source: FactSource
    row_source: FactSource

    def as_row(self) -> dict[str, Any]:
        return {"filing_id": self.filing_id, "line_item": self.line_item, "period": self.period,
                "fact_value": float(self.fact_value), "row_value": float(self.row_value),
                "concept": self.fact_source.concept, "fact_id": self.fact_source.fact_id,
                "table_id": self.row_source.table_id, "row_label": self.row_source.row_label,
                "page": self.row_source.page}
