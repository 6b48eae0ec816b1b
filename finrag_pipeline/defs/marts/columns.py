"""Column schemas of the dbt models for the Dagster UI: names and types from the warehouse catalog
(after the build, so every column is there), descriptions from the dbt yml where written, else from
the naming rules the marts follow (``<metric>_mean``, ``<metric>_ci_low``, ``<metric>_boot_ci_high``...,
with each metric's meaning read from the metric registry), else from the shared column names below
(one meaning per name across the staging views and marts)."""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg

from finrag_pipeline.core.scoring.metric_registry import ANSWER_METRIC_SPECS, RETRIEVAL_METRIC_SPECS
from finrag_pipeline.core.scoring.response_states import FAILURE_STATES, RESPONSE_STATES

METRICS = {s.name: s.description for s in (*RETRIEVAL_METRIC_SPECS, *ANSWER_METRIC_SPECS)}
SUFFIXES = [
    ("_boot_ci_low", "lower bound of the seeded percentile bootstrap 95% interval of {m} (eval.leaderboard)"),
    ("_boot_ci_high", "upper bound of the seeded percentile bootstrap 95% interval of {m} (eval.leaderboard)"),
    ("_ci_low", "lower bound of the closed-form 95% interval of {m} (Wilson for 0/1 metrics, else normal)"),
    ("_ci_high", "upper bound of the closed-form 95% interval of {m} (Wilson for 0/1 metrics, else normal)"),
    ("_chance_band", "band around the chance level of {m}: chance_band_se standard errors of its mean "
                     "(metric_registry.SANITY_LIMITS; mart_chance_levels)"),
    ("_chance", "chance level of {m}: what k leaf chunks drawn at random from the scope earn on the same "
                "questions (mart_chance_levels; NULL = not recorded for some question, see its chance_note)"),
    ("_delta_vs_smallest", "change of the mean {m} against the smallest corpus this configuration was measured on"),
    ("_coverage", "share of rows where {m} was computable"),
    ("_mean", "mean {m} over questions (failed questions count 0, not-computable values are left out)"),
    ("_filing", "mean {m} in scope filing, over the questions answered in both scopes"),
    ("_corpus", "mean {m} in scope corpus, over the questions answered in both scopes"),
    ("_cost", "corpus minus filing mean of {m} (negative: other filings crowd the evidence out)"),
    ("_n", "number of questions with a computable {m}"),
]
COLUMNS = {
    # keys of a configuration, a filing, a question
    "config_name": "retrieval configuration (assets_config/retrievers.yaml x eval_matrix.yaml)",
    "config_hash": "hash of the configuration's settings (changes when the configuration is edited)",
    "retriever": "retriever name", "k": "number of hits retrieved", "chunking": "chunking variant",
    "scope": "filing = the filing alone; corpus = the whole corpus with the other filings as distractors",
    "filing_id": "filing (partition key), e.g. AAPL-2024-10K", "qa_id": "question id",
    "company": "company name as printed in the filing", "ticker": "trading symbol",
    "tickers": "every ticker the company filed under, comma-separated", "cik": "SEC Central Index Key",
    "form_type": "SEC form (10-K)", "fiscal_year": "fiscal year the filing reports",
    "period_end_date": "end of the fiscal period the filing reports", "source_format": "pdf or html (inline XBRL)",
    "n_pages": "pages of the document", "registered_at": "when the filing was registered",
    "removed": "the filing was removed from the corpus (finrag remove)",
    "chunk_type": "prose, section, table or table_row", "n_chunks": "chunks", "n_leaf_chunks": "indexed (leaf) chunks",
    "n_chars": "characters of chunk text",
    "question": "the question text (from the filing's generated or imported QA set)",
    "reference_answer": "the reference answer", "question_type": "kind of question (numerical, narrative, ...)",
    "difficulty": "difficulty the generator assigned", "generator": "QA generator that wrote the question",
    "qa_status": "review status of the question (qa review)", "qa_source": "where the question came from "
    "(generated, or the import format)", "external_set": "name of the imported question set (NULL: synthetic)",
    "question_set": "the external set's name for imported questions, 'synthetic' otherwise",
    "leakage_score": "share of the question's content words that occur in its evidence and the lexicon "
    "(core/qa/leakage.py)", "leakage_evidence_share": "share of the question's content words found in its evidence",
    "leakage_lexicon_share": "share of the question's content words found in the retrievers' lexicon",
    "leakage_band": "low / medium / high leakage score; n/a when not computable",
    "leakage_score_mean": "mean leakage score of the questions in the band",
    # counts
    "n_questions": "questions counted", "n_filings": "filings behind the row",
    "n_configs": "configurations behind the row", "n_ok": "questions whose retrieval ran without error",
    "n_failed": "questions whose retrieval failed (they count 0 in the means)",
    "n_no_relevant": "questions without relevant evidence (left out of means)",
    "n_answers": "answers scored", "n_answerable": "answerable questions (with reference evidence)",
    "n_unanswerable": "unanswerable questions (no evidence in the filing)", "n_errors": "answers that errored",
    "n_paired": "questions behind both means of the pair", "n_runs": "evaluation runs behind the row",
    "n_filings_evaluated": "filings whose questions the point covers",
    "coverage": "share of scoreable questions that ran without error",
    "chunk_metrics_coverage": "share of scoreable questions with a chunk-level score",
    "page_metrics_coverage": "share of scoreable questions with a page-level score",
    "error_rate": "share of answers that errored",
    # one evaluation row or run
    "run_id": "evaluation run id", "kind": "retrieval or answers evaluation", "code_version": "code version of the "
    "evaluation asset (hash of the evaluation config files)", "run_status": "ok or error",
    "message": "the run's error or note", "dagster_run_id": "Dagster run that wrote it",
    "started_at": "when the run started", "finished_at": "when the run finished",
    "run_at": "when the run finished, else started (orders runs)",
    "run_recency": "1 = the newest run of this configuration x filing x scope, 2 the one before",
    "n_filings_in_corpus": "filings in the corpus when the run happened",
    "corpus_state": "hash of the indexed corpus the run saw",
    "status": "ok, error, or no_relevant (no relevant evidence to find)", "is_ok": "status is ok",
    "is_failed": "status is error (scored 0)", "is_no_relevant": "status is no_relevant (left out of means)",
    "error": "error message of a failed row", "n_retrieved": "hits returned",
    "first_relevant_rank_chunk": "rank of the first relevant chunk (NULL: none in the top k)",
    "first_relevant_rank_page": "rank of the first relevant page (NULL: none in the top k)",
    "latency_ms": "latency in milliseconds", "evaluated_at": "when the row was evaluated",
    "resolution": "company/period resolution against the question's own filing: exact, covers, wrong or "
    "unresolved (NULL: the configuration resolves nothing)", "resolution_correct": "1 if resolution is exact or covers",
    "resolved_filings": "filings the question resolved to", "model": "answer model", "prompt_type": "prompt variant",
    "temperature": "decoding temperature", "top_p": "nucleus sampling top_p", "response_state":
    "what the answerer returned: " + ", ".join(sorted(RESPONSE_STATES)),
    "is_error": "the answer failed (" + ", ".join(sorted(FAILURE_STATES)) + ")", "answerable": "the question has evidence",
    "is_sanity": "a lazy sanity answerer (must score near 0)", "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens", "cost_usd": "LLM cost in USD (0 for local models)",
    "prompt_tokens_mean": "mean prompt tokens per answer", "completion_tokens_mean": "mean completion tokens per answer",
    "cost_usd_total": "LLM cost of all answers in USD", "share": "share of the answers in this response state",
    "response_state_distribution": "share of answers per response state",
    "latency_p50_ms": "median latency in milliseconds", "latency_p95_ms": "95th percentile latency in milliseconds",
    "last_evaluated_at": "newest evaluation behind the row",
    # outside systems under test (assets_config/systems.yaml, docs/SYSTEMS.md)
    "system_kind": "kind of an outside system under test: http, python or file (NULL: a built-in configuration)",
    "system_state": "state of the outside system's call: ok, abstained, a failure state, or contexts_not_in_corpus",
    "n_contexts": "contexts the outside system returned",
    "n_contexts_unmapped": "contexts of the outside system not found in the corpus (counted, never evidence)",
    "mapping_confidence": "mean confidence of placing the outside system's contexts in the corpus (unmapped = 0)", "first_run_at": "first run behind the point",
    "last_run_at": "last run behind the point",
    # ranks and comparisons
    "rank_in_scope_k": "rank within scope and k by nDCG (chunk, else page)",
    "rank_by_page_in_scope_k": "rank within scope and k by page nDCG, then page hit",
    "rank_in_set": "rank within the question set, scope and k by all-evidence hit, then page hit",
    "is_best": "the best configuration of its scope and k (page nDCG)",
    "best_config_name": "the best configuration (of the scope and k, or on this question)",
    "compared_on_metric": "metric of the comparison with the best", "best_ndcg_chunk": "best chunk nDCG on it",
    "distinguishable_from_best": "the paired 95% CI of the difference to the best excludes 0",
    "delta_vs_best": "mean paired difference to the best configuration (config - best)",
    "delta_vs_best_ci_low": "lower bound of the paired-bootstrap 95% interval of delta_vs_best",
    "delta_vs_best_ci_high": "upper bound of the paired-bootstrap 95% interval of delta_vs_best",
    "p_value_vs_best": "sign-flip permutation p-value of the difference to the best",
    "n_pairs_vs_best": "questions both configurations ran",
    "boot_n_resamples": "bootstrap resamples behind the _boot_ intervals", "boot_built_at": "when eval_statistics "
    "computed the bootstrap intervals", "worst_rank": "rank among the questions of the scope, hardest first",
    # regressions (latest against previous run)
    "latest_run_id": "newest run", "previous_run_id": "the run before it", "latest_run_at": "when the newest ran",
    "previous_run_at": "when the previous ran", "latest_n_filings_in_corpus": "corpus size of the newest run",
    "previous_n_filings_in_corpus": "corpus size of the previous run",
    "config_changed": "the configuration hash moved between the two runs", "metric": "metric name",
    "latest_n": "questions scored in the newest run", "previous_n": "questions scored in the previous run",
    "latest_mean": "mean of the newest run", "previous_mean": "mean of the previous run",
    "delta": "latest mean - previous mean", "previous_ci_low": "lower bound of the previous run's 95% interval",
    "previous_ci_high": "upper bound of the previous run's 95% interval",
    "delta_ci_low": "lower bound of the paired 95% interval of the per-question difference",
    "delta_ci_high": "upper bound of the paired 95% interval of the per-question difference",
    "outside_interval": "the latest mean falls outside the previous run's interval",
    "paired_significant": "the paired interval of the difference excludes 0",
    "direction": "regression, improvement, within_interval or undetermined (no previous interval)",
    # company resolution, sanity answerers
    "n_exact": "questions resolved to exactly their filing", "n_covers": "resolved to their filing among others",
    "n_wrong": "resolved to other filings only", "n_unresolved": "no company/period resolved (whole scope searched)",
    "resolution_accuracy": "(exact + covers) / questions; failed searches count 0",
    "exact_rate": "share resolved to exactly their filing",
    "abstention_accuracy": "share of unanswerable questions not answered",
    # synthetic vs external leaderboards (core/evaluation/agreement.py)
    "source": "import format of the external set", "filing_ids": "filings both leaderboards cover",
    "n_external_questions": "questions of the external set", "n_synthetic_questions": "synthetic questions on "
    "the same filings", "kendall_tau_b": "Kendall tau-b between the synthetic and the external ranking",
    "kendall_ci_low": "lower bound of the bootstrap interval of kendall_tau_b",
    "kendall_ci_high": "upper bound of the bootstrap interval of kendall_tau_b",
    "spearman_rho": "Spearman rho between the two rankings",
    "spearman_ci_low": "lower bound of the bootstrap interval of spearman_rho",
    "spearman_ci_high": "upper bound of the bootstrap interval of spearman_rho",
    "verdict": "agree, disagree, not distinguishable from no agreement, or not computable",
    "n_pairs": "configuration pairs compared", "n_flipped_pairs": "pairs ordered differently by the two sets",
    "flipped_pairs": "those pairs (JSON list)", "best_synthetic": "best configuration on the synthetic questions",
    "best_external": "best configuration on the external questions", "best_differs": "the two bests differ",
    "n_boot": "bootstrap resamples", "n_boot_valid": "resamples with a defined correlation",
    "confidence": "interval confidence level", "seed": "bootstrap seed",
    "note": "why a value is NULL, or a caveat", "built_at": "when eval_statistics wrote the row",
    "synthetic_mean": "mean on the synthetic questions", "synthetic_rank": "rank on the synthetic questions "
    "(1 = best, ties share the average rank)", "n_synthetic": "synthetic questions scored",
    "external_mean": "mean on the external questions", "external_rank": "rank on the external questions",
    "n_external": "external questions scored",
    "rank_change": "synthetic rank - external rank (negative: the synthetic set flatters the configuration)",
    # chance levels and sanity limits (mart_chance_levels, mart_sanity_answers)
    "chance_level": "mean over the questions of the metric's chance level (k random leaves of the scope)",
    "chance_band": "chance_band_se standard errors of the chance level's mean: the band a random retriever stays in",
    "above_chance": "mean - chance_level", "n_with_chance": "questions with a recorded chance level",
    "within_chance_band": "|mean - chance_level| <= chance_band + chance_band_slack (sanity_random must be)",
    "chance_note": "why chance_level is n/a (NULL when it is computed)",
    "chance_pool_size": "N: leaf chunks in the scope's candidate pool, what sanity_random draws from "
    "(NULL: evaluated before chance levels were recorded)",
    "chance_evidence_chunks": "g: the question's evidence chunks in the pool",
    "chance_evidence_page_chunks": "m: leaves of the pool on one of the question's evidence pages",
    "max_correctness": "the sanity limit on correctness (metric_registry.SANITY_LIMITS)",
    "within_limit": "correctness <= max_correctness (NULL without answerable questions)",
}


def _metric_phrase(name: str) -> str | None:
    if name == "latency":
        return "latency (milliseconds)"
    return f"{name} ({METRICS[name]})" if name in METRICS else None


def describe_column(name: str) -> str:
    """A description from the marts' naming rules and shared names; '' when none applies."""
    if name in COLUMNS:
        return COLUMNS[name]
    phrase = _metric_phrase(name)
    if phrase:
        return f"{phrase}, per question"
    for suffix, template in SUFFIXES:
        if name.endswith(suffix):
            phrase = _metric_phrase(name[: -len(suffix)])
            if phrase:
                return template.format(m=phrase)
    return ""


def column_schema(catalog_columns: list[tuple[str, str]], yml_columns: Mapping[str, Mapping]) -> dg.TableSchema:
    """``catalog_columns``: (name, type) in table order; ``yml_columns``: the dbt manifest's columns."""
    return dg.TableSchema(columns=[
        dg.TableColumn(name=name, type=dtype,
                       description=(yml_columns.get(name, {}).get("description") or describe_column(name)) or None)
        for name, dtype in catalog_columns])
