-- Answer quality per model x prompt type x temperature (newest run of every answer config x filing).
-- correctness is measured on answerable questions, abstention_correct on unanswerable ones (each is
-- NULL elsewhere), non_committal on answered answerable ones; is_sanity marks the lazy baselines
-- (core/evaluation/sanity_answerers.py) whose correctness must stay within the sanity limit
-- (metric_registry.SANITY_LIMITS; mart_sanity_answers checks it).
-- Failed answers score 0; a metric NULL on a successful answer is not applicable and left out of
-- that metric's mean, so every metric carries its `_coverage` (share of answers it was measured on).
with latest as (
    select * from {{ ref('int_answer_latest') }}
),
states as (
    select
        model, prompt_type, temperature, response_state,
        count(*) / sum(count(*)) over (partition by model, prompt_type, temperature) as share
    from latest
    group by model, prompt_type, temperature, response_state
),
state_dist as (
    select
        model, prompt_type, temperature,
        -- JSON object {state: share} in state order (deterministic), e.g. {"answered": 0.8, "refused": 0.2}.
        cast(to_json(map(list(response_state order by response_state),
                         list(round(share, 4) order by response_state))) as varchar) as response_state_distribution
    from states
    group by model, prompt_type, temperature
)
select
    a.model, a.prompt_type, a.temperature,
    count(distinct a.config_name) as n_configs,
    count(distinct a.filing_id) as n_filings,
    count(*) as n_answers,
    bool_or(a.is_sanity) as is_sanity,
    count(*) filter (where a.answerable) as n_answerable,
    count(*) filter (where not a.answerable) as n_unanswerable,
    count(*) filter (where a.is_error) as n_errors,
    avg(case when a.is_error then 1.0 else 0.0 end) as error_rate,
    any_value(d.response_state_distribution) as response_state_distribution,
    {% for m in answer_metrics() -%}
    {{ metric_with_ci('a.' ~ m.name, alias=m.name, binary=m.binary, n='count(a.' ~ m.name ~ ')') }},
    count(a.{{ m.name }}) / count(*) as {{ m.name }}_coverage,
    {% endfor -%}
    quantile_cont(a.latency_ms, 0.5) as latency_p50_ms,
    quantile_cont(a.latency_ms, 0.95) as latency_p95_ms,
    avg(a.prompt_tokens) as prompt_tokens_mean,
    avg(a.completion_tokens) as completion_tokens_mean,
    sum(a.cost_usd) as cost_usd_total,
    max(a.system_kind) as system_kind   -- an outside system under test (systems.yaml); NULL: a built-in answerer
from latest a
left join state_dist d
  on d.model is not distinct from a.model
 and d.prompt_type is not distinct from a.prompt_type
 and d.temperature is not distinct from a.temperature
group by a.model, a.prompt_type, a.temperature
