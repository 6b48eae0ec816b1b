-- The current retrieval rows (int_retrieval_latest) with the question set each question belongs to: an
-- imported external set's name, or 'synthetic' for generated questions. The marts that compare question
-- sets (metrics by question set, corpus cost, company resolution) read it.
select
    r.*,
    coalesce(q.question_set, 'synthetic') as question_set
from {{ ref('int_retrieval_latest') }} r
left join (
    select qa_id, filing_id, any_value(question_set) as question_set
    from {{ ref('stg_qa_items') }} group by qa_id, filing_id
) q on q.qa_id = r.qa_id and q.filing_id = r.filing_id
