"""External agreement: do the synthetic QA sets rank retrieval configurations as an external set does?

For each imported external set (``qa.items`` whose source is an import format: financebench, jsonl,
csv; the set is ``metadata.external_set``, else the source) and each scope, over the newest evaluation runs:

* the SYNTHETIC leaderboard: every configuration's mean of the primary metric over the generated
  questions of the filings the external set covers; the EXTERNAL leaderboard: the same over the
  set's own questions. Primary metric: ``all_evidence_hit`` (every required evidence page in the top
  k) at k = 5 (``eval_matrix.yaml`` ``agreement``), scored as everywhere else (failures 0,
  ``no_relevant`` questions left out, NULL left out);
* Kendall's tau-b (ties in either leaderboard handled as tau-b: pairs tied in one ranking count in
  that ranking's tie correction, never as concordant or discordant) and Spearman's rho (Pearson
  correlation of average ranks) between the two leaderboards over the configurations both ran;
* a seeded percentile bootstrap interval of each, resampling QUESTIONS: the external set's and the
  synthetic set's questions are resampled independently (each with replacement, a question keeps its
  scores under every configuration), both leaderboards recomputed, the correlations recomputed.
  Resamples where a correlation is undefined (a leaderboard all tied) are left out and counted;
* the configuration pairs whose order flips: strictly ahead on one leaderboard and strictly behind
  on the other.

A correlation that cannot be computed (fewer than 3 configurations, or a leaderboard without any
spread) is NULL with the reason in ``note``. Pure core: :func:`build_external_agreement` reads and
fully replaces the two ``eval.external_agreement*`` tables of a warehouse.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from finrag_pipeline.core.evaluation.runner import AgreementConfig, StatsConfig, metric_values, scored_rows
from finrag_pipeline.core.qa.importers import IMPORT_FORMATS

AGREEMENT_TABLE = "eval.external_agreement"
AGREEMENT_CONFIGS_TABLE = "eval.external_agreement_configs"
# Imported sets are external (their sources are the import formats); every other source is synthetic.
EXTERNAL_SOURCES = IMPORT_FORMATS
MIN_CONFIGS = 3

AGREEMENT_COLUMNS = (
    "external_set", "source", "scope", "k", "metric", "n_filings", "filing_ids", "n_configs",
    "n_external_questions", "n_synthetic_questions", "kendall_tau_b", "kendall_ci_low", "kendall_ci_high",
    "spearman_rho", "spearman_ci_low", "spearman_ci_high", "n_boot", "n_boot_valid", "confidence", "seed",
    "n_pairs", "n_flipped_pairs", "flipped_pairs", "best_synthetic", "best_external", "note", "built_at")
AGREEMENT_CONFIG_COLUMNS = (
    "external_set", "source", "scope", "k", "metric", "config_name", "retriever", "chunking",
    "synthetic_mean", "synthetic_rank", "n_synthetic", "external_mean", "external_rank", "n_external",
    "rank_change", "built_at")

# DDL: core/warehouse.TABLE_DDL[AGREEMENT_TABLE] / [AGREEMENT_CONFIGS_TABLE] (docs: docs/WAREHOUSE.md).


# ---------------------------------------------------------------------------------------------
# Rank correlations


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b of two aligned score lists; None when undefined (n < 2 or one list all tied).

    tau_b = (C - D) / sqrt((n0 - T_x) (n0 - T_y)), n0 = n (n - 1) / 2 pairs, C / D the concordant /
    discordant pairs, T_x / T_y the pairs tied in x / in y (a pair tied in both is in both)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) != len(b):
        raise ValueError(f"kendall_tau_b needs aligned lists, got {len(a)} and {len(b)}")
    n = len(a)
    if n < 2:
        return None
    i, j = np.triu_indices(n, k=1)
    sx, sy = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    n0 = n * (n - 1) / 2
    tx, ty = float(np.sum(sx == 0)), float(np.sum(sy == 0))
    denom = np.sqrt((n0 - tx) * (n0 - ty))
    if denom == 0:
        return None
    return float(np.sum(sx * sy) / denom)


def _average_ranks(v: np.ndarray) -> np.ndarray:
    """1-based ranks, ascending, ties given their average rank."""
    order = np.argsort(v, kind="mergesort")
    ranks = np.empty(len(v))
    sorted_v = v[order]
    start = 0
    for end in range(1, len(v) + 1):
        if end == len(v) or sorted_v[end] != sorted_v[start]:
            ranks[order[start:end]] = (start + end + 1) / 2.0
            start = end
    return ranks


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson correlation of the average ranks; None when undefined."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(a) != len(b):
        raise ValueError(f"spearman_rho needs aligned lists, got {len(a)} and {len(b)}")
    if len(a) < 2:
        return None
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = np.sqrt(np.sum(ra * ra) * np.sum(rb * rb))
    return None if denom == 0 else float(np.sum(ra * rb) / denom)


def flipped_pairs(names: Sequence[str], synthetic: Sequence[float], external: Sequence[float]
                  ) -> list[tuple[str, str]]:
    """(a, b) pairs where a is strictly ahead of b on the synthetic leaderboard and strictly behind on
    the external one (ties on either side are not flips)."""
    out = []
    for i, j in itertools.combinations(range(len(names)), 2):
        ds, de = synthetic[i] - synthetic[j], external[i] - external[j]
        if ds * de < 0:
            out.append((names[i], names[j]) if ds > 0 else (names[j], names[i]))
    return sorted(out)


def competition_ranks(means: Sequence[float]) -> np.ndarray:
    """Leaderboard ranks, 1 = best (highest mean), ties share the average rank."""
    return _average_ranks(-np.asarray(means, dtype=float))


# ---------------------------------------------------------------------------------------------
# Question x configuration matrices


@dataclass(frozen=True)
class ScoreMatrix:
    """Primary-metric values, one row per question (filing, qa_id), one column per configuration;
    NaN where a configuration has no value for a question (not computable / not run)."""

    configs: list[str]
    values: np.ndarray

    def means(self, rows: np.ndarray | None = None) -> np.ndarray:
        v = self.values if rows is None else self.values[rows]
        if not len(v):
            return np.full(len(self.configs), np.nan)
        with warnings.catch_warnings():   # a configuration without any value: NaN, said once by the caller
            warnings.simplefilter("ignore", category=RuntimeWarning)
            return np.nanmean(v, axis=0)

    def counts(self) -> np.ndarray:
        return np.sum(~np.isnan(self.values), axis=0)


def score_matrix(rows: pd.DataFrame, metric: str, configs: Sequence[str]) -> ScoreMatrix:
    """The scored rows (:func:`runner.scored_rows`, failures 0) as a question x configuration matrix."""
    scored = scored_rows(rows)
    if scored.empty:
        return ScoreMatrix(list(configs), np.empty((0, len(configs))))
    frame = pd.DataFrame({"filing_id": scored["filing_id"].to_numpy(), "qa_id": scored["qa_id"].to_numpy(),
                          "config_name": scored["config_name"].to_numpy(),
                          "value": metric_values(scored, metric)})
    wide = frame.pivot_table(index=["filing_id", "qa_id"], columns="config_name", values="value",
                             aggfunc="mean", dropna=False).reindex(columns=list(configs))
    wide = wide[wide.notna().any(axis=1)]
    return ScoreMatrix(list(configs), wide.to_numpy(dtype=float))


def _percentile(values: list[float], confidence: float) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(np.asarray(values), [alpha, 1 - alpha])
    return float(lo), float(hi)


def agreement_of(synthetic: ScoreMatrix, external: ScoreMatrix, stats: StatsConfig) -> dict[str, Any]:
    """Correlations, bootstrap intervals and flips of two matrices over the same configurations."""
    names = synthetic.configs
    syn_means, ext_means = synthetic.means(), external.means()
    keep = ~(np.isnan(syn_means) | np.isnan(ext_means))
    names_kept = [n for n, k in zip(names, keep, strict=True) if k]
    out: dict[str, Any] = {"n_configs": len(names_kept), "n_boot": stats.n_boot, "confidence": stats.confidence,
                           "seed": stats.seed, "n_boot_valid": 0, "kendall_tau_b": None, "spearman_rho": None,
                           "kendall_ci_low": None, "kendall_ci_high": None, "spearman_ci_low": None,
                           "spearman_ci_high": None, "note": None}
    flips = flipped_pairs(names_kept, syn_means[keep].tolist(), ext_means[keep].tolist())
    out.update(n_pairs=len(names_kept) * (len(names_kept) - 1) // 2, n_flipped_pairs=len(flips),
               flipped_pairs=json.dumps([f"{a} > {b} on synthetic, {b} > {a} on external" for a, b in flips]))
    if len(names_kept) < MIN_CONFIGS:
        out["note"] = f"{len(names_kept)} configuration(s) scored on both sets; rank agreement needs {MIN_CONFIGS}"
        return out
    tau = kendall_tau_b(syn_means[keep], ext_means[keep])
    rho = spearman_rho(syn_means[keep], ext_means[keep])
    out.update(kendall_tau_b=tau, spearman_rho=rho)
    if tau is None:
        out["note"] = "a leaderboard has all configurations tied: rank correlation undefined"
        return out
    rng = np.random.default_rng(stats.seed)
    n_syn, n_ext = len(synthetic.values), len(external.values)
    taus, rhos = [], []
    for _ in range(stats.n_boot):
        s = synthetic.means(rng.integers(0, n_syn, n_syn))[keep]
        e = external.means(rng.integers(0, n_ext, n_ext))[keep]
        if np.isnan(s).any() or np.isnan(e).any():
            continue
        t, r = kendall_tau_b(s, e), spearman_rho(s, e)
        if t is not None and r is not None:
            taus.append(t)
            rhos.append(r)
    out["n_boot_valid"] = len(taus)
    out["kendall_ci_low"], out["kendall_ci_high"] = _percentile(taus, stats.confidence)
    out["spearman_ci_low"], out["spearman_ci_high"] = _percentile(rhos, stats.confidence)
    if len(taus) < stats.n_boot:
        out["note"] = (f"{stats.n_boot - len(taus)} of {stats.n_boot} resamples had a leaderboard all tied "
                       "and were left out of the intervals")
    return out


# ---------------------------------------------------------------------------------------------
# Sets, scopes and the tables


def question_sets(qa_items: pd.DataFrame) -> pd.DataFrame:
    """qa_id, filing_id, source and set name (``external_set`` for imported items, None for synthetic)."""
    if qa_items.empty:
        return pd.DataFrame(columns=["qa_id", "filing_id", "source", "external_set"])

    def set_name(row: pd.Series) -> str | None:
        if row["source"] not in EXTERNAL_SOURCES:
            return None
        meta = row.get("metadata")
        try:
            meta = json.loads(meta) if isinstance(meta, str) else (meta or {})
        except ValueError:
            meta = {}
        return str(meta.get("external_set") or row["source"])

    out = qa_items[["qa_id", "filing_id", "source"]].copy()
    out["source"] = out["source"].fillna("generated")
    out["external_set"] = qa_items.apply(set_name, axis=1) if len(qa_items) else None
    return out.drop_duplicates(["qa_id", "filing_id"])


def compute_external_agreement(latest_rows: pd.DataFrame, qa_items: pd.DataFrame,
                               config: AgreementConfig | None = None, stats: StatsConfig | None = None, *,
                               built_at: datetime | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(eval.external_agreement rows, eval.external_agreement_configs rows) from the CURRENT retrieval
    rows (:func:`leaderboard.latest_retrieval_rows`) and ``qa.items`` (qa_id, filing_id, source, metadata)."""
    config, stats = config or AgreementConfig(), stats or StatsConfig()
    built_at = built_at or datetime.now(UTC).replace(tzinfo=None)
    summary: list[dict[str, Any]] = []
    per_config: list[dict[str, Any]] = []
    sets = question_sets(qa_items)
    if latest_rows.empty or sets.empty or config.metric not in latest_rows.columns:
        return _frame(summary, AGREEMENT_COLUMNS), _frame(per_config, AGREEMENT_CONFIG_COLUMNS)
    rows = latest_rows[latest_rows["k"] == config.at_k].merge(
        sets[["qa_id", "filing_id", "source", "external_set"]], on=["qa_id", "filing_id"], how="inner")
    external = rows[rows["external_set"].notna()]
    for (set_name, scope), ext in external.groupby(["external_set", "scope"], sort=True):
        filings = sorted(ext["filing_id"].unique())
        syn = rows[rows["external_set"].isna() & rows["filing_id"].isin(filings) & (rows["scope"] == scope)]
        configs = sorted(set(ext["config_name"]) & set(syn["config_name"]))
        syn_m, ext_m = score_matrix(syn, config.metric, configs), score_matrix(ext, config.metric, configs)
        result = agreement_of(syn_m, ext_m, stats)
        syn_means, ext_means = syn_m.means(), ext_m.means()
        ranked = [c for c, s, e in zip(configs, syn_means, ext_means, strict=True) if not (np.isnan(s) or np.isnan(e))]
        mean_of = dict(zip(configs, zip(syn_means, ext_means, strict=True), strict=True))
        syn_rank = dict(zip(ranked, competition_ranks([mean_of[c][0] for c in ranked]), strict=True))
        ext_rank = dict(zip(ranked, competition_ranks([mean_of[c][1] for c in ranked]), strict=True))
        source = str(ext["source"].iloc[0])
        if not configs:
            result["note"] = "no configuration was evaluated on both the external and the synthetic questions"
        summary.append({
            "external_set": set_name, "source": source, "scope": scope, "k": config.at_k, "metric": config.metric,
            "n_filings": len(filings), "filing_ids": json.dumps(filings),
            "n_external_questions": len(ext_m.values), "n_synthetic_questions": len(syn_m.values),
            "best_synthetic": min(syn_rank, key=lambda c: (syn_rank[c], c)) if syn_rank else None,
            "best_external": min(ext_rank, key=lambda c: (ext_rank[c], c)) if ext_rank else None,
            **result})
        first = ext.drop_duplicates("config_name").set_index("config_name")
        for c, n_s, n_e in zip(configs, syn_m.counts(), ext_m.counts(), strict=True):
            s, e = mean_of[c]
            per_config.append({
                "external_set": set_name, "source": source, "scope": scope, "k": config.at_k, "metric": config.metric,
                "config_name": c, "retriever": first.at[c, "retriever"] if "retriever" in first else None,
                "chunking": first.at[c, "chunking"] if "chunking" in first else None,
                "synthetic_mean": None if np.isnan(s) else float(s), "synthetic_rank": syn_rank.get(c),
                "n_synthetic": int(n_s), "external_mean": None if np.isnan(e) else float(e),
                "external_rank": ext_rank.get(c), "n_external": int(n_e),
                "rank_change": (syn_rank[c] - ext_rank[c]) if c in syn_rank else None})
    agreement, configs_frame = _frame(summary, AGREEMENT_COLUMNS), _frame(per_config, AGREEMENT_CONFIG_COLUMNS)
    agreement["built_at"] = built_at
    configs_frame["built_at"] = built_at
    return agreement, configs_frame


