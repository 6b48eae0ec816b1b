"""Embedding speed-ups judged by what they do to retrieval (issue 30 item 1).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/embedding_speedups.py --home .finrag [--speed-sample 512]

Reads a built home (``make demo``): its leaf chunks, the fp32 vectors the LanceDB table holds (today's
vectors) and its questions (qa.items: the generated ones and the imported analysts' questions). For each
candidate it re-embeds every leaf chunk and every question with the candidate and ranks the chunks by exact
cosine (numpy; no ANN, so only the embedding differs), then scores page-level nDCG@10 and all-evidence hit@5
with the project's metric functions (core/scoring/metrics.py), in the filing and the corpus scope.
Speed is measured in the same process on the same sample of chunks (sorted by length, batch 32, 2 threads):

* ``st_fp32``: sentence-transformers on torch, what ``vector_index`` runs today (the baseline);
* ``onnx_fp32``: the same weights exported to ONNX (the query path's export), run by ONNX Runtime;
* ``onnx_int8``: that export with dynamically quantised int8 weights (onnxruntime.quantization).

A candidate is worth keeping when it costs at most 1 point of each metric, per question set.

``--inputs`` measures the shorter embedding inputs instead (core/chunking/embedding_inputs.py): each candidate
re-embeds only the leaves whose input it changes (the rest keep today's vectors), with the product embedder
(ONNX fp32), on the demo's generated questions and the analysts' questions of
finrag_pipeline_tests/data/external/analyst_questions.jsonl and analyst_questions_dev.jsonl; it also prints the
word pieces each candidate embeds and the time to embed the changed leaves before and after. ``--batching``
compares batching by characters and by word pieces (padding, time, vectors).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_pipeline.core.evaluation.runner import page_groups  # noqa: E402
from finrag_pipeline.core.indexing.embedder import (  # noqa: E402
    OnnxTransformer,
    SentenceTransformerEmbedder,
    _max_seq_length,
    resolve_model_path,
)
from finrag_pipeline.core.indexing.lance_index import TABLE_NAME  # noqa: E402
from finrag_pipeline.core.paths import FinragPaths  # noqa: E402
from finrag_pipeline.core.records import load_chunks, load_qa_items  # noqa: E402
from finrag_pipeline.core.scoring.metrics import evaluate_ranking, ranked_pages  # noqa: E402
from finrag_pipeline.core.warehouse import Warehouse  # noqa: E402


def normalise(v: np.ndarray) -> np.ndarray:
    return (v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def encode_batches(encode, texts: list[str], batch: int = 32) -> np.ndarray:
    """Batches of similar length (sorted), back in the input order."""
    order = np.argsort([len(t) for t in texts])
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for i in range(0, len(texts), batch):
        idx = order[i:i + batch]
        out[idx] = encode([texts[j] for j in idx])
    return normalise(out)


def build_onnx(folder: Path, quantise: bool) -> OnnxTransformer:
    from sentence_transformers import SentenceTransformer

    path = resolve_model_path("default")
    model = SentenceTransformer(str(path), device="cpu")
    transformer, tokenizer = model[0].auto_model, model.tokenizer
    lower = bool(getattr(model[0], "do_lower_case", False))
    fp32 = folder / "model.onnx"
    if not fp32.exists():
        OnnxTransformer.export(transformer, tokenizer, fp32)
    target = fp32
    if quantise:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        target = folder / "model.int8.onnx"
        if not target.exists():
            quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True)
    return OnnxTransformer(target, tokenizer, _max_seq_length(path), lower, threads=2)


def scores(item_vectors: np.ndarray, items, chunk_vectors: np.ndarray, chunks) -> dict[str, float]:
    filing_of = np.array([c.filing_id for c in chunks])
    out: dict[str, list[float]] = {"filing ndcg@10": [], "filing all_evidence@5": [],
                                   "corpus ndcg@10": [], "corpus all_evidence@5": []}
    sims = item_vectors @ chunk_vectors.T
    for qi, item in enumerate(items):
        groups = page_groups(item)
        if not groups:
            continue
        for scope in ("filing", "corpus"):
            s = sims[qi].copy()
            if scope == "filing":
                s[filing_of != item.filing_id] = -np.inf
            top = np.argsort(-s, kind="stable")[:10]
            pages = ranked_pages((chunks[j].filing_id, range(chunks[j].page_start, chunks[j].page_end + 1))
                                 for j in top)
            at10 = evaluate_ranking(pages, groups, 10)
            at5 = evaluate_ranking(pages, groups, 5)
            out[f"{scope} ndcg@10"].append(float(at10["ndcg"] or 0.0))
            out[f"{scope} all_evidence@5"].append(float(at5["all_evidence_hit"] or 0.0))
    return {k: float(np.mean(v)) for k, v in out.items()}


ANALYST_SETS = ("analyst_questions.jsonl", "analyst_questions_dev.jsonl")  # never the held-out halves


def analyst_items(wh: Warehouse) -> dict[str, list]:
    """The analysts' questions of both files, mapped onto the home's filings by the importer (not written)."""
    from finrag_pipeline.core.catalog import active_filings, load_filing
    from finrag_pipeline.core.qa.importers import FilingContext, import_financebench
    from finrag_pipeline.core.records import load_pages

    folder = Path(__file__).resolve().parents[1] / "finrag_pipeline_tests" / "data" / "external"
    contexts = [FilingContext(load_filing(wh, fid), load_pages(wh, fid)) for fid in active_filings(wh)]
    return {name.removesuffix(".jsonl"): [i for i in import_financebench(folder / name, contexts).items if i.evidence]
            for name in ANALYST_SETS}


def stored_vectors(paths: FinragPaths) -> dict[str, np.ndarray]:
    import lancedb

    table = lancedb.connect(str(paths.lancedb_dir)).open_table(TABLE_NAME)
    stored = table.search().select(["chunk_id", "vector"]).limit(None).to_arrow()
    return dict(zip(stored["chunk_id"].to_pylist(), stored["vector"].to_numpy(zero_copy_only=False), strict=True))


def word_pieces(tokenizer, texts: list[str], cap: int = 256) -> list[int]:
    return [min(len(ids), cap) for ids in tokenizer(texts, add_special_tokens=True, truncation=False)["input_ids"]]


def inputs_main(paths: FinragPaths, wh: Warehouse, only: list[str] | None = None) -> None:
    """Shorter embedding inputs, judged by retrieval (see the module docstring)."""
    from finrag_pipeline.core.chunking.embedding_inputs import EmbeddingInputConfig, embedding_inputs
    from finrag_pipeline.core.records import load_pages, load_table_rows

    by_id = stored_vectors(paths)
    chunks = [c for c in load_chunks(wh, leaves_only=True) if c.chunk_id in by_id]
    today = normalise(np.stack([by_id[c.chunk_id] for c in chunks]))
    items = [i for i in load_qa_items(wh) if i.evidence and i.source != "financebench"]
    sets = {"generated": items, **analyst_items(wh)}
    embedder = SentenceTransformerEmbedder("default", batch_size=32)  # the product's: ONNX fp32 batches
    tokenizer = embedder.model.tokenizer
    filings = {fid: (load_pages(wh, fid), load_table_rows(wh, fid)) for fid in sorted({c.filing_id for c in chunks})}
    candidates = {"boilerplate": EmbeddingInputConfig(boilerplate=True),
                  "rows_short": EmbeddingInputConfig(table_rows="short"),
                  "both": EmbeddingInputConfig(boilerplate=True, table_rows="short")}
    candidates = {k: v for k, v in candidates.items() if not only or k in only}
    base_texts = [c.text for c in chunks]
    base_pieces = sum(word_pieces(tokenizer, base_texts))
    print(f"home {paths.home}: {len(chunks)} leaves ({base_pieces:,} word pieces embedded today); "
          + ", ".join(f"{k} {len(v)} questions" for k, v in sets.items()) + f"; load {os.getloadavg()[0]:.1f}")
    query_vectors = {name: embedder.encode([q.question for q in qs]) for name, qs in sets.items()}
    header = None
    rows = []
    fresh: dict[str, np.ndarray] = {}  # input text -> vector, shared by the candidates (as the cache is)
    for name, config in [("today", None), *candidates.items()]:
        if config is None:
            texts, vectors, seconds, changed = base_texts, today, 0.0, []
        else:
            text_of: dict[str, str] = {}
            for fid, (pages, table_rows) in filings.items():
                leaves = [c for c in chunks if c.filing_id == fid]
                text_of.update(zip((c.chunk_id for c in leaves), embedding_inputs(leaves, pages, table_rows, config),
                                   strict=True))
            texts = [text_of.get(c.chunk_id, c.text) for c in chunks]
            changed = [j for j, (a, b) in enumerate(zip(base_texts, texts, strict=True)) if a != b]
            todo = list(dict.fromkeys(texts[j] for j in changed if texts[j] not in fresh))
            t0 = time.perf_counter()
            if todo:
                fresh.update(zip(todo, embedder.encode(todo), strict=True))
            seconds = time.perf_counter() - t0
            vectors = today.copy()
            for j in changed:
                vectors[j] = fresh[texts[j]]
        pieces = sum(word_pieces(tokenizer, texts))
        rows.append((name, len(changed), pieces, seconds, len(todo) if config is not None else 0))
        for set_name, qs in sets.items():
            res = scores(query_vectors[set_name], qs, vectors, chunks)
            if header is None:
                header = list(res)
                print(f"  {'inputs':12s} {'questions':22s} " + " ".join(f"{h:>22s}" for h in header))
            print(f"  {name:12s} {set_name:22s} " + " ".join(f"{res[h]:22.3f}" for h in header), flush=True)
    print("\nwhat each candidate embeds (word pieces, capped at 256 per leaf; embedding time is ~proportional):")
    for name, n_changed, pieces, seconds, encoded in rows:
        print(f"  {name:12s} leaves changed {n_changed:5d}  word pieces {pieces:9,d} "
              f"({100 * (pieces - base_pieces) / base_pieces:+.1f}%)  newly embedded {encoded} in {seconds:.1f} s")
    print(f"load {os.getloadavg()[0]:.1f}")


def batching_main(paths: FinragPaths, wh: Warehouse, sample: int) -> None:
    """Batches by characters (sorted by len) vs by word pieces: padding share, time, vectors."""
    from finrag_pipeline.core.indexing.embedder import token_length_batches

    embedder = SentenceTransformerEmbedder("default", batch_size=32)
    onnx = embedder._onnx_session()  # noqa: SLF001 - the same session both ways, only the batching differs
    chunks = load_chunks(wh, leaves_only=True)
    rng = np.random.default_rng(0)
    texts = [chunks[i].text for i in rng.choice(len(chunks), size=min(sample, len(chunks)), replace=False)]
    lengths = word_pieces(embedder.model.tokenizer, texts)
    by_chars = np.argsort([len(t) for t in texts], kind="stable")
    plans = {"chars": [by_chars[i:i + 32] for i in range(0, len(texts), 32)],
             "word_pieces": token_length_batches(lengths, 32)}
    out = {}
    for name, batches in plans.items():
        padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
        t0 = time.perf_counter()
        vecs = np.zeros((len(texts), 384), dtype=np.float32)
        for b in batches:
            vecs[list(b)] = onnx.encode([texts[i] for i in b])
        out[name] = normalise(vecs)
        print(f"  {name:12s} padding {100 * (padded - sum(lengths)) / padded:5.1f}% of {padded:,} positions, "
              f"{len(texts) / (time.perf_counter() - t0):6.1f} chunks/s; load {os.getloadavg()[0]:.1f}", flush=True)
    cos = np.sum(out["chars"] * out["word_pieces"], axis=1)
    print(f"  min cosine between the two: {cos.min():.6f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default=os.environ.get("FINRAG_HOME", ".finrag"))
    ap.add_argument("--speed-sample", type=int, default=512)
    ap.add_argument("--inputs", action="store_true", help="shorter embedding inputs (boilerplate, table rows)")
    ap.add_argument("--batching", action="store_true", help="batching by characters vs by word pieces")
    ap.add_argument("--candidates", nargs="*", help="--inputs: only these (boilerplate, rows_short, both)")
    args = ap.parse_args()
    if args.inputs or args.batching:
        paths = FinragPaths.from_env(args.home)
        wh = Warehouse(paths.warehouse_snapshot if paths.warehouse_snapshot.exists() else paths.warehouse)
        return (inputs_main(paths, wh, args.candidates) if args.inputs
                else batching_main(paths, wh, args.speed_sample))
    import lancedb

    paths = FinragPaths.from_env(args.home)
    wh = Warehouse(paths.warehouse_snapshot if paths.warehouse_snapshot.exists() else paths.warehouse)
    chunks = load_chunks(wh, leaves_only=True)
    items = [i for i in load_qa_items(wh) if i.evidence]
    # the analysts' questions arrive through the FinanceBench importer (core/qa/importers.py)
    sets = {"generated": [i for i in items if i.source != "financebench"],
            "analysts": [i for i in items if i.source == "financebench"]}
    table = lancedb.connect(str(paths.lancedb_dir)).open_table(TABLE_NAME)
    stored = table.search().select(["chunk_id", "vector"]).limit(None).to_arrow()
    by_id = dict(zip(stored["chunk_id"].to_pylist(), stored["vector"].to_numpy(zero_copy_only=False), strict=True))
    chunks = [c for c in chunks if c.chunk_id in by_id]
    today = normalise(np.stack([by_id[c.chunk_id] for c in chunks]))
    texts = [c.text for c in chunks]
    print(f"home {paths.home}: {len(chunks)} leaf chunks with vectors, "
          f"{len(sets['generated'])} generated + {len(sets['analysts'])} analysts' questions; "
          f"load {os.getloadavg()[0]:.1f}")

    st = SentenceTransformerEmbedder("default", batch_size=32)
    st.model  # noqa: B018 - load before timing
    rng = np.random.default_rng(0)
    sample = [texts[i] for i in rng.choice(len(texts), size=min(args.speed_sample, len(texts)), replace=False)]
    with tempfile.TemporaryDirectory() as tmp:
        candidates = {"onnx_fp32": build_onnx(Path(tmp), False), "onnx_int8": build_onnx(Path(tmp), True)}
        timings = {}
        t0 = time.perf_counter()
        st.encode_st(sample, 32)
        timings["st_fp32"] = len(sample) / (time.perf_counter() - t0)
        for name, model in candidates.items():
            t0 = time.perf_counter()
            encode_batches(model.encode, sample)
            timings[name] = len(sample) / (time.perf_counter() - t0)
        print("\nspeed on the same sample (chunks/s; higher is better):")
        for name, rate in timings.items():
            print(f"  {name:10s} {rate:7.1f}  x{rate / timings['st_fp32']:.2f} vs st_fp32")

        print("\nretrieval with each embedding (exact cosine; the questions embedded by the same model):")
        header = None
        for name, model in [("today", None), *candidates.items()]:
            chunk_vectors = today if model is None else encode_batches(model.encode, texts)
            for set_name, qs in sets.items():
                if not qs:
                    continue
                questions = [q.question for q in qs]
                query_vectors = st.encode(questions) if model is None else encode_batches(model.encode, questions)
                res = scores(query_vectors, qs, chunk_vectors, chunks)
                if header is None:
                    header = list(res)
                    print(f"  {'embedding':10s} {'questions':10s} " + " ".join(f"{h:>22s}" for h in header))
                print(f"  {name:10s} {set_name:10s} " + " ".join(f"{res[h]:22.3f}" for h in header))


if __name__ == "__main__":
    main()
