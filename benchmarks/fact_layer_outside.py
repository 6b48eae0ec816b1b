"""The fact layer on 10-Ks no question set used: does ``FilingFacts.lookup`` (the calculator's lookup) read the
right row of the right statement for the right fiscal year?

    PYTHONPATH=$PWD .venv/bin/python benchmarks/fact_layer_outside.py [--cache-dir /tmp/finrag_fact_layer_outside]
        [--json] [--verbose]

``fact_layer_outside.jsonl`` holds, per filing, about 15 core line items read BY HAND on the statement pages (the
parser's text, cross-checked in pypdfium2's): concept (a lexicon key), fiscal year, the value as printed (in the
statement's unit), its PDF page and printed label. Each filing is parsed once (``core.ingest.parse.parse_filing``,
pickled per filing under the cache directory) into a ``FactStore``; each (concept, year) is looked up and counted as

- right: the value equals the expected one in base units (an expense or outflow compared without its sign: filers
  print costs positive or in parentheses, and the calculator computes with the amount);
- wrong: a value was returned and it is another figure (worse than missing: the calculator would answer with it);
- missing: no value.

``fact_layer_outside_validation.jsonl`` (``--expected``) holds 71 rows of four more filings (Oracle FY2016, Apple
FY2017, PG&E 2018, AES 2016), read after the first round of fixes and measured once before the next.

The set was written by the engineer who fixed the fact layer, on filings read by that engineer: a figure here is
an UPPER BOUND for unseen 10-Ks.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_pipeline.core.analyst.store import FactStore  # noqa: E402
from finrag_pipeline.core.numbers import unit_scale  # noqa: E402

EXPECTED = Path(__file__).with_name("fact_layer_outside.jsonl")
CORPUS = Path(os.environ.get("FINRAG_SHARED_CORPUS", "/work/shared/corpus"))
DEFAULT_CACHE = Path("/tmp/finrag_fact_layer_outside")


def load_expected(path: Path = EXPECTED) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def parsed_filing(file: str, cache_dir: Path | None):
    """``parse_filing`` of one corpus file, pickled under ``cache_dir`` (one parse per filing and machine)."""
    cached = cache_dir / (Path(file).stem + ".pkl") if cache_dir else None
    if cached and cached.exists():
        return pickle.loads(cached.read_bytes())
    from finrag_pipeline.core.ingest.parse import parse_filing

    out = parse_filing(CORPUS / file)
    if cached:
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_bytes(pickle.dumps(out))
    return out


def verdict(store: FactStore, filing_id: str, row: dict) -> tuple[str, object]:
    """("right" | "wrong" | "missing", the FactValue or None) for one expected row."""
    facts = store.filing(filing_id)
    concept = store.lexicon.concepts[row["concept"]]
    fact = facts.lookup(concept, int(row["fiscal_year"]))
    if fact is None:
        return "missing", None
    _, scale = unit_scale(row["unit"])
    expected = Decimal(str(row["value"])) * Decimal(str(scale))
    got = fact.base_value
    if concept.outflow or concept.expense:
        expected, got = abs(expected), abs(got)
    return ("right" if abs(got - expected) < Decimal("0.5") * Decimal(str(scale)) else "wrong"), fact


def run(rows: list[dict], cache_dir: Path | None) -> list[dict]:
    files = sorted({r["filing"] for r in rows})
    parsed = {f: parsed_filing(f, cache_dir) for f in files}
    store = FactStore.from_parsed(parsed.values())
    out = []
    for r in rows:
        state, fact = verdict(store, parsed[r["filing"]].meta.filing_id, r)
        out.append({**r, "state": state,
                    "got": None if fact is None else str(fact.base_value),
                    "got_label": None if fact is None else fact.label,
                    "got_page": None if fact is None else fact.source.page})
    return out


def tally(results: list[dict], key: str) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"right": 0, "wrong": 0, "missing": 0})
    for r in results:
        counts[r[key]][r["state"]] += 1
    return dict(counts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--expected", type=Path, default=EXPECTED)
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="print every wrong and missing row")
    args = ap.parse_args()
    results = run(load_expected(args.expected), args.cache_dir)
    summary = {"total": {s: sum(1 for r in results if r["state"] == s) for s in ("right", "wrong", "missing")},
               # the right figure read off another page (an MD&A or selected-data table repeating the line): the
               # answer is right, its citation is not the statement
               "right_cited_elsewhere": sum(1 for r in results if r["state"] == "right" and r["got_page"] != r["page"]),
               "by_filing": tally(results, "filing"), "by_concept": tally(results, "concept"),
               "load": round(os.getloadavg()[0], 1)}
    if args.json:
        print(json.dumps({"summary": summary, "rows": results}, indent=1))
        return
    if args.verbose:
        for r in results:
            if r["state"] != "right":
                print(f"{r['state']:<8} {Path(r['filing']).stem:<22} {r['concept']:<26} FY{r['fiscal_year']} "
                      f"want {r['value']} p{r['page']} {r['label'][:40]!r} | got {r['got']} p{r['got_page']} "
                      f"{(r['got_label'] or '')[:50]!r}")
    for key in ("by_filing", "by_concept"):
        print(f"{key[3:]:<28} right wrong missing")
        for name, c in sorted(summary[key].items()):
            print(f"{Path(name).stem:<28} {c['right']:>5} {c['wrong']:>5} {c['missing']:>7}")
    print(json.dumps(summary["total"]), "right but cited on another page:", summary["right_cited_elsewhere"],
          "load", summary["load"])


if __name__ == "__main__":
    main()
