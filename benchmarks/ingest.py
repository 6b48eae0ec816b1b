"""Ingest benchmark: per sample filing, seconds and pages/s of each stage, side by side.

    python benchmarks/ingest.py [--files A.pdf B.html] [--no-baseline]

Stages are (name, fn(path, state) -> n_pages) pairs run in order on each file; later pipeline stages
(chunk, embed, index) are added by appending to STAGES. The baseline is what a naive pipeline does:
pdfplumber ``extract_text()`` on every page (PDFs only).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from finrag_pipeline.core.ingest import parse_filing  # noqa: E402
from finrag_pipeline.core.paths import SAMPLE_FILINGS_DIR  # noqa: E402

Stage = Callable[[Path, dict[str, Any]], int | None]


def stage_parse(path: Path, state: dict[str, Any]) -> int:
    """finrag ingest: pages, sections, tables, XBRL facts."""
    parsed = parse_filing(path)
    state["parsed"] = parsed
    return parsed.meta.n_pages


def stage_pdfplumber_baseline(path: Path, state: dict[str, Any]) -> int | None:
    """Baseline: pdfplumber extract_text() on every page (text only, no tables)."""
    if path.suffix.lower() != ".pdf":
        return None
    import pdfplumber

    with pdfplumber.open(str(path)) as pdf:
        for page in pdf.pages:
            page.extract_text()
            page.flush_cache()
        return len(pdf.pages)


def stage_chunk(path: Path, state: dict[str, Any]) -> int:
    """Default chunking: prose windows, table-row chunks and parents."""
    from finrag_pipeline.core.chunking import chunk_filing, load_chunking_config

    parsed = state["parsed"]
    state["chunks"] = chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config())
    state["leaves"] = [c for c in state["chunks"] if c.is_leaf]
    return parsed.meta.n_pages


def stage_embed(path: Path, state: dict[str, Any]) -> int:
    """MiniLM embeddings of every leaf chunk, cold (no embedding cache)."""
    from finrag_pipeline.core.indexing.embedder import load_embedder_config
    from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache, text_sha

    embedder = state.setdefault("embedder", load_embedder_config().build())
    vectors = embedder.encode([c.text for c in state["leaves"]])
    # Hand the vectors to the index stage through a fresh cache, so "index" times indexing alone.
    cache = EmbeddingCache(Path(state["tmp"]) / "cache.sqlite")
    cache.put_many(embedder.name, {text_sha(c.text): v for c, v in zip(state["leaves"], vectors, strict=True)})
    state["cache"] = cache
    return state["parsed"].meta.n_pages


def stage_index(path: Path, state: dict[str, Any]) -> int:
    """Tantivy upsert + LanceDB upsert (vectors from the embed stage) in a scratch directory."""
    from finrag_pipeline.core.indexing.lance_index import LanceIndex
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

    fid = state["parsed"].filing_id
    TantivyIndex(Path(state["tmp"]) / "tantivy").upsert_filing(fid, state["leaves"])
    LanceIndex(Path(state["tmp"]) / "lance", state["embedder"], cache=state["cache"]).upsert_filing(fid, state["leaves"])
    return state["parsed"].meta.n_pages


STAGES: list[tuple[str, Stage]] = [
    ("parse", stage_parse), ("chunk", stage_chunk), ("embed", stage_embed), ("index", stage_index),
    ("pdfplumber_text", stage_pdfplumber_baseline),
]


def run(files: list[Path], stages: list[tuple[str, Stage]]) -> list[dict[str, Any]]:
    results = []
    shared: dict[str, Any] = {}
    for path in files:
        state: dict[str, Any] = {"tmp": tempfile.mkdtemp(prefix="finrag-bench-"), **shared}
        row: dict[str, Any] = {"file": path.name}
        for name, fn in stages:
            t0 = time.perf_counter()
            n = fn(path, state)
            dt = time.perf_counter() - t0
            row[f"{name}_s"] = round(dt, 2) if n is not None else None
            row[f"{name}_pps"] = round(n / dt, 1) if n else None
            row.setdefault("pages", n)
        if "embedder" in state:
            shared["embedder"] = state["embedder"]  # load the model once, not per file
        parsed = state.get("parsed")
        if parsed is not None:
            row["tables_rows"] = len(parsed.table_rows)
            row["facts"] = len(parsed.facts)
            row["leaf_chunks"] = len(state.get("leaves", []))
        results.append(row)
        print(f"  done {path.name}", file=sys.stderr, flush=True)
    return results


def print_table(rows: list[dict[str, Any]]) -> None:
    cols = list(dict.fromkeys(k for r in rows for k in r))
    cells = [[("-" if r.get(c) is None else str(r.get(c))) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="*", type=Path, help="default: every file in data/sample_filings")
    ap.add_argument("--no-baseline", action="store_true", help="skip the slow pdfplumber baseline")
    ap.add_argument("--parse-only", action="store_true", help="skip chunk, embed and index")
    args = ap.parse_args(argv)
    files = args.files or sorted(p for p in SAMPLE_FILINGS_DIR.iterdir() if p.suffix in (".pdf", ".html"))
    stages = [s for s in STAGES if not (args.no_baseline and s[0] == "pdfplumber_text")
              and not (args.parse_only and s[0] in ("chunk", "embed", "index"))]
    print_table(run(files, stages))


if __name__ == "__main__":
    main()
