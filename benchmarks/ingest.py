"""Ingest benchmark: per sample filing, seconds and pages/s of each stage, side by side.

    python benchmarks/ingest.py [--files A.pdf B.html] [--no-baseline]
    python benchmarks/ingest.py --corpus ../shared/corpus/robustness2 [--baseline-every 4 | --subset A.pdf B.pdf]
                                [--worker auto|on|off|both]

``--corpus`` (issue 30): a folder of filings (its manifest.jsonl, when there, names them and their pages).
It times the whole path of core/ingest_pipeline.ingest_files (parse, chunk, embedding inputs, embed with a cold
embedding cache, Tantivy + LanceDB writes into a scratch folder) over every filing, and, in the same run, on
every ``--baseline-every``-th filing: that path and the baseline, today's product path before issue 30's
ingest work (sequential; every leaf embedded as its full text by the ONNX fp32 batches, sorted by characters;
``--baseline torch``: sentence-transformers on PyTorch instead). Pages/min and chunks/s of each, with the
load average.

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


# ---- --corpus: the whole path over a folder of filings, and the baseline in the same run -----------------

def corpus_files(folder: Path) -> list[Path]:
    """The folder's manifest.jsonl entries (``file`` relative to the folder's parent, or a name in it), else
    its PDF and HTML files; sorted by name."""
    import json

    manifest = folder / "manifest.jsonl"
    if manifest.exists():
        entries = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
        files = [folder.parent / e["file"] if (folder.parent / e["file"]).exists() else folder / Path(e["file"]).name
                 for e in entries]
    else:
        files = [p for p in folder.iterdir() if p.suffix.lower() in (".pdf", ".html", ".htm")]
    return sorted(files, key=lambda p: p.name)


def baseline_encode(embedder, mode: str):
    """The embedding of the baseline: ``onnx`` = the ONNX fp32 batches as they were before issue 30's ingest
    work (sorted by characters, 32 a batch); ``torch`` = SentenceTransformer.encode."""
    import numpy as np

    if mode == "torch":
        return lambda texts: embedder.encode_st(texts)
    onnx = embedder._onnx_session()  # noqa: SLF001 - the product's own export and session

    def encode(texts: list[str]) -> np.ndarray:
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), embedder.dim), dtype=np.float32)
        for start in range(0, len(texts), embedder.batch_size):
            rows = order[start:start + embedder.batch_size]
            out[rows] = onnx.encode([texts[i] for i in rows])
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return encode


def run_baseline(files: list[Path], folder: Path, embedder, mode: str) -> tuple[int, int, float, float]:
    """Sequential: parse, chunk, embed every leaf's full text (cold cache), Tantivy + LanceDB writes."""
    from finrag_pipeline.core.chunking import chunk_filing, load_chunking_config
    from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache
    from finrag_pipeline.core.indexing.lance_index import LanceIndex
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex

    tantivy = TantivyIndex(folder / "tantivy")
    lance = LanceIndex(folder / "lancedb", embedder, cache=EmbeddingCache(folder / "cache.sqlite"))
    lance.embedder = _Encoding(embedder, baseline_encode(embedder, mode))
    pages = leaves_n = 0
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    for path in files:
        parsed = parse_filing(path)
        leaves = [c for c in chunk_filing(parsed.meta, parsed.pages, parsed.table_rows, load_chunking_config())
                  if c.is_leaf]
        tantivy.upsert_filing(parsed.filing_id, leaves)
        lance.upsert_filing(parsed.filing_id, leaves)
        pages += parsed.meta.n_pages
        leaves_n += len(leaves)
        print(f"    baseline {path.name}: {parsed.meta.n_pages} pages, {len(leaves)} leaves, "
              f"{time.perf_counter() - t0:.0f} s so far, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    return pages, leaves_n, time.perf_counter() - t0, cpu_seconds() - c0


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the worker process): on a loaded machine the
    wall clock measures the others' load; CPU time does not (but a pipeline's gain is in wall time only)."""
    import resource

    return time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime + \
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime


class _Encoding:
    """An embedder with another encode function (same name and width: same cache keys and table)."""

    def __init__(self, embedder, encode):
        self.name, self.dim, self._encode = embedder.name, embedder.dim, encode

    def encode(self, texts, batch_size=None, show_progress=False):
        return self._encode(list(texts))


def run_full(files: list[Path], folder: Path, embedder, worker: bool | None) -> tuple[int, int, float, float, dict]:
    """core/ingest_pipeline.ingest_files: the product's pipelined path, cold cache."""
    from finrag_pipeline.core.indexing.embedding_cache import EmbeddingCache
    from finrag_pipeline.core.indexing.lance_index import LanceIndex
    from finrag_pipeline.core.indexing.tantivy_index import TantivyIndex
    from finrag_pipeline.core.ingest_pipeline import ingest_files

    tantivy = TantivyIndex(folder / "tantivy")
    lance = LanceIndex(folder / "lancedb", embedder, cache=EmbeddingCache(folder / "cache.sqlite"))
    pages = leaves = 0
    totals: dict[str, float] = {}
    c0 = cpu_seconds()
    t0 = time.perf_counter()
    for done in ingest_files(files, tantivy, lance, worker=worker):
        pages += done.pages
        leaves += done.leaves
        for k, v in done.seconds.items():
            totals[k] = totals.get(k, 0.0) + v
        print(f"    full {done.filing_id}: {done.pages} pages, {done.leaves} leaves, "
              f"{time.perf_counter() - t0:.0f} s so far, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    return pages, leaves, time.perf_counter() - t0, cpu_seconds() - c0, totals


def corpus_main(folder: Path, every: int, worker: str, baseline: str, subset_only: bool = False,
                subset_names: list[str] | None = None) -> None:
    import subprocess

    from finrag_pipeline.core.chunking.embedding_inputs import load_embedding_input_config
    from finrag_pipeline.core.indexing.embedder import load_embedder_config
    from finrag_pipeline.core.ingest_pipeline import load_pipeline_config, use_worker

    files = corpus_files(folder)
    subset = files[::every] if every else []
    if subset_names:
        subset = [f for f in files if f.name in subset_names]
        if len(subset) != len(subset_names):
            raise SystemExit(f"--subset: {sorted(set(subset_names) - {f.name for f in subset})} not in {folder}")
    embedder = load_embedder_config().build()
    embedder.encode(["warm up the model and its ONNX session"] * 9)  # load before timing
    use = {"auto": None, "on": True, "off": False, "both": None}[worker]
    decided = use_worker(load_pipeline_config(), len(files)) if use is None else use
    uptime = lambda: subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()  # noqa: E731
    print(f"{len(files)} filings in {folder}; baseline subset: {', '.join(f.name for f in subset)}; "
          f"embedder {embedder.name} batch_backend={getattr(embedder, 'batch_backend', '-')}; "
          f"inputs {load_embedding_input_config().model_dump()}; worker process: {worker} -> {decided}")
    print(f"start: {uptime()}")
    rows = []
    totals: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="finrag-ingest-bench-") as tmp:
        if subset:
            rows.append((f"baseline ({baseline} fp32, sequential, full texts)", f"subset of {len(subset)}",
                         *run_baseline(subset, Path(tmp) / "baseline", embedder, baseline), os.getloadavg()[0]))
            for flag in ([False, True] if worker == "both" else [use]):
                label = {None: "worker auto", True: "worker process", False: "no worker"}[flag]
                rows.append((f"full path ({label})", f"subset of {len(subset)}",
                             *run_full(subset, Path(tmp) / f"full_subset_{label}", embedder, flag)[:4],
                             os.getloadavg()[0]))
        if not subset_only:
            pages, leaves, seconds, cpu, totals = run_full(files, Path(tmp) / "full", embedder,
                                                           True if worker == "both" else use)
            label = {"both": "worker process", "on": "worker process", "off": "no worker"}.get(worker, "worker auto")
            rows.append((f"full path ({label})", f"all {len(files)}", pages, leaves, seconds, cpu,
                         os.getloadavg()[0]))
    print(f"end: {uptime()}")
    print("\n| path | filings | pages | leaf chunks | seconds | pages/min | chunks/s | CPU s | load (1 min) at end |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, which, pages_n, leaves_n, secs, cpu, load in rows:
        print(f"| {name} | {which} | {pages_n} | {leaves_n} | {secs:.1f} | {60 * pages_n / secs:.0f} | "
              f"{leaves_n / secs:.1f} | {cpu:.0f} | {load:.1f} |")
    if totals:
        print("\nseconds inside the full path over all filings (a worker's parse/chunk overlap the embedding): "
              + ", ".join(f"{k} {v:.1f}" for k, v in totals.items()))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="*", type=Path, help="default: every file in data/sample_filings")
    ap.add_argument("--no-baseline", action="store_true", help="skip the slow pdfplumber baseline")
    ap.add_argument("--parse-only", action="store_true", help="skip chunk, embed and index")
    ap.add_argument("--corpus", type=Path, help="a folder of filings (with manifest.jsonl): the whole path")
    ap.add_argument("--baseline-every", type=int, default=4, help="--corpus: baseline on every n-th filing (0: none)")
    ap.add_argument("--baseline", choices=("onnx", "torch"), default="onnx", help="--corpus: the baseline's embedding")
    ap.add_argument("--worker", choices=("auto", "on", "off", "both"), default="auto",
                    help="--corpus: the second process (auto: ingest.yaml pipeline.parse_ahead; both: the subset "
                         "without and with it)")
    ap.add_argument("--subset-only", action="store_true", help="--corpus: skip the run over every filing")
    ap.add_argument("--subset", nargs="*", help="--corpus: the baseline's filings by file name (instead of every n-th)")
    args = ap.parse_args(argv)
    if args.corpus:
        return corpus_main(args.corpus, args.baseline_every, args.worker, args.baseline, args.subset_only,
                           args.subset)
    files = args.files or sorted(p for p in SAMPLE_FILINGS_DIR.iterdir() if p.suffix in (".pdf", ".html"))
    stages = [s for s in STAGES if not (args.no_baseline and s[0] == "pdfplumber_text")
              and not (args.parse_only and s[0] in ("chunk", "embed", "index"))]
    print_table(run(files, stages))


if __name__ == "__main__":
    main()
