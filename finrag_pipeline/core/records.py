"""Read warehouse rows back into the core dataclasses (the inverse of ``to_row``)."""

from __future__ import annotations

import dataclasses
import functools
import json
import typing
from datetime import date, datetime
from typing import Any, TypeVar

import pandas as pd

from finrag_pipeline.core.models import Chunk, EvidencePlace, Page, QAItem, TableCell, TableRow, XbrlFact
from finrag_pipeline.core.warehouse import Warehouse

T = TypeVar("T")


def _clean(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and value != value:
        return None
    if value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp | datetime):
        return value.date()
    if hasattr(value, "item") and not isinstance(value, str | bytes | date):
        return value.item()  # numpy scalar -> python
    return value


@functools.cache
def _int_fields(cls: type) -> frozenset[str]:
    """Fields annotated int / int | None: pandas reads an INTEGER column holding a NULL as float."""
    hints = typing.get_type_hints(cls)
    return frozenset(name for name, hint in hints.items()
                     if hint is int or (int in typing.get_args(hint) and float not in typing.get_args(hint)))


def from_row(cls: type[T], row: dict[str, Any]) -> T:
    """A dataclass from a warehouse row: NULL/NaN/NaT become None (never NaN), integral floats in
    int fields become int, JSON text fields are decoded."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    json_fields = getattr(cls, "json_fields", ())
    ints = _int_fields(cls)
    values = {}
    for key in names & row.keys():
        value = _clean(row[key])
        if key in json_fields and isinstance(value, str):
            value = json.loads(value)
        elif key in ints and isinstance(value, float) and value.is_integer():
            value = int(value)
        values[key] = value
    return cls(**values)


def table_row_from_row(row: dict[str, Any]) -> TableRow:
    tr = from_row(TableRow, row)
    tr.cells = [TableCell(**c) if isinstance(c, dict) else c for c in tr.cells]
    if not tr.row_path:  # rows written before row_path existed: the label alone
        tr.row_path = [tr.row_label]
    return tr


def qa_item_from_row(row: dict[str, Any]) -> QAItem:
    """A stored item; one written before the answer contract existed (answer_values NULL) gets it
    derived here, so old warehouses score under the same rules (core/scoring/answer_contract.py)."""
    from finrag_pipeline.core.scoring.answer_contract import ensure_contract

    item = from_row(QAItem, row)
    item.evidence = [[EvidencePlace(**p) if isinstance(p, dict) else p for p in group] for group in item.evidence]
    item.answer_values = item.answer_values or []
    return ensure_contract(item)


def load_pages(wh: Warehouse, filing_id: str) -> list[Page]:
    df = wh.query_df("SELECT * FROM core.pages WHERE filing_id = ? ORDER BY page_number", [filing_id])
    return [from_row(Page, r) for r in df.to_dict("records")]


def load_table_rows(wh: Warehouse, filing_id: str) -> list[TableRow]:
    df = wh.query_df("SELECT * FROM core.table_rows WHERE filing_id = ? ORDER BY page_number, table_id, row_index",
                     [filing_id])
    return [table_row_from_row(r) for r in df.to_dict("records")]


def load_facts(wh: Warehouse, filing_id: str) -> list[XbrlFact]:
    df = wh.query_df("SELECT * FROM core.xbrl_facts WHERE filing_id = ? ORDER BY fact_id", [filing_id])
    return [from_row(XbrlFact, r) for r in df.to_dict("records")]


def _filing_where(filing_id: str | None, condition: str | None) -> tuple[str, list[Any]]:
    """A WHERE clause for one filing (or all) and an optional fixed condition, with its parameters."""
    clauses = [c for c in ("filing_id = ?" if filing_id is not None else None, condition) if c]
    return (f"WHERE {' AND '.join(clauses)}" if clauses else ""), ([filing_id] if filing_id is not None else [])


def load_chunks(wh: Warehouse, filing_id: str | None = None, *, leaves_only: bool = False) -> list[Chunk]:
    where, params = _filing_where(filing_id, "is_leaf" if leaves_only else None)
    df = wh.query_df(f"SELECT * FROM core.chunks {where} ORDER BY filing_id, position", params)
    return [from_row(Chunk, r) for r in df.to_dict("records")]


def load_qa_items(wh: Warehouse, filing_id: str | None = None, *, accepted_only: bool = True) -> list[QAItem]:
    where, params = _filing_where(filing_id, "status IN ('accepted', 'edited')" if accepted_only else None)
    df = wh.query_df(f"SELECT * FROM qa.items {where} ORDER BY filing_id, qa_id", params)
    return [qa_item_from_row(r) for r in df.to_dict("records")]


def migrate_stored_items(warehouse: Any) -> int:
    """Write the derived contract back for stored items that have none (a warehouse from before the
    contract: ``ensure_tables`` added the NULL columns). Returns the number of items rewritten;
    re-running rewrites nothing."""
    df = warehouse.query_df("SELECT * FROM qa.items WHERE answer_values IS NULL")
    items = [qa_item_from_row(r) for r in df.to_dict("records")]   # derives the contract on load
    if not items:
        return 0
    for item in items:
        # "[]" (not NULL) records that the contract was derived, also for items with nothing to commit to
        item.answer_values = item.answer_values or []
    warehouse.replace_rows("qa.items", [i.to_row() for i in items], where={"qa_id": [i.qa_id for i in items]})
    return len(items)
