"""How a failure scores, defined once (issue 29): which metrics a failed row is scored 0 on, and that 0.

A failed search or a failed answer delivered nothing: it scores :data:`FAILED_SCORE` on every metric that
applies, so it lowers a mean instead of vanishing from it. Every retrieval metric applies. An answer metric
applies unless it is a behaviour rate (``non_committal``, ``abstention_correct``: kept as recorded) or the
LLM judge's and the configuration has no judge (then it is "n/a", never a mean of zeros), or it needs the
reference's key facts and the reference has none (``key_fact_recall``: NULL, not computable, never 0).

The rule is applied twice, from here, so stored rows and the marts agree:
* when a row is written (runner._retrieval_row, answer_metrics.score_answer): the raw tables already carry
  the zeros, so even a naive AVG over them counts a failure;
* when rows are read (the SQL of core/scoring/results_views.py, and runner.metric_values for data
  frames): a row any writer stored (an outside system's, an older version's) is scored by the same rule.
"""

from __future__ import annotations

from finrag_pipeline.core.scoring.metric_registry import (
    ANSWER_METRIC_SPECS,
    RETRIEVAL_METRIC_SPECS,
    MetricSpec,
)

FAILED_SCORE = 0.0


def failure_applies(spec: MetricSpec, *, judged: bool, has_key_facts: bool = True) -> bool:
    """Whether a failed row scores :data:`FAILED_SCORE` on ``spec`` (``judged``: the configuration has an
    LLM judge; ``has_key_facts``: the reference gives key facts)."""
    if spec.level != "answer":
        return True
    return not spec.rate and (judged or not spec.judge) and (has_key_facts or not spec.needs_key_facts)


def failed_retrieval_scores() -> dict[str, float]:
    """The metric values of a failed search: every retrieval metric 0."""
    return {s.name: FAILED_SCORE for s in RETRIEVAL_METRIC_SPECS if failure_applies(s, judged=False)}


def unanswered_scores(*, judged: bool, has_key_facts: bool = True) -> dict[str, float | None]:
    """The metric values of an answerable question that got no answer (a failure, an abstention, no
    evidence): 0 where the rule applies, None (not computed) for the rates, an absent judge's metrics and,
    without key facts in the reference, the metrics that need them."""
    return {s.name: FAILED_SCORE if failure_applies(s, judged=judged, has_key_facts=has_key_facts) else None
            for s in ANSWER_METRIC_SPECS}


def retrieval_metric_sql(spec: MetricSpec) -> str:
    """The scored column of a retrieval metric in eval.retrieval_scored (``_failed``: the row failed)."""
    return (f"case when status = 'no_relevant' then null when _failed then {FAILED_SCORE} else {spec.name} end"
            f" as {spec.name}")


def answer_metric_sql(spec: MetricSpec) -> str | None:
    """The scored column of an answer metric in eval.answer_scored, None for a rate (kept as recorded).
    ``_judged``: the configuration has a judge (a judge's metric is NULL without one, even where rows
    written before score_answer knew that stored 0); a failure scores 0 where the metric applies: a value
    was recorded, or the question is answerable. A metric that needs key facts is zeroed only where the
    writer recorded a value: only the writer saw the reference, and its NULL means "no key facts"."""
    if spec.rate:
        return None
    applies = (f"{spec.name} is not null" if spec.needs_key_facts
               else f"({spec.name} is not null or coalesce(answerable, true))")
    return (("case when not _judged then null " if spec.judge else "case ")
            + f"when _failed and {applies} then {FAILED_SCORE}"
            f" else {spec.name} end as {spec.name}")
