"""Outside RAG systems under test (assets_config/systems.yaml) and the regression gates, in Dagster.

* ``system_eval`` (one partition per filing): the systems named in the run config (launchpad, or
  ``finrag eval --system NAME``) asked every accepted question of the filing, scored like the built-in
  configurations into eval.retrieval_results / eval.answer_results. Started by hand: an outside system's
  answers change when its owners deploy, which no asset here can see.
* ``regression_gates``: a BLOCKING check on ``eval_statistics`` (the first step of the marts build) that
  runs every gate of systems.yaml (core/evaluation/gate.py). A candidate significantly worse than its
  baseline by more than the gate's max_drop fails it (severity ERROR): the dbt marts, the analysts'
  snapshot and the report are not refreshed with the regressed numbers. A gate whose side has no results
  yet is a WARN (it does not block).
"""

import time

import dagster as dg
from pydantic import Field

from finrag_pipeline.core.config import config_fingerprint, using_config_dir
from finrag_pipeline.core.evaluation.gate import GateInputError, run_gate
from finrag_pipeline.core.evaluation.runner import EvalMatrix
from finrag_pipeline.core.evaluation.systems import SYSTEMS_FILE, SystemsConfig
from finrag_pipeline.defs.automation.jobs import pool_tags
from finrag_pipeline.defs.metadata import row_counts
from finrag_pipeline.defs.partitions import filings_partitions
from finrag_pipeline.defs.resources import EmbedderResource, FinragResource, session_from_resources

GROUP = "evaluation"


class SystemEvalConfig(dg.Config):
    """Launchpad: which systems of systems.yaml to evaluate, and the matrix fields they use."""

    systems: list[str] = Field(default=[], description="names in assets_config/systems.yaml (empty: every one)")
    top_k: list[int] = Field(default=[], description="cut-offs of the retrieval metrics (empty: eval_matrix.yaml)")
    scopes: list[str] = Field(default=[], description='"filing" and/or "corpus" (empty: eval_matrix.yaml)')


@dg.asset(
    partitions_def=filings_partitions, group_name=GROUP, kinds={"duckdb"}, deps=["qa_set", "corpus_state"],
    code_version=config_fingerprint(SYSTEMS_FILE, "eval_matrix.yaml"),
    description="Outside RAG systems (assets_config/systems.yaml: http, python or file) asked every question of "
                "the filing's QA set; their contexts placed in the corpus (filing + page, else text overlap) and "
                "scored with the built-in retrieval and answer metrics. Rows in eval.retrieval_results / "
                "eval.answer_results with system_kind and system_state (timeouts, HTTP errors, malformed JSON, "
                "empty answers, contexts not in the corpus are states, scored 0 where they fail).",
)
def system_eval(context: dg.AssetExecutionContext, config: SystemEvalConfig, finrag: FinragResource,
                embedder: EmbedderResource) -> dg.MaterializeResult:
    session = session_from_resources(finrag, embedder)
    fid = context.partition_key
    with session.configured():
        systems = SystemsConfig.load()
    names = list(config.systems) or list(systems.systems)
    if not names:
        raise dg.Failure(description="no outside system in systems.yaml: add one (docs/SYSTEMS.md), or name one "
                                     "in the run config's `systems`")
    for name in names:
        systems.get(name)   # an unknown name fails before any call, naming the valid ones
    matrix = session.eval_matrix(top_k=config.top_k, scopes=config.scopes)
    t0 = time.perf_counter()
    states: dict[str, dict[str, int]] = {}
    for name in names:
        _runs, retrieval_rows, answer_rows = session.evaluate_system(fid, name, matrix, systems=systems,
                                                                     dagster_run_id=context.run_id)
        counts: dict[str, int] = {}
        for row in answer_rows:
            counts[row["response_state"]] = counts.get(row["response_state"], 0) + 1
        states[name] = counts
    return dg.MaterializeResult(metadata={
        **row_counts(finrag.warehouse, "eval.answer_results", fid),
        "systems": names, "response_states": dg.MetadataValue.json(states),
        "seconds": round(time.perf_counter() - t0, 2)})


evaluate_system_job = dg.define_asset_job(
    "evaluate_system", selection=dg.AssetSelection.assets(system_eval), partitions_def=filings_partitions,
    tags=pool_tags("evaluation"),
    description="Outside systems of systems.yaml on one filing's QA set (`finrag eval --system NAME`, or the "
                "launchpad with the system_eval config).",
)


@dg.asset_check(asset="eval_statistics", blocking=True,
                description="Every regression gate of assets_config/systems.yaml: the candidate must not be "
                            "significantly worse than the baseline by more than max_drop on the same questions "
                            "(paired bootstrap interval + sign-flip test). Blocks the marts build when one fails.")
def regression_gates(finrag: FinragResource) -> dg.AssetCheckResult:
    with using_config_dir(finrag.config_dir or None):
        gates = SystemsConfig.load().gates
        stats = EvalMatrix.load().stats
    results, missing = [], []
    for gate in gates:
        try:
            results.append(run_gate(finrag.warehouse, gate.baseline, gate.candidate, gate.metric,
                                    max_drop=gate.max_drop, scope=gate.scope, confidence=stats.confidence,
                                    n_boot=stats.n_boot, n_perm=stats.n_perm, seed=stats.seed))
        except GateInputError as exc:
            missing.append(f"{gate.label}: {exc}")
    failed = [r for r in results if r.failed]
    table = "\n\n".join(f"```\n{r.text(max_flipped=20)}\n```" for r in results) or "_no gate configured_"
    metadata = {"gates": len(gates), "failed": len(failed), "not_evaluated": dg.MetadataValue.json(missing),
                "results": dg.MetadataValue.md(table)}
    if failed:
        return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.ERROR, metadata=metadata,
                                   description="; ".join(f"{r.candidate} vs {r.baseline} on {r.metric}: {r.verdict}"
                                                         for r in failed))
    if missing:
        return dg.AssetCheckResult(passed=False, severity=dg.AssetCheckSeverity.WARN, metadata=metadata,
                                   description="gate(s) without results: " + "; ".join(missing))
    return dg.AssetCheckResult(passed=True, metadata=metadata)
