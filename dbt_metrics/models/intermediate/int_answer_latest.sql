-- The current answer results: the newest run of each answer configuration x filing.
with run_order as (
    select
        config_name, filing_id, run_id,
        row_number() over (
            partition by config_name, filing_id
            order by max(evaluated_at) desc nulls last, run_id desc
        ) as run_recency
    from {{ ref('stg_answer_results') }}
    group by config_name, filing_id, run_id
)
select a.*
from {{ ref('stg_answer_results') }} a
join run_order o
  on o.run_id = a.run_id
 and {{ null_safe_join('o', 'a', ['config_name', 'filing_id']) }}
where o.run_recency = 1
