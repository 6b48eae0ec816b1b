"""Small statements copied as printed (page, label, figures) from a 10-K, for calculator tests that check a rule
without parsing the PDF: one shared builder (test_analyst_calculator.py, test_analyst_company_terms.py)."""

from __future__ import annotations


def statement_rows(fid: str, page: int, title: str, unit: str, years: tuple[int, ...], rows: list[tuple]):
    """TableRows of one statement table: ``rows`` are (label, figure as printed per year, ...)."""
    from finrag_pipeline.core.models import TableCell, TableRow

    out = []
    for i, (label, *values) in enumerate(rows):
        cells = [TableCell(str(y), f"FY{y}", text, float(text.replace(",", "").replace("(", "-").rstrip(")")))
                 for y, text in zip(years, values, strict=True)]
        out.append(TableRow(fid, f"{fid}:p{page}:t0", i, page, "Item 8", title, "USD " + unit, f"(in {unit})",
                            label, [""] + [str(y) for y in years], cells))
    return out
