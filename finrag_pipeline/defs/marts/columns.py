"""Column schemas of the dbt models for the Dagster UI: names and types from the warehouse catalog
(after the build, so every column is there), descriptions from the dbt yml where written, else from
the naming rules the marts follow (``<metric>_mean``, ``<metric>_ci_low``, ``<metric>_boot_ci_high``...)."""

from __future__ import annotations

import re
from collections.abc import Mapping

import dagster as dg

METRICS = {
    "hit": "1 if a relevant {level} is in the top k",
    "mrr": "reciprocal rank of the first relevant {level}",
    "ndcg": "nDCG@k over relevant {level}s",
    "recall": "share of relevant {level}s in the top k",
    "precision": "share of the top k that are relevant {level}s",
    "ap": "average precision over relevant {level}s",
}
WHOLE_METRICS = {
    "all_evidence_hit": "1 if every required evidence group is hit in the top k",
    "figure_match": "1 if the answer states the reference figure",
    "grounded": "1 if the answer's figures appear in the retrieved evidence",
    "period_ok": "1 if the answer's period matches the question's",
    "citation_precision": "share of cited places that are evidence",
    "citation_recall": "share of evidence groups cited",
    "faithfulness": "judge score: the answer follows from the evidence (NULL without a judge)",
    "answer_relevancy": "judge score: the answer addresses the question (NULL without a judge)",
    "state_correct": "1 if the response state (answered / abstained) is the expected one",
    "latency": "retrieval latency in milliseconds",
}
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
    ("_p50_ms", "median {m}"), ("_p95_ms", "95th percentile of {m}"),
    ("_n", "number of questions with a computable {m}"),
]
COLUMNS = {
    "config_name": "retrieval configuration (assets_config/retrievers.yaml x eval_matrix.yaml)",
    "retriever": "retriever name", "k": "number of hits retrieved", "chunking": "chunking variant",
    "scope": "filing = the filing alone; corpus = the whole corpus with the other filings as distractors",
    "filing_id": "filing (partition key), e.g. AAPL-2024-10K", "qa_id": "question id",
    "question_type": "kind of question (numerical, narrative, ...)", "n_questions": "questions counted",
    "n_no_relevant": "questions without relevant evidence (left out of means)",
    "coverage": "share of scoreable questions that ran without error",
    "rank_in_scope_k": "rank within scope and k by nDCG (chunk, else page)",
    "is_best": "the best configuration of its scope and k (page nDCG)",
    "distinguishable_from_best": "the paired 95% CI of the difference to the best excludes 0",
    "delta_vs_best": "mean paired difference to the best configuration (config - best)",
    "p_value_vs_best": "sign-flip permutation p-value of the difference to the best",
    "n_filings_in_corpus": "filings in the corpus when the run happened",
    "corpus_state": "hash of the indexed corpus the run saw", "run_id": "evaluation run id",
    "model": "answer model", "prompt_type": "prompt variant", "temperature": "decoding temperature",
    "chance_level": "mean over the questions of the metric's chance level (k random leaves of the scope)",
    "chance_band": "chance_band_se standard errors of the chance level's mean: the band a random retriever stays in",
    "above_chance": "mean - chance_level", "n_with_chance": "questions with a recorded chance level",
    "within_chance_band": "|mean - chance_level| <= chance_band + chance_band_slack (sanity_random must be)",
    "chance_note": "why chance_level is n/a (NULL when it is computed)",
    "max_correctness": "the sanity limit on correctness (metric_registry.SANITY_LIMITS)",
    "within_limit": "correctness <= max_correctness (NULL without answerable questions)",
}


def _metric_phrase(name: str) -> str | None:
    if name in WHOLE_METRICS:
        return f"{name} ({WHOLE_METRICS[name]})"
    m = re.fullmatch(r"(hit|mrr|ndcg|recall|precision|ap)_(chunk|page)", name)
    return f"{name} ({METRICS[m.group(1)].format(level=m.group(2))})" if m else None


def describe_column(name: str) -> str:
    """A description from the marts' naming rules; '' when no rule applies."""
    if name in COLUMNS:
        return COLUMNS[name]
    phrase = _metric_phrase(name)
    if phrase:
        return phrase
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
