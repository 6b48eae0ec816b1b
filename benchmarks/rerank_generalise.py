"""Rerankers that generalise (issue 15 item 6): no reranking vs hand-set features vs the local LLM's P(yes)
vs a cross-encoder fine-tuned HERE on the training filings' synthetic pairs, over the candidates of the
best base configuration, on the hand-written analysts' set (filing and corpus scope) and on the held-out
filings' synthetic questions (rerank_fit.split_by_filing). All-evidence page hit@k and page recall@k,
exact McNemar on the all-evidence hit against no reranking and against features, latency per question.

Steps (each reads what the previous one cached under $FINRAG_HOME/cache/rerank_bench/):

    B="env FINRAG_HOME=/tmp/finrag-rerank PYTHONPATH=$PWD .venv/bin/python benchmarks/rerank_generalise.py"
    $B candidates                       # base top --depth per question and scope (+ the training filings')
    $B train-ce --max-length 128 --negatives 2   # -> $FINRAG_HOME/models/cross_encoder_synthetic (+ manifest)
    $B llm --model qwen2.5-0.5b --rerank-depth 10 --sets analysts:filing analysts:corpus
    $B ce --ce-model-path $FINRAG_HOME/models/cross_encoder_synthetic --sets analysts:filing ...
    $B report --ce-model-path $FINRAG_HOME/models/cross_encoder_synthetic --ce-max-length 128

The rerankers are the core classes of core/retrieval/rerank.py (what a configured retriever runs); the
LLM's scores are cached per (model, passage cut, question, chunk) in a JSONL file so a stopped run resumes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from decomposed import mcnemar_exact  # noqa: E402

from finrag_pipeline.core.evaluation.runner import page_groups  # noqa: E402
from finrag_pipeline.core.indexing.embedder import default_model_path  # noqa: E402
from finrag_pipeline.core.models import SearchFilters  # noqa: E402
from finrag_pipeline.core.records import load_qa_items  # noqa: E402
from finrag_pipeline.core.retrieval.config import load_retrievers  # noqa: E402
from finrag_pipeline.core.retrieval.rerank import (  # noqa: E402
    CrossEncoderReranker,
    FeatureReranker,
    LLMReranker,
    Reranker,
    local_llm_score_pairs,
)
from finrag_pipeline.core.retrieval.rerank_fit import pair_auc, split_by_filing  # noqa: E402
from finrag_pipeline.core.retrieval.rerank_train import (  # noqa: E402
    is_evidence_hit,
    train_cross_encoder,
    training_pairs,
)  # noqa: E402
from finrag_pipeline.core.scoring import metrics as m  # noqa: E402
from finrag_pipeline.core.session import FinragSession  # noqa: E402

SETS = ("analysts:filing", "analysts:corpus", "synthetic-heldout:filing")


def bench_dir(session) -> Path:
    d = Path(session.paths.home) / "cache" / "rerank_bench"
    d.mkdir(parents=True, exist_ok=True)
    return d


def question_sets(session) -> dict[str, list]:
    items = [i for i in load_qa_items(session.warehouse) if page_groups(i)]
    external = [i for i in items if (i.metadata or {}).get("external_set")]
    synthetic = [i for i in items if not (i.metadata or {}).get("external_set")]
    train_f, test_f = split_by_filing(i.filing_id for i in synthetic)
    return {"analysts": external, "synthetic-train": [i for i in synthetic if i.filing_id in train_f],
            "synthetic-heldout": [i for i in synthetic if i.filing_id in test_f], "_train_filings": train_f}


def cmd_candidates(session, args) -> None:
    sets = question_sets(session)
    retriever = session.retriever(args.base)
    out = {"base": args.base, "depth": args.depth, "train_filings": sets["_train_filings"], "sets": {}}
    for key in (*SETS, "synthetic-train:filing"):
        name, scope = key.split(":")
        rows = []
        for item in sets[name]:
            filters = SearchFilters(filing_ids=(item.filing_id,)) if scope == "filing" else None
            t0 = time.perf_counter()
            hits = retriever.search(item.question, args.depth, filters)
            rows.append({"qa_id": item.qa_id, "question": item.question, "filing_id": item.filing_id,
                         "groups": page_groups(item), "hits": hits,
                         "base_ms": (time.perf_counter() - t0) * 1000})
        out["sets"][key] = rows
        print(f"{key}: {len(rows)} questions, {sum(len(r['hits']) for r in rows)} candidates", flush=True)
    path = bench_dir(session) / f"candidates-{args.base}-{args.depth}.pkl"
    path.write_bytes(pickle.dumps(out))
    print(f"-> {path}")


def load_candidates(session, args) -> dict:
    return pickle.loads((bench_dir(session) / f"candidates-{args.base}-{args.depth}.pkl").read_bytes())


def cmd_train_ce(session, args) -> None:
    cands = load_candidates(session, args)
    rows = cands["sets"]["synthetic-train:filing"]
    examples = [(r["question"], set().union(*r["groups"]), r["hits"]) for r in rows]
    pairs = training_pairs(examples, positives_per_question=args.positives, negatives_per_question=args.negatives,
                           seed=args.seed)
    out = Path(args.output or Path(session.paths.home) / "models" / "cross_encoder_synthetic")
    print(f"training filings {cands['train_filings']}: {len(rows)} questions -> {len(pairs)} pairs "
          f"({int(sum(p.label for p in pairs))} positive), max_length {args.max_length}", flush=True)
    run = train_cross_encoder(pairs, default_model_path(), out, max_length=args.max_length, epochs=args.epochs,
                              batch_size=args.batch_size, learning_rate=args.learning_rate, seed=args.seed, n_questions=len(rows),
                              train_filings=cands["train_filings"])
    print(json.dumps(run.__dict__, indent=2, default=list))


class CachedScores:
    """(question, passage) -> score of a slow scorer (the LLM, the cross-encoder), persisted line by line
    with the seconds it took, so a stopped run resumes and the latency is what scoring really cost."""

    def __init__(self, path: Path, tag: str, scorer: Callable[[str, list[str]], list[float]],
                 cut: int | None = None):
        self.path, self.tag, self.scorer, self.cut = path, tag, scorer, cut
        self.scores: dict[str, float] = {}
        self.seconds: dict[str, float] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                rec = json.loads(line)
                self.scores[rec["key"]] = rec["score"]
                self.seconds[rec["key"]] = rec["seconds"]

    def key(self, question: str, passage: str) -> str:
        # keyed on the passage as the scorer sees it (the LLM reads the first ``cut`` characters)
        return hashlib.sha256(f"{self.tag}\x1f{question}\x1f{passage[: self.cut]}".encode()).hexdigest()

    def score_pairs(self, question: str, passages: list[str]) -> list[float]:
        missing = [p for p in dict.fromkeys(passages) if self.key(question, p) not in self.scores]
        if missing:
            t0 = time.perf_counter()
            scores = self.scorer(question, missing)
            per_pair = (time.perf_counter() - t0) / len(missing)
            with self.path.open("a") as f:
                for p, score in zip(missing, scores, strict=True):
                    k = self.key(question, p)
                    self.scores[k], self.seconds[k] = float(score), per_pair
                    f.write(json.dumps({"key": k, "score": float(score), "seconds": per_pair}) + "\n")
        return [self.scores[self.key(question, p)] for p in passages]

    def has_all(self, question: str, passages: list[str]) -> bool:
        return all(self.key(question, p) in self.scores for p in passages)

    def cost_seconds(self, question: str, passages: list[str]) -> float:
        return sum(self.seconds.get(self.key(question, p), 0.0) for p in passages)


class CachedReranker(Reranker):
    """A reranker whose pair scores come from a CachedScores (same rerank rule as every Reranker)."""

    def __init__(self, name: str, cache: CachedScores):
        self.name, self.cache = name, cache

    def score(self, query: str, hits) -> list[float]:
        return self.cache.score_pairs(query, [h.text for h in hits])


def llm_cache(session, model: str, max_chars: int) -> CachedScores:
    # The passage is cut the way LLMReranker cuts it; the tag keeps model and cut apart.
    llm = LLMReranker(local_llm_score_pairs(model, max_chars), model, max_chars)
    return CachedScores(bench_dir(session) / f"llm-{model}-{max_chars}.jsonl", f"{model}\x1f{max_chars}",
                        lambda q, ps: llm.score(q, [SimpleNamespace(text=p) for p in ps]), cut=max_chars)


def ce_cache(session, model_path: str, max_length: int) -> CachedScores:
    ce = CrossEncoderReranker(model_path, max_length=max_length)
    return CachedScores(bench_dir(session) / f"ce-{Path(model_path).name}-{max_length}.jsonl",
                        f"ce\x1f{Path(model_path).resolve()}\x1f{max_length}",
                        lambda q, ps: ce.score(q, [SimpleNamespace(text=p) for p in ps]))


def cmd_score(session, args) -> None:
    """Score the top --rerank-depth candidates of --sets with the LLM (llm) or the cross-encoder (ce)."""
    cands = load_candidates(session, args)
    cache = (llm_cache(session, args.model, args.max_passage_chars) if args.command == "llm"
             else ce_cache(session, args.ce_model_path, args.ce_max_length))
    for key in args.sets:
        rows = cands["sets"][key][: args.limit] if args.limit else cands["sets"][key]
        for n, r in enumerate(rows, 1):
            cache.score_pairs(r["question"], [h.text for h in r["hits"][: args.rerank_depth]])
            print(f"{key} {n}/{len(rows)} ({len(cache.scores)} pairs cached)", flush=True)


def evaluate(rows_hits, k: int) -> tuple[list[float], list[float]]:
    aeh, recall = [], []
    for groups, hits in rows_hits:
        pages = m.ranked_pages((h.filing_id, h.pages) for h in hits[:k])
        values = m.evaluate_ranking(pages, [frozenset(g) for g in groups], k)
        aeh.append(float(values["all_evidence_hit"]))
        recall.append(float(values["recall"]))
    return aeh, recall


def cmd_report(session, args) -> None:
    cands = load_candidates(session, args)
    hand = load_retrievers()["hybrid_rrf_features"].reranker
    rerankers = {"features (hand-set)": (FeatureReranker(session.resources.get("lexicon"), hand.weights,
                                                         hand.base_weight), args.depth)}
    caches = {}
    if args.ce_model_path:
        caches["cross-encoder (fine-tuned)"] = ce_cache(session, args.ce_model_path, args.ce_max_length)
    for model in args.llm_models:
        caches[f"llm P(yes) {model}"] = llm_cache(session, model, args.max_passage_chars)
    for label, cache in caches.items():
        rerankers[label] = (CachedReranker(label, cache), args.rerank_depth)
    print(f"base {cands['base']} top {cands['depth']}; all-evidence page hit@{args.k} and page recall@{args.k}\n")
    print("| set | scope | n | reranker (depth) | aeh | recall | vs none: W/L, p | vs features: W/L, p "
          "| pair AUC | rerank ms/question p50 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in SETS:
        rows = cands["sets"][key]
        name, scope = key.split(":")
        every = list(range(len(rows)))
        # label -> (question indices covered, aeh, recall, rerank ms per question)
        results = {"none": (every, *evaluate([(r["groups"], r["hits"]) for r in rows], args.k),
                            [r["base_ms"] for r in rows])}
        aucs = {"none": pair_auc([(h.score, is_evidence_hit(h, set().union(*r["groups"])))
                                  for r in rows for h in r["hits"][: args.rerank_depth]])}
        for label, (reranker, depth) in rerankers.items():
            covered = every
            if label in caches:
                # Slow scorers: reported on the questions whose candidates were scored, paired there.
                cache = caches[label]
                covered = [i for i in every if cache.has_all(rows[i]["question"],
                                                             [h.text for h in rows[i]["hits"][:depth]])]
                if not covered:
                    continue
            reranked, ms, scored = [], [], []
            for i in covered:
                r = rows[i]
                head, tail = r["hits"][:depth], r["hits"][depth:]
                t0 = time.perf_counter()
                reranked.append((r["groups"], reranker.rerank(r["question"], head) + tail))
                evidence = set().union(*r["groups"])
                # AUC over the same candidates for every reranker: the base top --rerank-depth
                new_score = {h.chunk_id: h.score for h in reranked[-1][1][: len(head)]}
                scored += [(new_score[h.chunk_id], is_evidence_hit(h, evidence)) for h in r["hits"][: args.rerank_depth]]
                ms.append((time.perf_counter() - t0) * 1000)
                if label in caches:  # cached scores: the cost is what scoring took when computed
                    ms[-1] = 1000 * cache.cost_seconds(r["question"], [h.text for h in head])
            results[f"{label} ({depth})"] = (covered, *evaluate(reranked, args.k), ms)
            aucs[f"{label} ({depth})"] = pair_auc(scored)
        feat = next((v for lab, v in results.items() if lab.startswith("features")), None)
        for label, (covered, aeh, recall, ms) in results.items():
            def versus(ref, covered=covered, aeh=aeh, own=results[label]):
                if ref is None or ref is own:
                    return "-"
                mine = dict(zip(covered, aeh, strict=True))
                theirs = dict(zip(ref[0], ref[1], strict=True))
                both = [i for i in covered if i in theirs]
                w = sum(1 for i in both if mine[i] > theirs[i])
                lo = sum(1 for i in both if mine[i] < theirs[i])
                ref_mean = sum(theirs[i] for i in both) / len(both)
                same_n = f" (ref {ref_mean:.3f} on these {len(both)})" if len(both) < len(ref[0]) else ""
                return f"{w}/{lo}, p={mcnemar_exact(w, lo):.3g}{same_n}"
            lat = f"{statistics.median(ms):.0f}" if label != "none" else f"(base {statistics.median(ms):.0f})"
            print(f"| {name} | {scope} | {len(covered)} | {label} | {sum(aeh) / len(aeh):.3f} | "
                  f"{sum(recall) / len(recall):.3f} | {versus(results['none'])} | {versus(feat)} | "
                  f"{'-' if aucs[label] is None else f'{aucs[label]:.3f}'} | {lat} |",
                  flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["candidates", "train-ce", "llm", "ce", "report"])
    ap.add_argument("--home", default=None)
    ap.add_argument("--base", default="decomposed_routed")
    ap.add_argument("--depth", type=int, default=20)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    # train-ce
    ap.add_argument("--output", default=None)
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--learning-rate", type=float, default=3e-5)
    ap.add_argument("--positives", type=int, default=2)
    ap.add_argument("--negatives", type=int, default=4)
    # llm / report
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--llm-models", nargs="*", default=["qwen2.5-0.5b"])
    ap.add_argument("--rerank-depth", type=int, default=10, help="candidates the LLM / cross-encoder rescore")
    ap.add_argument("--max-passage-chars", type=int, default=1000)
    ap.add_argument("--sets", nargs="*", default=["analysts:filing", "analysts:corpus"])
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--ce-model-path", default=None)
    ap.add_argument("--ce-max-length", type=int, default=128)
    args = ap.parse_args()
    session = FinragSession.open(args.home)
    {"candidates": cmd_candidates, "train-ce": cmd_train_ce, "llm": cmd_score, "ce": cmd_score,
     "report": cmd_report}[args.command](
        session, args)


if __name__ == "__main__":
    main()
