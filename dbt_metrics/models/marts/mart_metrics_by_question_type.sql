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
    {{ retrieval_aggregate_columns() }}
from latest
group by config_name, retriever, k, chunking, scope, qtype
