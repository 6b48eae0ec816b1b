"""Evaluation: every retrieval configuration of the matrix on each filing's QA set, in both scopes
(the filing alone; the whole corpus with the other filings as distractors), and answer quality."""


import time

import dagster as dg
import pandas as pd
from pydantic import Field

from finrag_pipeline.core.config import config_fingerprint, parse_overrides, using_config_dir
from finrag_pipeline.core.evaluation.agreement import agreement_markdown, build_external_agreement
from finrag_pipeline.core.evaluation.leaderboard import build_eval_statistics, leaderboard_markdown
from finrag_pipeline.core.evaluation.runner import EvalMatrix, aggregate
from finrag_pipeline.core.scoring.metric_registry import HEADLINE_RETRIEVAL_METRICS
from finrag_pipeline.core.session import FinragSession
from finrag_pipeline.core.variants import VariantNotBuilt, is_default_chunking
from finrag_pipeline.defs.automation.conditions import EVALUATE_WHEN_INPUTS_CHANGE, REFRESH_MARTS
from finrag_pipeline.defs.index.variants import VARIANT_INDEX_KEYS
from finrag_pipeline.defs.metadata import row_counts
from finrag_pipeline.defs.partitions import evaluated_variants, filings_partitions, on_filing_dimension
from finrag_pipeline.defs.progress import logged_progress
from finrag_pipeline.defs.resources import EmbedderResource, FinragResource, session_from_resources

GROUP = "evaluation"


class EvalRunConfig(dg.Config):
    """Launchpad narrowing of assets_config/eval_matrix.yaml (empty = the whole matrix)."""

    retrievers: list[str] = []
    top_k: list[int] = []
    chunking: list[str] = Field(default=[], description='chunking variants ("default" = the pipeline\'s own)')
    scopes: list[str] = []
    models: list[str] = []
    prompt_types: list[str] = []
    retriever_overrides: list[str] = Field(
        default=[], description='Override any retriever field, e.g. "hybrid_rrf.rrf_k=30" (as `finrag --set`).')

    def session(self, finrag: FinragResource, embedder: EmbedderResource) -> FinragSession:
        return session_from_resources(finrag, embedder, parse_overrides(self.retriever_overrides))

    def matrix(self, session: FinragSession) -> EvalMatrix:
        """The session's eval_matrix.yaml (its config directory), narrowed by the launchpad fields."""
        narrowed = self.model_dump(exclude={"retriever_overrides"})
        narrowed["chunking"] = [None if is_default_chunking(c) else c for c in self.chunking]
        return session.eval_matrix(**narrowed)


def _variant_index_deps() -> list[dg.AssetDep]:
    """When eval_matrix.yaml names a chunking variant, a filing's retrieval_eval depends on that filing's
    variant index partitions (every variant of the dimension), so automation waits for them and re-evaluates
    when they change. Launchpad narrowing to a variant the file does not name is checked at run time."""
    if not evaluated_variants():
        return []
    return [dg.AssetDep(key, partition_mapping=on_filing_dimension()) for key in VARIANT_INDEX_KEYS]


def per_filing_evaluation(*config_files: str, description: str, deps: tuple = ()):
    """The asset decorator of both evaluations: one partition per filing, re-run when the filing's QA set,
    the corpus state, one of ``config_files`` (its code version) or one of ``deps`` changes."""
    return dg.asset(partitions_def=filings_partitions, group_name=GROUP, kinds={"duckdb"},
                    deps=["qa_set", "corpus_state", *deps], code_version=config_fingerprint(*config_files),
                    automation_condition=EVALUATE_WHEN_INPUTS_CHANGE, description=description)


@per_filing_evaluation(
    "retrievers.yaml", "eval_matrix.yaml", "lexicon.yaml", deps=tuple(_variant_index_deps()),
    description="Retrieval metrics (hit, MRR, precision, recall, AP, nDCG at chunk and page level, "
                "all-evidence hit) per question x retriever x k x scope. Tables eval.retrieval_results, eval.runs.",
)
def retrieval_eval(context: dg.AssetExecutionContext, config: EvalRunConfig, finrag: FinragResource,
                   embedder: EmbedderResource) -> dg.MaterializeResult:
    session = config.session(finrag, embedder)
    state = session.corpus_state()
    rows, metadata = _evaluate(context, config, finrag, session, "retrieval")
    table = aggregate(pd.DataFrame(rows), by=["scope", "config_name"], metrics=list(HEADLINE_RETRIEVAL_METRICS))
    return dg.MaterializeResult(metadata={
        **metadata,
        "questions": len({r["qa_id"] for r in rows}), "rows": len(rows), "configs": len({r["config_name"] for r in rows}),
        "corpus_state": state.corpus_state, "filings_in_corpus": state.n_filings,
        "leaderboard": dg.MetadataValue.md(table.round(3).to_markdown(index=False)),
    })


_RESULT_TABLES = {"retrieval": "eval.retrieval_results", "answers": "eval.answer_results"}


