"""Benchmark: every real 10-K in, read right. Runs ``finrag inspect`` over folders of 10-Ks and checks
each against its manifest: registered without a sidecar?, company (recognised by the alias table as
the manifest's company), fiscal year, income statement / balance sheet / cash flow tagged, no
currency unit on a percentage or per-share row, rows, % of rows with a period, s/page.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/robustness.py [FOLDER ...] [--json]

Default folders: ../shared/corpus/robustness (18 PDFs, manifest.jsonl) and data/sample_filings (8).
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

ROBUSTNESS_DIR = REPO_ROOT.parent / "shared" / "corpus" / "robustness"
# The sample filings carry no manifest of their own: company (common name) and fiscal-year label,
# read off each filing, are kept next to this script.
SAMPLE_MANIFEST = Path(__file__).with_name("sample_manifest.jsonl")
COLUMNS = ("file", "registered", "company", "company_ok", "fiscal_year", "fy_ok", "statements", "statements_ok",
           "unit_violations", "rows", "rows_with_period_pct", "pages", "seconds", "s_per_page")


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
        checks = ("registered", "company_ok", "fy_ok", "statements_ok")
        failed = [c for c in checks if not r.get(c)] + (["unit_violations"] if r.get("unit_violations") else [])
        if failed:
            bad.append(f"{r['file']}: {', '.join(failed)} {r.get('reason') or ''}".strip())
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    folders = args.folders or [d for d in (ROBUSTNESS_DIR, SAMPLE_FILINGS_DIR) if d.is_dir()]
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
    bad = failures(rows)
    for line in bad:
        print("FAIL", line, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
