"""Issue 15's done-means figures from an evaluated FINRAG_HOME (e.g. a `finrag demo` home after
`finrag eval --config ...`): per question set (the external set's name, or 'synthetic'):

* the leaderboard at k: all-evidence page hit (pages of the top-k chunks) and the page ranking's
  all-evidence hit (top_pages), in both scopes;
* the corpus-vs-filing cost (corpus mean - filing mean over the same questions);
* company resolution accuracy (configurations that resolve);
* paired exact McNemar tests of ``--a`` against ``--b`` on all-evidence hit of the metric questions;
* latency p50 / p95 (ms) per configuration, measured in the same evaluation run.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/issue15_figures.py --warehouse $FINRAG_HOME/warehouse_read.duckdb
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import duckdb
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_pipeline.core.evaluation.runner import PAIR_ON  # noqa: E402
from finrag_pipeline.core.scoring.results_views import RETRIEVAL_CURRENT  # noqa: E402


def mcnemar_exact(wins: int, losses: int) -> float:
    """Two-sided exact McNemar test on the discordant pairs (binomial, p = 0.5)."""
    n = wins + losses
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n)


def load(warehouse: str, k: int) -> pd.DataFrame:
    con = duckdb.connect(warehouse, read_only=True)
    # the newest run of each configuration, scored, from the one results view (core/scoring/results_views.py)
    df = con.execute(f"""
        select l.*, q.metadata as qa_metadata, q.source as qa_source from {RETRIEVAL_CURRENT} l
        left join (select qa_id, filing_id, any_value(metadata) metadata, any_value(source) source
                   from qa.items group by qa_id, filing_id) q
          on q.qa_id = l.qa_id and q.filing_id = l.filing_id
        where l.k = ? and not l.is_no_relevant""", [k]).df()
    con.close()

    def question_set(meta: str | None) -> str:
        try:
            return (json.loads(meta) or {}).get("external_set") or "synthetic"
        except (TypeError, ValueError):
            return "synthetic"

    df["question_set"] = df["qa_metadata"].map(question_set)
    return df


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warehouse", required=True)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--a", default="decomposed_routed")
    ap.add_argument("--b", default="hybrid_rrf")
    args = ap.parse_args()
    df = load(args.warehouse, args.k)
    df["config"] = df["config_name"].str.replace(f"@{args.k}", "", regex=False)
    pd.set_option("display.width", 200)
    metrics = ["all_evidence_hit", "all_evidence_hit_ranked_page", "hit_page", "recall_ranked_page"]
    print(f"## Leaderboard at k={args.k} (mean over questions; failed searches count 0)\n")
    board = (df.groupby(["question_set", "scope", "config"])
             .agg(n=("qa_id", "size"), **{m: (m, "mean") for m in metrics},
                  p50_ms=("latency_ms", "median"), p95_ms=("latency_ms", lambda s: s.quantile(0.95)))
             .reset_index().sort_values(["question_set", "scope", "all_evidence_hit"], ascending=[True, True, False]))
    print(board.round(3).to_markdown(index=False))

    print("\n## Corpus-vs-filing cost (same questions; cost = corpus - filing)\n")
    keys = [c for c in PAIR_ON if c != "scope"]
    f = df[df.scope == "filing"].set_index(["config", "question_set", *keys])
    c = df[df.scope == "corpus"].set_index(["config", "question_set", *keys])
    both = f[["all_evidence_hit", "hit_page"]].reset_index().merge(
        c[["all_evidence_hit", "hit_page"]].reset_index(), on=["config", "question_set", *keys],
        suffixes=("_filing", "_corpus"))
    cost = both.groupby(["question_set", "config"]).agg(
        n=("qa_id", "size"), aeh_filing=("all_evidence_hit_filing", "mean"),
        aeh_corpus=("all_evidence_hit_corpus", "mean"), hit_page_filing=("hit_page_filing", "mean"),
        hit_page_corpus=("hit_page_corpus", "mean")).reset_index()
    cost["aeh_cost"] = cost.aeh_corpus - cost.aeh_filing
    cost["hit_page_cost"] = cost.hit_page_corpus - cost.hit_page_filing
    print(cost.round(3).to_markdown(index=False))

    print("\n## Company/period resolution (configurations that resolve), corpus scope\n")
    res = df[(df.scope == "corpus") & df.resolution.notna()]
    if len(res):
        tab = res.groupby(["question_set", "config"]).agg(
            n=("qa_id", "size"), accuracy=("resolution_correct", "mean"),
            exact=("resolution", lambda s: (s == "exact").mean()), covers=("resolution", lambda s: (s == "covers").mean()),
            wrong=("resolution", lambda s: (s == "wrong").mean()),
            unresolved=("resolution", lambda s: (s == "unresolved").mean())).reset_index()
        print(tab.round(3).to_markdown(index=False))
    else:
        print("(no configuration with company_mode / period_mode in this warehouse)")

    print(f"\n## Paired: {args.a} vs {args.b}, all-evidence hit@{args.k} of the metric questions (exact McNemar)\n")
    lines = ["| question set | scope | n | " + args.a + " | " + args.b + " | wins | losses | p |", "|---|---|---|---|---|---|---|---|"]
    metric_q = df[df.question_type == "metric"]
    for (qset, scope), g in metric_q.groupby(["question_set", "scope"]):
        a = g[g.config == args.a].set_index(keys)["all_evidence_hit"]
        b = g[g.config == args.b].set_index(keys)["all_evidence_hit"]
        pair = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner")
        if pair.empty:
            continue
        wins, losses = int(((pair.a == 1) & (pair.b == 0)).sum()), int(((pair.a == 0) & (pair.b == 1)).sum())
        lines.append(f"| {qset} | {scope} | {len(pair)} | {pair.a.mean():.3f} | {pair.b.mean():.3f} | {wins} | "
                     f"{losses} | {mcnemar_exact(wins, losses):.2g} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
