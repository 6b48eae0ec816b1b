-- Key retrieval metrics per configuration and question type (newest run per filing).
with latest as (
    select
        r.*,
        coalesce(r.question_type, q.question_type, 'unknown') as question_type_
    from {{ ref('int_retrieval_latest') }} r
    left join (
        select qa_id, any_value(question_type) as question_type
        from {{ ref('stg_qa_items') }} group by qa_id
    ) q on q.qa_id = r.qa_id
)
select * rename (question_type_ as question_type) from (
{{ metrics_by(['question_type_']) }}
)
