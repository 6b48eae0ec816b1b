"""Benchmark: every real 10-K in, read right. Runs ``finrag inspect`` over any folder of 10-Ks with a
manifest.jsonl and checks each file against it: registered without a sidecar?, company (recognised by
the alias table as the manifest's company), fiscal year, ticker (the company map's, when it knows the
registrant), the four primary statements tagged (income statement, balance sheet, cash flow, equity),
no currency unit on a percentage or per-share row, numeric rows, % of them with a unit and with a
table title, review reasons, s/page; per file and in total.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/robustness.py [FOLDER ...] [--json]

Default folders: ../shared/corpus/robustness and robustness2 (18 PDFs each, manifest.jsonl) and
data/sample_filings (8; its manifest is benchmarks/sample_manifest.jsonl).
Exit status 1 when any file fails a check.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from finrag_pipeline.core.ingest.inspect import check_against_manifest, inspect_filing, read_manifest
from finrag_pipeline.core.paths import REPO_ROOT, SAMPLE_FILINGS_DIR

# ../shared/corpus from the main checkout; from a worktree (/work/wt/NAME) it is further up
CORPUS_DIR = next((d / "shared" / "corpus" for d in REPO_ROOT.parents if (d / "shared" / "corpus").is_dir()),
                  REPO_ROOT.parent / "shared" / "corpus")
ROBUSTNESS_DIR = CORPUS_DIR / "robustness"
ROBUSTNESS2_DIR = CORPUS_DIR / "robustness2"
# The sample filings carry no manifest of their own: company (common name) and fiscal-year label,
# read off each filing, are kept next to this script.
SAMPLE_MANIFEST = Path(__file__).with_name("sample_manifest.jsonl")
COLUMNS = ("file", "registered", "company", "company_ok", "fiscal_year", "fy_ok", "ticker", "ticker_ok", "statements",
           "statements_ok", "equity_ok", "unit_violations", "numeric_rows", "rows_with_unit_pct", "rows_with_title_pct",
           "rows_titled_by_section_pct", "review", "pages", "s_per_page")


def load_manifest(folder: Path) -> dict[str, dict]:
    path = folder / "manifest.jsonl"
    return read_manifest(path if path.is_file() else SAMPLE_MANIFEST)


def filing_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in (".pdf", ".htm", ".html") and p.is_file())


def run(folders: list[Path]) -> list[dict]:
    reports, expected = [], {}
    for folder in folders:
        expected.update(load_manifest(folder))
        reports += [inspect_filing(p) for p in filing_files(folder)]
    return check_against_manifest(reports, expected)


def failures(rows: list[dict]) -> list[str]:
    bad = []
    for r in rows:
        checks = ("registered", "company_ok", "fy_ok", "statements_ok", "equity_ok")
        failed = [c for c in checks if not r.get(c)] + (["ticker_ok"] if r.get("ticker_ok") is False else []) + (["unit_violations"] if r.get("unit_violations") else [])
        if failed:
            bad.append(f"{r['file']}: {', '.join(failed)} {r.get('reason') or ''}".strip())
    return bad


def totals_line(rows: list[dict]) -> str:
    """Totals over all files: how many pass each check, and the share of numeric rows with a unit / title."""
    n = len(rows)
    count = {c: sum(1 for r in rows if r.get(c)) for c in ("registered", "company_ok", "fy_ok", "statements_ok",
                                                            "equity_ok")}
    tick = [r for r in rows if r.get("ticker_ok") is not None]
    numeric = sum(r.get("numeric_rows") or 0 for r in rows)
    unit = sum(round((r.get("rows_with_unit_pct") or 0) * (r.get("numeric_rows") or 0) / 100) for r in rows)
    title = sum(round((r.get("rows_with_title_pct") or 0) * (r.get("numeric_rows") or 0) / 100) for r in rows)
    by_section = sum(round((r.get("rows_titled_by_section_pct") or 0) * (r.get("numeric_rows") or 0) / 100)
                     for r in rows)
    return (f"total: registered {count['registered']}/{n}, company {count['company_ok']}/{n}, fiscal year "
            f"{count['fy_ok']}/{n}, ticker = company map's {sum(1 for r in tick if r['ticker_ok'])}/{len(tick)} "
            f"(others not in the map), income/balance/cash flow {count['statements_ok']}/{n}, equity "
            f"{count['equity_ok']}/{n}, numeric rows {numeric}: with a unit {100 * unit / max(numeric, 1):.1f}%, "
            f"with a title {100 * title / max(numeric, 1):.1f}% (of which only the section's name "
            f"{100 * by_section / max(numeric, 1):.1f}%), in review {sum(1 for r in rows if r.get('review'))}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    folders = args.folders or [d for d in (ROBUSTNESS_DIR, ROBUSTNESS2_DIR, SAMPLE_FILINGS_DIR) if d.is_dir()]
    t0 = time.perf_counter()
    rows = run(folders)
    wall = time.perf_counter() - t0
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
    else:
        import pandas as pd

        print(pd.DataFrame(rows, columns=list(COLUMNS)).to_markdown(index=False))
        n_pages = sum(r.get("pages") or 0 for r in rows)
        print(f"\n{len(rows)} files, {n_pages} pages, {wall:.1f} s wall ({wall / max(n_pages, 1):.4f} s/page)")
        print(totals_line(rows))
    bad = failures(rows)
    for line in bad:
        print("FAIL", line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
