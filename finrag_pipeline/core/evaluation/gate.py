"""The regression gate: is a candidate significantly worse than a baseline on the same questions?

``baseline`` and ``candidate`` are each a run id of eval.runs (one configuration on one filing and scope)
or a configuration name (its current rows: the newest run of every filing and scope, from the results
views, scored as everywhere else: a failed question is 0). The two sides are paired on the question
(filing, scope, qa_id for retrieval metrics; filing, qa_id for answer metrics) and compared with the
evaluation's own paired test (runner.compare_scored -> stats.paired_comparison: mean difference,
paired-bootstrap interval, sign-flip p-value).

The gate FAILS when the candidate is significantly worse by more than ``max_drop``: the upper end of the
interval of (candidate - baseline), in the metric's "better" direction, lies below ``-max_drop`` AND the
sign-flip p-value is below ``1 - confidence``. A small set cannot fail it by chance, and a drop smaller
than ``max_drop`` is tolerated. The questions whose value changed ("flipped") are listed, worst first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from finrag_pipeline.core.config import ConfigError
from finrag_pipeline.core.evaluation.runner import compare_scored, metric_values, scored_rows
from finrag_pipeline.core.scoring.metric_registry import ANSWER_METRICS, LOWER_IS_BETTER, RETRIEVAL_METRICS
from finrag_pipeline.core.scoring.results_views import (
    ANSWER_CURRENT,
    ANSWER_SCORED,
    RETRIEVAL_CURRENT,
    RETRIEVAL_SCORED,
)


class GateInputError(ConfigError):
    """A side of the gate names no run and no configuration with rows for the metric, or the metric is unknown."""


@dataclass
class GateResult:
    baseline: str
    candidate: str
    metric: str
    max_drop: float
    confidence: float
    n_pairs: int
    baseline_mean: float | None
    candidate_mean: float | None
    mean_diff: float | None          # candidate - baseline (raw, whatever the metric's direction)
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    failed: bool
    verdict: str
    flipped: pd.DataFrame = field(default_factory=pd.DataFrame)

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "flipped"}
        out["flipped"] = self.flipped.to_dict("records")
        return out

    def text(self, max_flipped: int = 50) -> str:
        def f(v: float | None) -> str:
            return "n/a" if v is None else f"{v:.4f}"

        lines = [f"gate {self.metric}: candidate {self.candidate} vs baseline {self.baseline}",
                 f"  paired questions {self.n_pairs}; baseline {f(self.baseline_mean)}, candidate "
                 f"{f(self.candidate_mean)}; difference {f(self.mean_diff)} "
                 f"[{f(self.ci_low)}, {f(self.ci_high)}] ({self.confidence:.0%} paired bootstrap), "
                 f"sign-flip p = {f(self.p_value)}; max drop {self.max_drop:g}",
                 f"  {'FAIL' if self.failed else 'PASS'}: {self.verdict}"]
        if len(self.flipped):
            lines.append(f"  questions that flipped ({len(self.flipped)}):")
            for r in self.flipped.head(max_flipped).itertuples():
                lines.append(f"    {r.change:<9} {r.filing_id} {r.scope or '-'} {r.qa_id}: "
                             f"{r.baseline_value:g} -> {r.candidate_value:g}  {str(r.question or '')[:90]}")
            if len(self.flipped) > max_flipped:
                lines.append(f"    ... {len(self.flipped) - max_flipped} more (--json lists every one)")
        return "\n".join(lines)


def metric_kind(metric: str) -> str:
    if metric in RETRIEVAL_METRICS:
        return "retrieval"
    if metric in ANSWER_METRICS:
        return "answer"
    raise GateInputError(f"unknown metric {metric!r}; retrieval: {', '.join(RETRIEVAL_METRICS)}; "
                         f"answer: {', '.join(ANSWER_METRICS)}")


def side_rows(warehouse: Any, ref: str, metric: str, scope: str | None = None) -> pd.DataFrame:
    """The scored rows of ``ref``: a run id (that run's rows), else a configuration name (its current rows)."""
    kind = metric_kind(metric)
    scored, current = (RETRIEVAL_SCORED, RETRIEVAL_CURRENT) if kind == "retrieval" else (ANSWER_SCORED, ANSWER_CURRENT)
    rows = warehouse.query_df(f"SELECT * FROM {scored} WHERE run_id = ? ORDER BY source_row", [ref])
    if not len(rows):
        rows = warehouse.query_df(f"SELECT * FROM {current} WHERE config_name = ? ORDER BY source_row", [ref])
    if not len(rows):
        known = warehouse.query_df(f"SELECT DISTINCT config_name FROM {current} ORDER BY 1")["config_name"].tolist()
        raise GateInputError(f"{ref!r} is neither a run id nor a configuration with {kind} results; "
                             f"configurations: {', '.join(known[:40]) or '(none)'}")
    if scope is not None and "scope" in rows.columns:
        rows = rows[rows["scope"] == scope]
        if not len(rows):
            raise GateInputError(f"{ref!r} has no rows in scope {scope!r}")
    return rows.reset_index(drop=True)


def pair_keys(rows: pd.DataFrame) -> list[str]:
    return [c for c in ("filing_id", "scope", "qa_id") if c in rows.columns]


def run_gate(warehouse: Any, baseline: str, candidate: str, metric: str, *, max_drop: float = 0.0,
             scope: str | None = None, confidence: float = 0.95, n_boot: int = 2000, n_perm: int = 10000,
             seed: int = 0) -> GateResult:
    base = side_rows(warehouse, baseline, metric, scope)
    cand = side_rows(warehouse, candidate, metric, scope)
    questions = warehouse.query_df("SELECT qa_id, any_value(question) AS question FROM qa.items GROUP BY qa_id")
    base = base.merge(questions, on="qa_id", how="left") if "question" not in base.columns else base
    return compare_sides(base, cand, metric, baseline=baseline, candidate=candidate, max_drop=max_drop,
                         confidence=confidence, n_boot=n_boot, n_perm=n_perm, seed=seed)


def compare_sides(base: pd.DataFrame, cand: pd.DataFrame, metric: str, *, baseline: str, candidate: str,
                  max_drop: float = 0.0, confidence: float = 0.95, n_boot: int = 2000, n_perm: int = 10000,
                  seed: int = 0) -> GateResult:
    keys = pair_keys(base)
    a, b = scored_rows(base), scored_rows(cand)
    res = compare_scored(a, b, metric, keys, n_boot=n_boot, n_perm=n_perm, seed=seed)
    flipped = flipped_questions(a, b, metric, keys)
    n = int(res["n_pairs"])
    # direction: a lower-is-better metric got worse when it went up
    sign = -1.0 if metric in LOWER_IS_BETTER else 1.0
    if n == 0:
        return GateResult(baseline, candidate, metric, max_drop, confidence, 0, None, None, None, None, None, None,
                          False, "no question scored on both sides: nothing to compare", flipped)
    worse_bound = res["ci_high"] if sign > 0 else (-res["ci_low"] if res["ci_low"] is not None else None)
    alpha = 1.0 - confidence
    significant = res["p_value"] is not None and res["p_value"] < alpha
    failed = bool(worse_bound is not None and worse_bound < -max_drop and significant)
    paired = _paired_frame(a, b, metric, keys)
    if failed:
        verdict = (f"the candidate is significantly worse by more than {max_drop:g} (interval entirely below "
                   f"{0.0 - max_drop:g}, p < {alpha:g})")
    elif res["mean_diff"] * sign < 0 and significant:
        verdict = f"significantly worse, but the interval reaches the tolerated drop of {max_drop:g}"
    elif res["mean_diff"] * sign < 0:
        verdict = "worse on these questions, but not significantly"
    else:
        verdict = "not worse"
    return GateResult(baseline, candidate, metric, max_drop, confidence, n,
                      float(paired["baseline_value"].mean()), float(paired["candidate_value"].mean()),
                      res["mean_diff"], res["ci_low"], res["ci_high"], res["p_value"], failed, verdict, flipped)


def _paired_frame(a: pd.DataFrame, b: pd.DataFrame, metric: str, keys: list[str]) -> pd.DataFrame:
    left = a[keys].assign(baseline_value=metric_values(a, metric))
    right = b[keys].assign(candidate_value=metric_values(b, metric))
    if "question" in a.columns:
        left = left.assign(question=a["question"].to_numpy())
    paired = left.merge(right, on=keys, how="inner")
    return paired.dropna(subset=["baseline_value", "candidate_value"])


def flipped_questions(a: pd.DataFrame, b: pd.DataFrame, metric: str, keys: list[str]) -> pd.DataFrame:
    """Questions whose value changed between the sides: ``regressed`` (worse in the metric's direction) first,
    the largest change first, then ``improved``."""
    paired = _paired_frame(a, b, metric, keys)
    delta = paired["candidate_value"] - paired["baseline_value"]
    if metric in LOWER_IS_BETTER:
        delta = -delta
    changed = (np.abs(delta) > 1e-9).to_numpy()
    # plain arrays: a Series assigned to an empty frame would bring its own index (rows of NaN)
    out = paired[changed].assign(delta=delta.to_numpy()[changed])
    out = out.assign(change=np.where(out["delta"].to_numpy() < 0, "regressed", "improved"))
    if "question" not in out.columns:
        out = out.assign(question=None)
    for c in ("filing_id", "scope", "qa_id"):
        if c not in out.columns:
            out = out.assign(**{c: None})
    out = out.sort_values(["delta", *keys], kind="stable")
    return out[["change", "filing_id", "scope", "qa_id", "baseline_value", "candidate_value", "delta",
                "question"]].reset_index(drop=True)
