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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default=os.environ.get("FINRAG_HOME", ".finrag"))
    ap.add_argument("--speed-sample", type=int, default=512)
    args = ap.parse_args()
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
