"""Does a small cross-encoder fine-tuned HERE on synthetic pairs beat the feature reranker on the external set?

Offline: the cross-encoder starts from the local all-MiniLM-L6-v2 (the embedder's weights, a new
one-logit head: sentence-transformers CrossEncoder), trained on (question, candidate) pairs of the
synthetic questions of the TRAINING filings (rerank_fit.split_by_filing), positives = candidates on an
evidence page, negatives = the other candidates of the same question (hard negatives of the base
retriever). Reported on the held-out filings' synthetic questions and the external set, beside no
reranking and the hand-set features, as all-evidence page hit at k of the reranked top ``--depth``.

    FINRAG_HOME=/tmp/finrag-retrieval PYTHONPATH=$PWD .venv/bin/python benchmarks/cross_encoder_rerank.py
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fit_feature_reranker import build_examples  # noqa: E402

from finrag_pipeline.core.indexing.embedder import default_model_path  # noqa: E402
from finrag_pipeline.core.models import SearchFilters  # noqa: E402
from finrag_pipeline.core.records import load_qa_items  # noqa: E402
from finrag_pipeline.core.retrieval.config import load_retrievers  # noqa: E402
from finrag_pipeline.core.retrieval.rerank import DEFAULT_FEATURE_WEIGHTS  # noqa: E402
from finrag_pipeline.core.retrieval.rerank_fit import (  # noqa: E402
    FEATURES,
    Candidate,
    Example,
    mean_score,
    split_by_filing,
)
from finrag_pipeline.core.session import FinragSession  # noqa: E402


def candidates_with_text(session, items, base_name, depth):
    retriever = session.retriever(base_name)
    out = []
    for item in items:
        hits = retriever.search(item.question, depth, SearchFilters(filing_ids=(item.filing_id,)))
        out.append((item, hits))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default=None)
    ap.add_argument("--base", default="hybrid_rrf_period")
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--max-train-questions", type=int, default=300)
    ap.add_argument("--epochs", type=int, default=1)
    args = ap.parse_args()
    from sentence_transformers import CrossEncoder

    session = FinragSession.open(args.home)
    items = [i for i in load_qa_items(session.warehouse) if i.evidence]
    external = [i for i in items if (i.metadata or {}).get("external_set")]
    synthetic = [i for i in items if not (i.metadata or {}).get("external_set")]
    train_f, test_f = split_by_filing(i.filing_id for i in synthetic)
    rng = random.Random(0)
    train_items = [i for i in synthetic if i.filing_id in train_f]
    rng.shuffle(train_items)
    train_items = train_items[:args.max_train_questions]
    pairs, labels = [], []
    for item, hits in candidates_with_text(session, train_items, args.base, args.depth):
        evidence = {(p.filing_id, int(p.page)) for g in item.evidence for p in g}
        pos = [h for h in hits if any((h.filing_id, p) in evidence for p in h.pages)]
        neg = [h for h in hits if h not in pos]
        for h in pos[:2]:
            pairs.append((item.question, h.text[:1200]))
            labels.append(1.0)
        for h in rng.sample(neg, min(len(neg), 3)):
            pairs.append((item.question, h.text[:1200]))
            labels.append(0.0)
    print(f"train filings {train_f}; {len(train_items)} questions -> {len(pairs)} pairs "
          f"({int(sum(labels))} positive)", flush=True)
    t0 = time.perf_counter()
    model = CrossEncoder(str(default_model_path()), num_labels=1, max_length=256, device="cpu")
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    ds = Dataset.from_dict({"query": [p[0] for p in pairs], "passage": [p[1] for p in pairs], "label": labels})
    targs = CrossEncoderTrainingArguments(output_dir="/tmp/finrag-retrieval-ce", num_train_epochs=args.epochs,
                                          per_device_train_batch_size=16, learning_rate=3e-5, warmup_ratio=0.1,
                                          save_strategy="no", logging_steps=50, report_to=[], seed=0)
    CrossEncoderTrainer(model=model, args=targs, train_dataset=ds, loss=BinaryCrossEntropyLoss(model)).train()
    print(f"fine-tuned in {time.perf_counter() - t0:.0f}s", flush=True)

    hand = load_retrievers()["hybrid_rrf_features"].reranker
    hand_w = {**DEFAULT_FEATURE_WEIGHTS, **(hand.weights or {})}
    print(f"\nall-evidence page hit@{args.k}, candidates: {args.base} top {args.depth}, filing scope\n")
    print("| question set | n | no reranking | features (hand-set) | cross-encoder | ms / question (CE) |")
    print("|---|---|---|---|---|---|")
    for name, subset in (("synthetic held-out", [i for i in synthetic if i.filing_id in test_f]),
                         ("external", external)):
        feats = build_examples(session, subset, args.base, args.depth)
        ce_examples = []
        t0 = time.perf_counter()
        for (item, hits), fx in zip(candidates_with_text(session, subset, args.base, args.depth), feats,
                                    strict=True):
            scores = model.predict([(item.question, h.text[:1200]) for h in hits]) if hits else []
            ce_examples.append(Example(fx.filing_id, tuple(
                Candidate(c.filing_id, c.pages, c.base, {"ce": float(s)})
                for c, s in zip(fx.candidates, scores, strict=True)), fx.groups))
        ms = (time.perf_counter() - t0) * 1000 / max(len(subset), 1)
        none = mean_score(feats, {f: 0.0 for f in FEATURES}, 1.0, args.k)
        features = mean_score(feats, hand_w, hand.base_weight, args.k)
        ce = mean_score(ce_examples, {"ce": 1.0}, 0.0, args.k)
        print(f"| {name} | {len(feats)} | {none:.3f} | {features:.3f} | {ce:.3f} | {ms:.0f} |", flush=True)


if __name__ == "__main__":
    main()
