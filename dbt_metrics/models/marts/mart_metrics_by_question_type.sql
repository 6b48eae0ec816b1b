-- Key retrieval metrics per configuration and question type (newest run per filing).
with latest as (
    select
        r.*,
        coalesce(r.question_type, q.question_type, 'unknown') as qtype
    from {{ ref('int_retrieval_latest') }} r
    left join (
        select qa_id, any_value(question_type) as question_type
        from {{ ref('stg_qa_items') }} group by qa_id
    ) q on q.qa_id = r.qa_id
)
select
    config_name, retriever, k, chunking, scope,
    qtype as question_type,
    count(*) as n_questions,
    count(*) filter (where is_ok) / nullif(count(*) filter (where not is_no_relevant), 0) as coverage,
    {% for m in key_retrieval_metrics() -%}
    {{ metric_with_ci(m.name, binary=m.binary) }},
    {% endfor -%}
    quantile_cont(latency_ms, 0.5) as latency_p50_ms
from latest
group by config_name, retriever, k, chunking, scope, qtype
