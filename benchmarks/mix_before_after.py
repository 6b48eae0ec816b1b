"""Leaderboard, phrasing-leakage split and external agreement of one FINRAG_HOME (issue 14 benchmarks).

    python benchmarks/mix_before_after.py HOME                 # report on HOME's newest evaluation rows
    python benchmarks/mix_before_after.py HOME --regenerate    # first rewrite HOME's generated QA sets with
                                                               # the current qa.yaml (what the qa_set asset does)
then `finrag --home HOME eval --k 5` re-evaluates the new sets. Everything is read from eval.retrieval_results
and qa.items (newest run per configuration x filing x scope), so two homes compare like for like."""
import argparse
import json
import sys

import pandas as pd

from finrag_pipeline.core.evaluation.agreement import build_external_agreement, question_sets
from finrag_pipeline.core.evaluation.leaderboard import latest_retrieval_rows
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse


def regenerate(wh: Warehouse) -> None:
    from finrag_pipeline.core.catalog import active_filings, load_filing
    from finrag_pipeline.core.qa.config import load_qa_config
    from finrag_pipeline.core.qa.generate import generate_qa_set
    from finrag_pipeline.core.qa.leakage import annotate_leakage
    from finrag_pipeline.core.records import load_chunks, load_facts, load_pages, load_table_rows
    from finrag_pipeline.core.warehouse import rows_of

    config = load_qa_config()
    for fid in active_filings(wh):
        pages, chunks = load_pages(wh, fid), load_chunks(wh, fid)
        result = generate_qa_set(load_filing(wh, fid), pages, load_table_rows(wh, fid), load_facts(wh, fid),
                                 chunks, config)
        items = annotate_leakage(result.items, chunks, pages, settings=config.leakage)
        wh.replace_rows("qa.items", rows_of(items), where={"filing_id": fid, "source": "generated"})
        wh.replace_rows("qa.generation_log", result.log_rows(fid), where={"filing_id": fid})
        print(f"{fid}: {len(items)} generated questions", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("home")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--k", type=int, default=5)
    args = ap.parse_args()
    wh = Warehouse(FinragPaths.from_env(args.home).warehouse)
    if args.regenerate:
        regenerate(wh)
        return
    items = wh.query_df("SELECT qa_id, filing_id, source, question_type, metadata FROM qa.items "
                        "WHERE status IN ('accepted', 'edited')")
    sets = question_sets(items)
    sets["question_set"] = sets["external_set"].fillna("synthetic")
    meta = items.set_index(["qa_id", "filing_id"])["metadata"].map(lambda m: json.loads(m) if isinstance(m, str) else m)
    bands = meta.map(lambda m: ((m or {}).get("leakage") or {}).get("band") or "n/a").rename("band").reset_index()
    synth = items[items.source == "generated"]
    print("## synthetic mix\n")
    print(synth.question_type.value_counts().rename("n").to_frame().assign(
        share=lambda d: (d.n / d.n.sum()).round(3)).to_markdown())
    runs = wh.query_df("SELECT run_id, started_at, finished_at FROM eval.runs")
    latest = latest_retrieval_rows(wh.query_df("SELECT * FROM eval.retrieval_results"), runs)
    latest = latest[latest.k == args.k].merge(sets[["qa_id", "filing_id", "question_set"]], on=["qa_id", "filing_id"])
    latest = latest.merge(bands, on=["qa_id", "filing_id"], how="left")
    answerable = latest[latest.all_evidence_hit.notna()]
    board = (answerable.groupby(["question_set", "scope", "config_name"])
             .agg(n=("qa_id", "nunique"), aeh=("all_evidence_hit", "mean"), hit_page=("hit_page", "mean"))
             .reset_index())
    board["rank"] = board.groupby(["question_set", "scope"]).aeh.rank(ascending=False, method="average")
    print(f"\n## leaderboard at k={args.k} (all-evidence page hit, page hit; newest runs)\n")
    print(board.sort_values(["question_set", "scope", "rank"]).round(3).to_markdown(index=False))
    leak = (answerable[answerable.scope == "filing"].groupby(["question_set", "band", "config_name"])
            .all_evidence_hit.agg(["count", "mean"]).reset_index())
    wide = leak.pivot_table(index=["question_set", "band"], columns="config_name", values="mean").round(2)
    counts = leak.groupby(["question_set", "band"])["count"].max().rename("n")
    print(f"\n## all-evidence hit@{args.k} by leakage band (filing scope)\n")
    print(pd.concat([counts, wide], axis=1).to_markdown())
    agreement, configs = build_external_agreement(wh)
    cols = [c for c in ("external_set", "scope", "metric", "n_configs", "n_external_questions",
                        "n_synthetic_questions", "kendall_tau_b", "kendall_ci_low", "kendall_ci_high",
                        "spearman_rho", "spearman_ci_low", "spearman_ci_high", "n_pairs", "n_flipped_pairs",
                        "flipped_pairs", "best_synthetic", "best_external") if c in agreement.columns]
    print("\n## external agreement (eval.external_agreement, recomputed)\n")
    print(agreement[cols].round(3).to_markdown(index=False))


if __name__ == "__main__":
    main()
