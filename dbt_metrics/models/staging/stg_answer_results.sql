-- One row per question x answer configuration x run.
-- Scoring follows core/evaluation/answer_metrics.score_answer: failures (backend_error,
-- invalid_output) score 0 on every metric (the engine already stores 0; enforced here too), and a
-- NULL on a non-failed answer means "not applicable" (no figure to match, no judge configured, an
-- unanswerable question correctly not answered): left out of that metric's mean, reported as coverage.
-- The rates non_committal and abstention_correct are kept as recorded (a failure is neither).
with src as (
    select
        *,
        lower(coalesce(response_state, '')) in ({% for s in answer_failure_states() %}'{{ s }}'{% if not loop.last %}, {% endif %}{% endfor %})
            or (response_state is null and nullif(trim(error), '') is not null) as _failed
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
    coalesce(response_state, case when _failed then 'backend_error' else 'unknown' end) as response_state,
    _failed as is_error,
    coalesce(answerable, true) as answerable,
    coalesce(is_sanity, false) as is_sanity,
    {% for m in answer_metrics() -%}
    {% if m.rate -%}
    {{ m.name }},
    {%- else -%}
    case when _failed and ({{ m.name }} is not null or coalesce(answerable, true)) then 0.0 else {{ m.name }} end
        as {{ m.name }},
    {%- endif %}
    {% endfor -%}
    prompt_tokens,
    completion_tokens,
    case when not _failed then latency_ms end as latency_ms,
    cost_usd,
    error,
    evaluated_at
from src
