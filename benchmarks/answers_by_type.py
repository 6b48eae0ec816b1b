"""Answer correctness per question set and type, each answerer against a baseline with paired intervals.

    .venv/bin/python benchmarks/answers_by_type.py [--warehouse FINRAG_HOME/warehouse_read.duckdb]
                                                   [--baseline extractive]

Reads the newest answer evaluation in a warehouse (after `make demo`): for every question set
(generated, financebench, ...) and question type, the mean correctness of each answerer on answerable
questions and, for each non-baseline answerer, the paired difference to the baseline on the same
questions with its 95% bootstrap interval and sign-flip p-value (core/evaluation/stats.paired_comparison,
the test the leaderboard uses). Sanity answerers are listed too: each must stay at or below 0.05.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import duckdb
import pandas as pd

from finrag_pipeline.core.evaluation.stats import paired_comparison

QUERY = """
SELECT a.qa_id, a.model, a.question_type, q.source AS question_set, a.correctness
FROM eval.answer_results a JOIN qa.items q USING (qa_id)
WHERE a.answerable
"""


def table(warehouse: Path, baseline: str) -> pd.DataFrame:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        df = con.execute(QUERY).df()
    wide = df.pivot_table(index=["question_set", "question_type", "qa_id"], columns="model",
                          values="correctness", aggfunc="mean").reset_index()
    models = [m for m in wide.columns if m not in ("question_set", "question_type", "qa_id")]
    rows = []
    for (qset, qtype), g in wide.groupby(["question_set", "question_type"]):
        for model in models:
            row = {"question_set": qset, "question_type": qtype, "answerer": model, "n": int(g[model].notna().sum()),
                   "correctness": round(float(g[model].mean()), 3)}
            if model != baseline and baseline in g:
                cmp = paired_comparison(g[baseline].tolist(), g[model].tolist())
                if cmp.mean_diff is not None:
                    row.update({f"vs_{baseline}": f"{cmp.mean_diff:+.3f} [{cmp.ci_low:+.3f}, {cmp.ci_high:+.3f}]",
                                "p": round(cmp.p_value, 4)})
            rows.append(row)
    return pd.DataFrame(rows)


def main() -> None:
    home = Path(os.environ.get("FINRAG_HOME", ".finrag"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, default=home / "warehouse_read.duckdb")
    parser.add_argument("--baseline", default="extractive")
    args = parser.parse_args()
    out = table(args.warehouse, args.baseline)
    print(out.to_markdown(index=False))


if __name__ == "__main__":
    main()
