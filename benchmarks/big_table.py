"""A 10-K with a 50,000-row table: what the row cap (limits.max_rows_per_table) saves.

    python benchmarks/big_table.py [--rows 50000] [--embed-sample 500]

The file is Apple's FY2025 inline-XBRL 10-K (first pages) with one appended 50,000-row numeric table
(finrag_pipeline_tests/data/make_hostile_files.py). Parse + chunk run with the configured cap and with no
cap (a copy of assets_config with the cap lifted); embedding is measured on a sample of the capped leaf chunks and the full-embedding time of each
variant is that rate times its leaf chunks (labelled as an extrapolation).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "finrag_pipeline_tests" / "data"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import make_hostile_files  # noqa: E402

from finrag_pipeline.core.chunking import chunk_filing, load_chunking_config  # noqa: E402
from finrag_pipeline.core.config import config_dir, read_yaml  # noqa: E402
from finrag_pipeline.core.ingest.limits import load_ingest_limits  # noqa: E402
from finrag_pipeline.core.ingest.parse import parse_filing  # noqa: E402


def parse_and_chunk(path: Path) -> dict:
    limit = load_ingest_limits().max_rows_per_table
    t0 = time.perf_counter()
    parsed = parse_filing(path)
    t_parse = time.perf_counter() - t0
    t0 = time.perf_counter()
    leaves = [c for c in chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config())
              if c.is_leaf]
    return {"cap": limit, "table_rows": len(parsed.table_rows), "leaf_chunks": len(leaves), "parse_s": t_parse,
            "chunk_s": time.perf_counter() - t0, "leaves": leaves,
            "partial_notes": [n for n in parsed.notes if n.startswith("partial")]}


def without_row_cap(tmp: Path) -> Path:
    """A copy of assets_config whose limits.max_rows_per_table is lifted (FINRAG_CONFIG_DIR points at it)."""
    folder = tmp / "config"
    shutil.copytree(config_dir(), folder)
    data = read_yaml(folder / "ingest.yaml")
    data["limits"]["max_rows_per_table"] = 10**9
    (folder / "ingest.yaml").write_text(yaml.safe_dump(data))
    return folder


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--embed-sample", type=int, default=500)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big_table.htm"
        path.write_text(make_hostile_files.big_table_html(args.rows), encoding="ascii")
        size = path.stat().st_size
        capped = parse_and_chunk(path)
        os.environ["FINRAG_CONFIG_DIR"] = str(without_row_cap(Path(tmp)))
        uncapped = parse_and_chunk(path)
        del os.environ["FINRAG_CONFIG_DIR"]
    from finrag_pipeline.core.indexing.embedder import load_embedder_config

    embedder = load_embedder_config().build()
    sample = [c.text for c in capped["leaves"][-args.embed_sample:]]   # table-row chunks, the costly part
    embedder.encode(sample[:16])  # warm-up
    t0 = time.perf_counter()
    embedder.encode(sample)
    rate = len(sample) / (time.perf_counter() - t0)
    print(f"file: {size / 1e6:.1f} MB, {args.rows:,}-row table; cap max_rows_per_table={capped['cap']:,}")
    print(f"embedding rate (measured on {len(sample)} table-row chunks): {rate:.1f} chunks/s")
    print("| variant | table rows | leaf chunks | parse s | chunk s | embed s (extrapolated) |")
    print("|---|---|---|---|---|---|")
    for name, r in (("capped (default limits)", capped), ("no cap", uncapped)):
        print(f"| {name} | {r['table_rows']:,} | {r['leaf_chunks']:,} | {r['parse_s']:.1f} | {r['chunk_s']:.1f} | "
              f"{r['leaf_chunks'] / rate:,.0f} |")
    for note in capped["partial_notes"]:
        print(f"ingest log: {note}")


if __name__ == "__main__":
    main()
