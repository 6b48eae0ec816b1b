-- Chance levels: per configuration x scope x k and each metric with a chance level (macro
-- chance_metrics(), from the metric registry), the score a retriever drawing k leaf chunks of the scope
-- at random would earn on the same questions (newest run of every filing). Each question's chance
-- level is recorded by the evaluation runner (core/retrieval/sanity.py ChanceLevels: chunk hit
-- 1 - C(N-g, k)/C(N, k); page hit the same with m = leaves on an evidence page; all-evidence page hit by
-- inclusion-exclusion over the evidence groups); here they are averaged over the questions the metric
-- was measured on. chance_band = chance_band_se standard errors of that mean (sqrt(sum p(1-p)) / n): the
-- band sanity_random stays in; within_chance_band adds chance_band_slack (macro sanity_limits(), from
-- metric_registry.SANITY_LIMITS). A question without a recorded chance level makes the whole level n/a
-- (NULL, never a mean over fewer questions than the metric's); chance_note says why.
with latest as (
    select * from {{ ref('int_retrieval_latest') }}
),
long as (
    {% for m in chance_metrics() -%}
    select config_name, retriever, k, chunking, scope, '{{ m }}' as metric, {{ m }} as value,
           {{ m }}_chance as chance, chance_pool_size as pool_size
    from latest
    where {{ m }} is not null
    {% if not loop.last %}union all
    {% endif -%}
    {% endfor %}
),
agg as (
    select
        config_name, retriever, k, chunking, scope, metric,
        count(*) as n_questions,
        count(chance) as n_with_chance,
        avg(value) as mean,
        case when count(chance) = count(*) then avg(chance) end as chance_level,
        case when count(chance) = count(*)
             then {{ sanity_limits().chance_band_se }} * sqrt(sum(chance * (1 - chance))) / count(*) end
            as chance_band,
        case
            when count(chance) = count(*) then null
            when count(pool_size) < count(*) then
                'n/a: ' || (count(*) - count(pool_size)) || ' of ' || count(*)
                || ' questions were evaluated before chance levels were recorded (re-evaluate to record them)'
            else
                'n/a: ' || (count(*) - count(chance)) || ' of ' || count(*)
                || ' questions have no computable chance level (evidence chunk ids of another chunking, '
                || 'or too many evidence groups)'
        end as chance_note
    from long
    group by config_name, retriever, k, chunking, scope, metric
)
select
    *,
    mean - chance_level as above_chance,
    abs(mean - chance_level) <= chance_band + {{ sanity_limits().chance_band_slack }} as within_chance_band
from agg
