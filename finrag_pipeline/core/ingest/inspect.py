"""What ingest reads from one file, without registering it: ``finrag inspect FILE`` and the robustness
benchmark both call :func:`inspect_filing`. A refusal is reported (status, reason, remedy), never raised."""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from finrag_pipeline.core.ingest.errors import IngestError
from finrag_pipeline.core.ingest.metadata import CoverInfo
from finrag_pipeline.core.ingest.parse import parse_filing
from finrag_pipeline.core.ingest.statements import STATEMENT_TYPES, statement_periods, statement_search
from finrag_pipeline.core.ingest.tables import clean_text, currency_unit_violations

PRIMARY_STATEMENTS = ("income_statement", "balance_sheet", "cash_flow")

_REMEDIES = {
    "needs_ocr": "run OCR (e.g. ocrmypdf) and ingest the result",
    "corrupt": "download the filing again; the bytes do not open as a PDF/HTML document",
    "empty": "the file has no content; download it again",
    "unsupported": "ingest the 10-K as PDF or as the EDGAR inline-XBRL .htm primary document",
    "not_a_filing": "if it is a 10-K, add a sidecar <file>.yaml with company: and fiscal_year:",
}


def inspect_filing(path: str | Path, *, sidecar: Any = None, tables_page: int | None = None) -> dict[str, Any]:
    """Parse ``path`` and summarise what was read: metadata with sources, pages, sections, statements
    with periods and pages, table rows, units histogram, XBRL facts, warnings and seconds per stage.
    ``tables_page``: also every table row read on that 1-based page (``finrag inspect --tables PAGE``)."""
    path = Path(path)
    t0 = time.perf_counter()
    try:
        parsed = parse_filing(path, sidecar=sidecar)
    except IngestError as exc:
        report = {"file": str(path), "status": exc.status, "reason": exc.message,
                  "remedy": _REMEDIES.get(exc.status, ""), "seconds": round(time.perf_counter() - t0, 3)}
        cover = exc.details.get("cover")
        if cover is not None:
            report |= refusal_details(path, cover)
        return report
    meta = parsed.meta
    rows = parsed.table_rows
    statements: dict[str, dict[str, Any]] = {}
    tables_by_type: dict[str, set[str]] = {}
    for r in rows:
        kind = r.statement_type or "other"
        tables_by_type.setdefault(kind, set()).add(r.table_id)
        if kind not in PRIMARY_STATEMENTS and kind != "equity":
            continue
        s = statements.setdefault(kind, {"pages": [], "periods": [], "rows": 0, "tables": 0})
        s["rows"] += 1
        if r.page_number not in s["pages"]:
            s["pages"].append(r.page_number)
        s["periods"] = statement_periods([*s["periods"], *(c.period for c in r.cells)])
    for kind, s in statements.items():
        s["tables"] = len(tables_by_type.get(kind, ()))
    sections = Counter(p.section for p in parsed.pages if p.section)
    with_period = sum(1 for r in rows if any(c.period for c in r.cells))
    numeric = [r for r in rows if any(c.value is not None for c in r.cells)]
    section_names = {p.page_number: clean_text(" ".join(x for x in (p.section, p.section_title) if x))
                     for p in parsed.pages}
    violations = currency_unit_violations(rows)
    warnings: list[str] = []
    table_pages = sorted({r.page_number for r in rows})
    for kind in (k for k in (*PRIMARY_STATEMENTS, "equity") if k not in statements):
        headed = statement_search([p.text for p in parsed.pages], kind)
        warnings.append(f"no {kind} found: searched the titles and line items of {len(rows)} rows in "
                        f"{len(table_pages)} table pages ({_page_ranges(table_pages)}); pages headed as one: "
                        f"{headed or 'none'}")
    if meta.review_reasons:
        warnings.append(f"in the review queue: {'; '.join(meta.review_reasons)}")
    if violations:
        warnings.append(f"{len(violations)} percentage/per-share rows carry a currency unit")
    if meta.metadata_confidence is not None and meta.metadata_confidence < 0.6:
        warnings.append(f"low metadata confidence {meta.metadata_confidence}: check company and fiscal year")
    n_pages = len(parsed.pages)
    seconds = round(time.perf_counter() - t0, 3)
    page_rows = None
    if tables_page is not None:
        page_rows = [{"table_id": r.table_id, "title": r.table_title, "statement_type": r.statement_type,
                      "unit": r.unit, "unit_text": r.unit_text, "row_path": r.row_path,
                      "cells": [{"header": c.header, "period": c.period, "value": c.value_text,
                                 **({"unit": c.unit} if c.unit else {})} for c in r.cells]}
                     for r in rows if r.page_number == tables_page]
    return {
        "file": str(path), "status": "ok", "filing_id": meta.filing_id, **(
            {"tables_page": tables_page, "table_rows_on_page": page_rows} if page_rows is not None else {}),
        "metadata": {
            "company": meta.company, "ticker": meta.ticker, "cik": meta.cik, "form_type": meta.form_type,
            "fiscal_year": meta.fiscal_year, "period_end_date": meta.period_end_date.isoformat()
            if meta.period_end_date else None, "fiscal_year_end": meta.fiscal_year_end,
            "metadata_source": meta.metadata_source, "confidence": meta.metadata_confidence,
            "field_sources": meta.field_sources, "field_confidence": meta.field_confidence,
            "review_reasons": meta.review_reasons,
            "commission_file_number": parsed.cover.commission_file_number if parsed.cover else None,
            "trading_symbols": parsed.cover.trading_symbols if parsed.cover else [],
            "co_registrants": parsed.cover.co_registrants if parsed.cover else [],
        },
        "pages": n_pages,
        "sections": dict(sorted(sections.items(), key=lambda kv: kv[0])),
        "statements": {k: statements[k] for k in STATEMENT_TYPES if k in statements},
        "tables_by_type": {k: len(v) for k, v in sorted(tables_by_type.items())},
        "table_rows": len(rows),
        "rows_with_period_pct": round(100.0 * with_period / len(rows), 1) if rows else None,
        "units": dict(Counter(r.unit or "none" for r in rows).most_common()),
        "numeric_rows": len(numeric),
        "numeric_rows_with_unit": sum(1 for r in numeric if r.unit),
        "numeric_rows_with_title": sum(1 for r in numeric if r.table_title),
        # titled only by their page's section (the last fallback, add_table_context): a weak title
        "numeric_rows_titled_by_section": sum(1 for r in numeric if r.table_title and r.table_title == section_names.get(
            r.page_number)),
        "unit_violations": len(violations),
        "xbrl_facts": len(parsed.facts),
        "notes": list(parsed.notes),
        "warnings": warnings,
        "timings": parsed.timings,
        "seconds": seconds,
        "seconds_per_page": round(seconds / n_pages, 4) if n_pages else None,
    }


