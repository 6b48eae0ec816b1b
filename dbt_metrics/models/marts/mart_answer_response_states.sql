-- Response-state distribution in long form (one row per model x prompt x temperature x state):
-- easier to chart and filter than the JSON column of mart_answer_quality.
with latest as (
    select * from {{ ref('int_answer_latest') }}
)
select
    model, prompt_type, temperature, response_state,
    count(*) as n_answers,
    count(*) / sum(count(*)) over (partition by model, prompt_type, temperature) as share
from latest
group by model, prompt_type, temperature, response_state