def _evaluate(context: dg.AssetExecutionContext, config: EvalRunConfig, finrag: FinragResource,
              session: FinragSession, kind: str) -> tuple[list[dict], dict]:
    """The ``kind`` ("retrieval" / "answers") evaluation of the partition's filing with the launchpad's
    matrix: (result rows, the metadata both assets report: the result table's row counts, seconds)."""
    fid = context.partition_key
    evaluate = session.evaluate_retrieval if kind == "retrieval" else session.evaluate_answers
    t0 = time.perf_counter()
    try:
        with logged_progress(context):  # searches / answers done, per configuration
            _run_rows, rows = evaluate(fid, config.matrix(session), dagster_run_id=context.run_id)
    except VariantNotBuilt as exc:  # never built here: the variant assets' partitions are what is missing
        raise dg.Failure(description=str(exc), metadata={
            "missing": dg.MetadataValue.json({f"{f}|{v}": why for (f, v), why in exc.missing.items()})}) from exc
    return rows, {**row_counts(finrag.warehouse, _RESULT_TABLES[kind], fid),
                  "seconds": round(time.perf_counter() - t0, 2)}


@per_filing_evaluation(
    # lexicon.yaml: the calculator's line items, XBRL concepts and formulas
    "retrievers.yaml", "eval_matrix.yaml", "models.yaml", "lexicon.yaml",
    description="Answers per question x model x prompt x decoding (offline calculator and extractive answerers "
                "by default, beside the sanity answerers) with response state, correctness, non-committal, "
                "grounding, period check, page and block citations "
                "and, when a judge is configured, faithfulness and relevancy. Table eval.answer_results.",
)
def answer_eval(context: dg.AssetExecutionContext, config: EvalRunConfig, finrag: FinragResource,
                embedder: EmbedderResource) -> dg.MaterializeResult:
    session = config.session(finrag, embedder)
    rows, metadata = _evaluate(context, config, finrag, session, "answers")
    states = pd.Series([r["response_state"] for r in rows]).value_counts().to_dict() if rows else {}
    return dg.MaterializeResult(metadata={
        **metadata, "answers": len(rows), "response_states": dg.MetadataValue.json(states),
    })


@dg.asset(
    group_name=GROUP, kinds={"duckdb"}, deps=[retrieval_eval, answer_eval], automation_condition=REFRESH_MARTS,
    description="Bootstrap 95% CIs of every retrieval and answer metric over the newest run of each "
                "configuration x filing (x scope), and paired comparisons of every configuration with the best "
                "of its scope x k (page nDCG; answers: correctness) on the same questions: difference, paired "
                "bootstrap CI, sign-flip p-value, distinguishable. Tables eval.leaderboard, eval.comparisons "
                "(fully replaced on each build; n_boot / n_perm / seed from eval_matrix.yaml `stats`). "
                "External agreement: per imported QA set and scope, Kendall tau-b / Spearman rho between the "
                "synthetic and the external leaderboard (eval_matrix.yaml `agreement`) with bootstrap intervals "
                "over questions and the flipped pairs. Tables eval.external_agreement, "
                "eval.external_agreement_configs.",
)
def eval_statistics(finrag: FinragResource) -> dg.MaterializeResult:
    with using_config_dir(finrag.config_dir or None):  # files it lacks keep their defaults
        matrix = EvalMatrix.load()
    stats = matrix.stats
    t0 = time.perf_counter()
    finrag.publish_distributed_results()
    result = build_eval_statistics(finrag.warehouse, stats)
    agreement, _ = build_external_agreement(finrag.warehouse, matrix.agreement, stats)
    comps = result.comparisons
    n_indist = int(((comps["metric"] == comps["best_by"]) & ~comps["is_best"].astype(bool)
                    & (comps["distinguishable"] == False)).sum()) if not comps.empty else 0  # noqa: E712
    return dg.MaterializeResult(metadata={
        "dagster/row_count": dg.MetadataValue.int(len(result.leaderboard)),
        "leaderboard_rows": len(result.leaderboard), "comparison_rows": len(comps),
        "configs": int(result.leaderboard[["kind", "scope", "config_name"]].drop_duplicates().shape[0])
        if not result.leaderboard.empty else 0,
        "configs_not_distinguishable_from_best": n_indist,
        "n_boot": stats.n_boot, "n_perm": stats.n_perm, "seed": stats.seed,
        "seconds": round(time.perf_counter() - t0, 2),
        "leaderboard": dg.MetadataValue.md(leaderboard_markdown(result)),
        "external_agreement": dg.MetadataValue.md(agreement_markdown(agreement)),
    })


class LabelledAnswersConfig(dg.Config):
    path: str = Field(default="", description="A labelled answer set (JSONL/CSV, data/labelled_answers/"
                      "LABELLING_GUIDE.md); empty = the repository's own set")
    set_name: str = Field(default="", description="Its name in eval.answer_agreement; empty = the file's stem")


@dg.asset(
    group_name=GROUP, kinds={"duckdb"},
    description="Agreement with people: scores every answer of a labelled answer set (default the repository's "
                "data/labelled_answers/answers.jsonl) with the project's answer scorer and writes the per-answer "
                "verdicts to eval.answer_agreement (replaced per set; `finrag score agreement FILE` does the same "
                "for any set). mart_answer_agreement aggregates them: coverage, agreement, Cohen's kappa, false "
                "accepts and rejects per set x split x answer kind.",
)
def labelled_answer_agreement(config: LabelledAnswersConfig, finrag: FinragResource) -> dg.MaterializeResult:
    from finrag_pipeline.core.evaluation.human_agreement import REPO_SET, score_labelled_set, summary_markdown

    name, verdicts, summ = score_labelled_set(finrag.warehouse, config.path or REPO_SET, set_name=config.set_name or None)
    return dg.MaterializeResult(metadata={
        "dagster/row_count": dg.MetadataValue.int(len(verdicts)), "set_name": name,
        "agreement": dg.MetadataValue.md(summary_markdown(summ)),
    })
