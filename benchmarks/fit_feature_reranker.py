"""Do the feature reranker's weights generalise? Fit them on the synthetic questions of half the filings
(core/retrieval/rerank_fit.split_by_filing: a fixed hash split), report on the other half and on the
hand-written external set, beside the hand-set weights of retrievers.yaml and no reranking at all.

    FINRAG_HOME=/tmp/finrag-retrieval PYTHONPATH=$PWD .venv/bin/python benchmarks/fit_feature_reranker.py

Candidates: the top ``--depth`` hits of ``--base`` (default hybrid_rrf_period, the base of
hybrid_rrf_features) in the filing scope; metric: all-evidence page hit at ``--k``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_pipeline.core.evaluation.runner import page_groups  # noqa: E402
from finrag_pipeline.core.models import SearchFilters  # noqa: E402
from finrag_pipeline.core.records import load_qa_items  # noqa: E402
from finrag_pipeline.core.retrieval.base import copy_hit  # noqa: E402
from finrag_pipeline.core.retrieval.config import load_retrievers  # noqa: E402
from finrag_pipeline.core.retrieval.fusion import normalize_scores  # noqa: E402
from finrag_pipeline.core.retrieval.rerank import DEFAULT_FEATURE_WEIGHTS, FeatureReranker  # noqa: E402
from finrag_pipeline.core.retrieval.rerank_fit import (  # noqa: E402
    FEATURES,
    Candidate,
    Example,
    fit_feature_weights,
    mean_score,
    split_by_filing,
)
from finrag_pipeline.core.session import FinragSession  # noqa: E402


def build_examples(session, items, base_name: str, depth: int) -> list[Example]:
    retriever = session.retriever(base_name)
    features = FeatureReranker(session.resources.get("lexicon"))
    out = []
    for item in items:
        groups = tuple(frozenset(g) for g in page_groups(item))
        if not groups:
            continue
        hits = retriever.search(item.question, depth, SearchFilters(filing_ids=(item.filing_id,)))
        if not hits:
            out.append(Example(item.filing_id, (), groups))
            continue
        base = normalize_scores({h.chunk_id: h.score for h in hits}, "minmax")
        copies = [copy_hit(h) for h in hits]
        features.score(item.question, copies)   # records feature:<name> in each copy's stage_scores
        out.append(Example(item.filing_id, tuple(
            Candidate(h.filing_id, tuple(h.pages), base[h.chunk_id],
                      {f: h.stage_scores.get(f"feature:{f}", 0.0) for f in FEATURES}) for h in copies), groups))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--home", default=None)
    ap.add_argument("--base", default="hybrid_rrf_period")
    ap.add_argument("--depth", type=int, default=50)
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    session = FinragSession.open(args.home)
    items = load_qa_items(session.warehouse)
    external = [i for i in items if (i.metadata or {}).get("external_set")]
    synthetic = [i for i in items if not (i.metadata or {}).get("external_set")]
    train_f, test_f = split_by_filing(i.filing_id for i in synthetic)
    print(f"train filings {train_f}\nheld-out filings {test_f}", flush=True)
    sets = {
        "synthetic train": build_examples(session, [i for i in synthetic if i.filing_id in train_f], args.base,
                                          args.depth),
        "synthetic held-out": build_examples(session, [i for i in synthetic if i.filing_id in test_f], args.base,
                                             args.depth),
        "external (all filings)": build_examples(session, external, args.base, args.depth),
    }
    weights, bw, train = fit_feature_weights(sets["synthetic train"], args.k)
    hand = load_retrievers()["hybrid_rrf_features"].reranker
    candidates = {
        "no reranking": ({f: 0.0 for f in FEATURES}, 1.0),
        "hand-set (retrievers.yaml)": ({**DEFAULT_FEATURE_WEIGHTS, **(hand.weights or {})}, hand.base_weight),
        f"fitted on train {weights} base {bw}": (weights, bw),
    }
    print(f"\nall-evidence page hit@{args.k}, candidates: {args.base} top {args.depth}, filing scope\n")
    print("| weights | " + " | ".join(f"{name} (n={len(ex)})" for name, ex in sets.items()) + " |")
    print("|---|" + "---|" * len(sets))
    for label, (w, b) in candidates.items():
        cells = [f"{mean_score(ex, w, b, args.k):.3f}" if ex else "-" for ex in sets.values()]
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
