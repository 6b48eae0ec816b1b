-- One row per question x answer configuration x run.
-- A failed answer (error set, or response_state 'error') scores 0 on every answer metric; a metric
-- that is NULL on a successful answer is "not applicable" (no figure expected, judge not run) and
-- is left out of that metric's mean: the marts report its coverage instead.
with src as (
    select
        *,
        coalesce(nullif(trim(error), ''), null) is not null
            or lower(coalesce(response_state, '')) = 'error' as is_error
    from {{ source('eval', 'answer_results') }}
)
select
    run_id,
    filing_id,
    config_name,
    config_hash,
    model,
    prompt_type,
    temperature,
    top_p,
    retriever,
    k,
    qa_id,
    question_type,
    coalesce(response_state, case when is_error then 'error' else 'unknown' end) as response_state,
    is_error,
    {% for m in answer_metrics() -%}
    case when is_error then 0 else {{ m.name }} end as {{ m.name }},
    {% endfor -%}
    prompt_tokens,
    completion_tokens,
    case when not is_error then latency_ms end as latency_ms,
    cost_usd,
    error,
    evaluated_at
from src
