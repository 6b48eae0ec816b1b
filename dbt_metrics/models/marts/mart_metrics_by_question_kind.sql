-- Key retrieval metrics per configuration and question kind (newest run per filing): the question types
-- (core/qa/config.py QUESTION_TYPES) folded into the two kinds retrieval is routed by
-- (core/question_kind.py): 'qualitative' (narrative: causes, risks, legal matters, customers,
-- geographies, segments) and 'metric' (every type that asks for a figure or a choice between figures).
-- The kind comes from the item's own label, not from the router's rule: the evaluation reads what a
-- question is, the routing guesses it. Unanswerable items have no evidence and score no retrieval metric.
with latest as (
    select
        r.*,
        case
            when coalesce(r.question_type, q.question_type) = 'narrative' then 'qualitative'
            when coalesce(r.question_type, q.question_type) = 'unanswerable' then 'unanswerable'
            when coalesce(r.question_type, q.question_type) is null then 'unknown'
            else 'metric'
        end as question_kind
    from {{ ref('int_retrieval_latest') }} r
    left join (
        select qa_id, any_value(question_type) as question_type
        from {{ ref('stg_qa_items') }} group by qa_id
    ) q on q.qa_id = r.qa_id
)
{{ metrics_by(['question_kind']) }}