def _frame(records: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    df = pd.DataFrame(records, columns=list(columns))
    return df.astype(object).where(df.notna(), None)


def build_external_agreement(warehouse: Any, config: AgreementConfig | None = None,
                             stats: StatsConfig | None = None, *, built_at: datetime | None = None
                             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read the newest retrieval rows and qa.items of ``warehouse``, compute, and fully replace
    ``eval.external_agreement`` and ``eval.external_agreement_configs``."""
    from finrag_pipeline.core.scoring.results_views import RETRIEVAL_CURRENT

    latest = warehouse.query_df(f"SELECT * FROM {RETRIEVAL_CURRENT} ORDER BY source_row")
    items = warehouse.query_df("SELECT qa_id, filing_id, source, metadata FROM qa.items "
                               "WHERE status IN ('accepted', 'edited')")
    agreement, configs = compute_external_agreement(latest, items, config, stats, built_at=built_at)
    warehouse.replace_rows(AGREEMENT_TABLE, agreement, where={})
    warehouse.replace_rows(AGREEMENT_CONFIGS_TABLE, configs, where={})
    return agreement, configs


def agreement_markdown(agreement: pd.DataFrame) -> str:
    """One line per external set x scope (Dagster metadata)."""
    if agreement.empty:
        return "_No external QA set imported (finrag qa import): no agreement to measure._"

    def fmt(v: Any, lo: Any, hi: Any) -> str:
        if v is None or pd.isna(v):
            return "-"
        ci = "" if lo is None or pd.isna(lo) else f" [{lo:.2f}, {hi:.2f}]"
        return f"{v:.2f}{ci}"

    def cell(v: Any) -> str:   # names come from files and YAML: keep them from breaking the table
        return str(v).replace("|", "/").replace("\n", " ")

    lines = ["| external set | scope | configs | questions (ext / syn) | Kendall tau-b | Spearman rho | flipped pairs |",
             "|---|---|---|---|---|---|---|"]
    for _, r in agreement.iterrows():
        lines.append(f"| {cell(r['external_set'])} | {cell(r['scope'])} | {r['n_configs']} | {r['n_external_questions']} / "
                     f"{r['n_synthetic_questions']} | {fmt(r['kendall_tau_b'], r['kendall_ci_low'], r['kendall_ci_high'])} | "
                     f"{fmt(r['spearman_rho'], r['spearman_ci_low'], r['spearman_ci_high'])} | "
                     f"{r['n_flipped_pairs']} of {r['n_pairs']} |")
    return "\n".join(lines)
