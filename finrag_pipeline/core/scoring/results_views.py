"""The current evaluation results and their scoring rules, defined ONCE, as SQL views in the warehouse.

``eval.retrieval_results`` / ``eval.answer_results`` keep every run. These views say which rows count
and how they score; everything that shows a number reads them: the dbt staging and intermediate
models (``source('eval', 'retrieval_current')`` ...), the bootstrap leaderboard
(core/evaluation/leaderboard.py), the HTML report and the web explorer. No reader re-implements them.

* ``eval.retrieval_scored``: every retrieval row, scored. ``status`` is normalised to ok / no_relevant /
  error (NULL or any other recorded status is a failure; the original stays in ``recorded_status``):
  a failure scores 0 on every metric (a retriever that crashes on hard questions cannot look better
  than one that answers them badly), a 'no_relevant' question has NULL metrics (left out of every mean,
  counted apart), a NULL metric on an 'ok' row was not computable (lowers coverage). Latency only for
  non-failed rows. Flags ``is_ok``, ``is_no_relevant``, ``is_failed``. The chance levels
  (``<metric>_chance``: what a random draw scores on the question) stay as recorded on a failed row (a
  question's chance does not depend on the retriever) and are NULL on a 'no_relevant' one.
* ``eval.retrieval_run_order``: one row per run of a configuration (config_name, retriever, k,
  chunking) on one filing and scope, ``run_recency`` 1 = newest, ordered by the run's own time in
  eval.runs (finished, else started), else the newest ``evaluated_at`` of its rows; ties -> larger run_id.
* ``eval.retrieval_current``: the scored rows of the newest run of each configuration x filing x scope.
* ``eval.retrieval_current_per_corpus_size``: for corpus growth, the whole-corpus (scope 'corpus')
  scored rows of the newest run of each configuration x filing at each corpus size
  (``corpus_size`` = the run's n_filings_in_corpus, with its ``run_at``).
* ``eval.answer_scored``: every answer row, scored: a failed answer (a stored failure state, or no
  state but an error message) scores 0 on every metric that applies (answerable, or set), the rates
  (non_committal, abstention_correct) stay as recorded; its state reads as a failure state
  (``backend_error`` unless ``invalid_output``); ``is_error`` flags it.
* ``eval.answer_current``: the newest run (by ``evaluated_at``) of each answer configuration x filing.

``source_row`` (the base table's rowid) keeps the rows in the order they were written, so a seeded
bootstrap over them resamples exactly what it resampled when it read the base table.

The SQL is generated from the metric registry and the response states, so a new metric is scored
here without an edit. :func:`ensure_views` (re)creates the views when missing or out of date; the
warehouse calls it on every writable open, after the tables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import duckdb

from finrag_pipeline.core.scoring import metric_registry as registry
from finrag_pipeline.core.scoring.failure_scoring import answer_metric_sql, retrieval_metric_sql
from finrag_pipeline.core.scoring.metric_registry import MetricSpec
from finrag_pipeline.core.scoring.response_states import FAILURE_STATES, STORED_FAILURE_STATES

RETRIEVAL_SCORED = "eval.retrieval_scored"
RETRIEVAL_RUN_ORDER = "eval.retrieval_run_order"
RETRIEVAL_CURRENT = "eval.retrieval_current"
RETRIEVAL_CURRENT_PER_CORPUS_SIZE = "eval.retrieval_current_per_corpus_size"
ANSWER_SCORED = "eval.answer_scored"
ANSWER_CURRENT = "eval.answer_current"

# The grain of "one run of one configuration": the newest run of each is current.
RETRIEVAL_RUN_KEYS = ("config_name", "retriever", "k", "chunking", "filing_id", "scope")
ANSWER_RUN_KEYS = ("config_name", "filing_id")


def _sql_list(values: Sequence[str]) -> str:
    return ", ".join(f"'{v}'" for v in sorted(values))


def _null_safe(left: str, right: str, cols: Sequence[str]) -> str:
    return " and ".join(f"{left}.{c} is not distinct from {right}.{c}" for c in cols)


def view_sql(retrieval_specs: Sequence[MetricSpec] | None = None,
             answer_specs: Sequence[MetricSpec] | None = None) -> dict[str, str]:
    """Name -> SELECT of every results view, in creation order (a view reads only those before it),
    for the registry's metrics (or the ``*_specs`` given)."""
    retrieval_specs = registry.RETRIEVAL_METRIC_SPECS if retrieval_specs is None else retrieval_specs
    answer_specs = registry.ANSWER_METRIC_SPECS if answer_specs is None else answer_specs
    # How a failure scores: core/evaluation/failure_scoring.py (the writers store the same values).
    retrieval_metrics = ",\n        ".join(
        [retrieval_metric_sql(s) for s in retrieval_specs]
        + [f"case when status = 'no_relevant' then null else {c} end as {c}"
           for c in (registry.chance_column(s.name) for s in retrieval_specs if s.chance)])
    # A judge metric applies only to a configuration with a judge (one that left judge_reasons).
    answer_metrics = ",\n        ".join(sql for sql in map(answer_metric_sql, answer_specs) if sql is not None)
    judged_flag = (",\n        count(a.judge_reasons) over (partition by a.config_hash) > 0 as _judged"
                   if any(s.judge for s in answer_specs) else "")
    answer_helpers = "_failed, _judged" if judged_flag else "_failed"
    keys = ", ".join(RETRIEVAL_RUN_KEYS)
    return {
        RETRIEVAL_SCORED: f"""
with src as (
    select r.*, r.rowid as source_row, coalesce(r.status, 'error') not in ('ok', 'no_relevant') as _failed
    from eval.retrieval_results r
)
select
    * exclude (_failed) replace (
        case when _failed then 'error' else status end as status,
        {retrieval_metrics},
        case when not _failed then latency_ms end as latency_ms
    ),
    status as recorded_status,
    coalesce(status = 'ok', false) as is_ok,
    coalesce(status = 'no_relevant', false) as is_no_relevant,
    _failed as is_failed
from src""",
        RETRIEVAL_RUN_ORDER: f"""
with per_run as (
    select
        {keys}, run_id,
        max(config_hash) as config_hash,
        max(evaluated_at) as last_evaluated_at,
        max(n_filings_in_corpus) as n_filings_in_corpus,
        max(corpus_state) as corpus_state,
        count(*) as n_questions
    from {RETRIEVAL_SCORED}
    group by all
),
runs as (
    -- run_id should be unique in eval.runs; aggregate anyway so a duplicate cannot fan out rows.
    select run_id, max(coalesce(finished_at, started_at)) as run_at, max(n_filings_in_corpus) as n_filings_in_corpus
    from eval.runs
    group by run_id
)
select
    {", ".join(f"p.{c}" for c in RETRIEVAL_RUN_KEYS)}, p.run_id, p.config_hash,
    coalesce(r.run_at, p.last_evaluated_at) as run_at,
    coalesce(p.n_filings_in_corpus, r.n_filings_in_corpus) as n_filings_in_corpus,
    p.corpus_state,
    p.n_questions,
    row_number() over (
        partition by {", ".join(f"p.{c}" for c in RETRIEVAL_RUN_KEYS)}
        order by coalesce(r.run_at, p.last_evaluated_at) desc nulls last, p.run_id desc
    ) as run_recency
from per_run p
left join runs r on r.run_id = p.run_id""",
        RETRIEVAL_CURRENT: f"""
select s.*
from {RETRIEVAL_SCORED} s
join {RETRIEVAL_RUN_ORDER} o
  on o.run_id = s.run_id and {_null_safe('o', 's', RETRIEVAL_RUN_KEYS)}
where o.run_recency = 1""",
        RETRIEVAL_CURRENT_PER_CORPUS_SIZE: f"""
with run_pick as (
    select
        *,
        row_number() over (
            partition by {", ".join(c for c in RETRIEVAL_RUN_KEYS if c != "scope")}, n_filings_in_corpus
            order by run_at desc nulls last, run_id desc
        ) as pick
    from {RETRIEVAL_RUN_ORDER}
    where scope = 'corpus' and n_filings_in_corpus is not null
)
select s.*, o.n_filings_in_corpus as corpus_size, o.run_at
from {RETRIEVAL_SCORED} s
join run_pick o on o.pick = 1 and o.run_id = s.run_id and {_null_safe('o', 's', RETRIEVAL_RUN_KEYS)}""",
        ANSWER_SCORED: f"""
with src as (
    select
        a.*, a.rowid as source_row,
        lower(coalesce(a.response_state, '')) in ({_sql_list(STORED_FAILURE_STATES)})
            or (coalesce(a.response_state, '') = '' and nullif(trim(a.error), '') is not null) as _failed{judged_flag}
    from eval.answer_results a
)
select
    * exclude ({answer_helpers}) replace (
        case when _failed and lower(coalesce(response_state, '')) in ({_sql_list(FAILURE_STATES)})
                 then lower(response_state)
             when _failed then 'backend_error'
             else coalesce(response_state, 'unknown') end as response_state,
        coalesce(answerable, true) as answerable,
        coalesce(is_sanity, false) as is_sanity,
        {answer_metrics},
        case when not _failed then latency_ms end as latency_ms
    ),
    _failed as is_error{", _judged as has_judge" if judged_flag else ""}
from src""",
        ANSWER_CURRENT: f"""
with run_order as (
    select
        {", ".join(ANSWER_RUN_KEYS)}, run_id,
        row_number() over (
            partition by {", ".join(ANSWER_RUN_KEYS)}
            order by max(evaluated_at) desc nulls last, run_id desc
        ) as run_recency
    from {ANSWER_SCORED}
    group by {", ".join(ANSWER_RUN_KEYS)}, run_id
)
select a.*
from {ANSWER_SCORED} a
join run_order o on o.run_id = a.run_id and {_null_safe('o', 'a', ANSWER_RUN_KEYS)}
where o.run_recency = 1""",
    }


def views_version() -> str:
    """A hash of the views' SQL: a warehouse whose views carry another one gets them recreated."""
    return hashlib.sha256("\n".join(view_sql().values()).encode()).hexdigest()[:16]


def ensure_views(con: duckdb.DuckDBPyConnection, retrieval_specs: Sequence[MetricSpec] | None = None,
                 answer_specs: Sequence[MetricSpec] | None = None) -> None:
    """Create (or replace, when their SQL changed) the results views; needs the eval tables."""
    sql = view_sql(retrieval_specs, answer_specs)
    version = hashlib.sha256("\n".join(sql.values()).encode()).hexdigest()[:16]
    have = {f"{schema}.{name}": comment for schema, name, comment in con.execute(
        "select schema_name, view_name, comment from duckdb_views() where not internal").fetchall()}
    if all(have.get(name) == version for name in sql):
        return
    for name, select in sql.items():
        con.execute(f"create or replace view {name} as {select}")
        con.execute(f"comment on view {name} is '{version}'")