def _page_ranges(pages: list[int]) -> str:
    """[3, 4, 5, 9] -> "3-5, 9"."""
    out: list[str] = []
    for p in pages:
        if out and int(out[-1].split("-")[-1]) == p - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{p}"
        else:
            out.append(str(p))
    return ", ".join(out) or "none"


def refusal_details(path: Path, cover: CoverInfo) -> dict[str, Any]:
    """What a refused PDF showed: every candidate per field with why it was taken or passed over, the
    first 40 lines of its cover as read, and the sidecar that would register it (best guesses filled in)."""
    best = {c.field: c.value for c in cover.candidates if c.accepted}
    company = cover.company or best.get("company")
    year = cover.fiscal_year or best.get("fiscal_year")
    sidecar_lines = [f"company: {json.dumps(company or 'EXACT REGISTRANT NAME')}",
                     f"fiscal_year: {year or 'YYYY  # the year the fiscal year ends in'}"]
    if cover.ticker:
        sidecar_lines.append(f"ticker: {cover.ticker}")
    if cover.period_end_date:
        sidecar_lines.append(f"period_end_date: {cover.period_end_date.isoformat()}")
    sidecar_lines.append(f"form_type: {cover.form_type or '10-K'}")
    return {
        "candidates": [dataclasses.asdict(c) for c in cover.candidates],
        "cover_lines": list(cover.cover_lines),
        "sidecar_path": str(path.with_name(path.name + ".yaml")),
        "sidecar": "\n".join(sidecar_lines) + "\n",
    }


def format_inspection(report: dict[str, Any]) -> str:
    """Plain-text rendering for the terminal (values from the filing are shown as data, not markup)."""
    if report.get("status") != "ok":
        lines = [f"{report['file']}: {report['status']}", f"  reason: {report.get('reason')}",
                 f"  remedy: {report.get('remedy')}"]
        if report.get("candidates") is not None:
            lines.append("  candidates considered:")
            for c in report["candidates"]:
                mark = "taken" if c["accepted"] else "rejected"
                lines.append(f"    {c['field']:<11} {c['value']!r:<45.45} from {c['source']:<24} {mark}: {c['reason']}")
            if not report["candidates"]:
                lines.append("    (none: no registrant name or fiscal year anywhere it looked)")
            lines.append(f"  the cover as read (first {len(report['cover_lines'])} lines):")
            lines += [f"    | {ln}" for ln in report["cover_lines"]]
            lines.append(f"  this sidecar would register it ({report['sidecar_path']}):")
            lines += [f"    {ln}" for ln in report["sidecar"].splitlines()]
        return "\n".join(lines)
    m = report["metadata"]
    lines = [f"{report['file']} -> {report['filing_id']}",
             f"  company       {m['company']!r}  ({m['field_sources'].get('company', m['metadata_source'])})",
             f"  ticker        {m['ticker']}  ({m['field_sources'].get('ticker', '-')})   CIK {m['cik']}",
             f"  fiscal year   {m['fiscal_year']}  period end {m['period_end_date']}  form {m['form_type']}",
             f"  confidence    {m['confidence']}   source {m['metadata_source']}   file no. "
             f"{m['commission_file_number']}   symbols {m['trading_symbols'][:6]}",
             f"  pages         {report['pages']}   sections {len(report['sections'])}",
             "  statements:"]
    for kind, s in report["statements"].items():
        lines.append(f"    {kind:<17} pages {s['pages'][:6]}  periods {s['periods'][:6]}  rows {s['rows']}")
    lines += [f"  table rows    {report['table_rows']}  ({report['rows_with_period_pct']}% with a period)",
              f"  units         {report['units']}",
              f"  xbrl facts    {report['xbrl_facts']}",
              f"  seconds       {report['seconds']} ({report['seconds_per_page']} s/page)  "
              + " ".join(f"{k}={v}" for k, v in report["timings"].items())]
    lines += [f"  note: {n}" for n in report["notes"]]
    lines += [f"  warning: {w}" for w in report["warnings"]]
    if m.get("review_reasons"):
        lines.append(f"  review        {'; '.join(m['review_reasons'])}   confidence per field {m['field_confidence']}")
    if "table_rows_on_page" in report:
        lines.append(f"  table rows on page {report['tables_page']} ({len(report['table_rows_on_page'])}):")
        table = None
        for r in report["table_rows_on_page"]:
            if r["table_id"] != table:
                table = r["table_id"]
                lines.append(f"    [{table}] title {r['title']!r}  type {r['statement_type']}  unit {r['unit_text']!r}")
            cells = "  ".join(f"{c['period'] or c['header'] or '?'}={c['value']}" + (f" ({c['unit']})" if c.get("unit")
                                                                                       else "") for c in r["cells"])
            lines.append(f"      {' > '.join(r['row_path'])}  [{r['unit'] or 'no unit'}]  {cells}")
    return "\n".join(lines)


def read_manifest(path: str | Path) -> dict[str, dict[str, Any]]:
    """A corpus manifest (JSON lines with "file", "company", "fiscal_year_label"), keyed by file name."""
    import json

    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            entry = json.loads(line)
            out[Path(entry["file"]).name] = entry
    return out


def check_against_manifest(reports: list[dict[str, Any]], expected: dict[str, dict[str, Any]]
                           ) -> list[dict[str, Any]]:
    """Per file: registered without a sidecar?, company recognised as the manifest's company (by the
    query-understanding alias table built from what was read), fiscal year right?, primary statements
    tagged?, no currency unit on a percentage/per-share row? ``expected``: file name ->
    {"company": common name, "fiscal_year_label": int}."""
    from finrag_pipeline.core.company_map import load_company_map
    from finrag_pipeline.core.query_understanding import CorpusCatalog, QueryParser, company_key

    ok = [r for r in reports if r.get("status") == "ok"]
    catalog = CorpusCatalog([{"filing_id": r["filing_id"], "ticker": r["metadata"]["ticker"],
                              "company": r["metadata"]["company"], "fiscal_year": r["metadata"]["fiscal_year"],
                              "period_end_date": r["metadata"]["period_end_date"], "cik": r["metadata"]["cik"]}
                             for r in ok])
    parser = QueryParser(catalog)
    rows = []
    for r in reports:
        name = Path(r["file"]).name
        exp = expected.get(name, {})
        row: dict[str, Any] = {"file": name, "registered": r.get("status") == "ok", "status": r.get("status"),
                               "expected_company": exp.get("company"), "expected_fy": exp.get("fiscal_year_label")}
        if row["registered"]:
            m = r["metadata"]
            key = company_key(m["ticker"], m["company"])
            known = load_company_map().by_cik(m["cik"]) if m["cik"] else None
            numeric = r.get("numeric_rows") or 0
            question = f"What was {exp.get('company')}'s revenue in {exp.get('fiscal_year_label')}?"
            found = parser.parse(question).companies if exp.get("company") else []
            row.update({
                "company": m["company"], "ticker": m["ticker"], "fiscal_year": m["fiscal_year"],
                "company_ok": bool(exp.get("company")) and found == [key],
                "fy_ok": m["fiscal_year"] == exp.get("fiscal_year_label"),
                "statements": "/".join(k[:2] for k in (*PRIMARY_STATEMENTS, "equity") if k in r["statements"]),
                "statements_ok": all(k in r["statements"] for k in PRIMARY_STATEMENTS),
                "equity_ok": "equity" in r["statements"],
                # the company map's ticker when it knows the registrant; else whatever the cover printed
                "ticker_ok": (m["ticker"] == known.ticker) if known is not None and known.ticker else None,
                "in_map": known is not None, "review": "; ".join(m.get("review_reasons") or []),
                "numeric_rows": numeric,
                "rows_with_unit_pct": round(100.0 * r.get("numeric_rows_with_unit", 0) / numeric, 1) if numeric else None,
                "rows_with_title_pct": round(100.0 * r.get("numeric_rows_with_title", 0) / numeric, 1)
                if numeric else None,
                "rows_titled_by_section_pct": round(100.0 * r.get("numeric_rows_titled_by_section", 0) / numeric, 1)
                if numeric else None,
                "unit_violations": r["unit_violations"], "rows": r["table_rows"],
                "rows_with_period_pct": r["rows_with_period_pct"], "pages": r["pages"],
                "seconds": r["seconds"], "s_per_page": r["seconds_per_page"],
            })
        else:
            row["reason"] = r.get("reason")
        rows.append(row)
    return rows
