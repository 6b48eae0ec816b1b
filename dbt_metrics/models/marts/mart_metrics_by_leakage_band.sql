-- Key retrieval metrics per configuration x scope x question set x phrasing-leakage band (newest run
-- per filing). question_set: the external set's name for imported questions, 'synthetic' otherwise.
-- leakage_band (core/qa/leakage.py): low / medium / high share of the question's content words that
-- occur both in its evidence and in the retrievers' lexicon; 'n/a' = not computable (no evidence,
-- or an item written before leakage was measured). A configuration that wins only in the 'high'
-- band wins on the generator's phrasing, not on retrieval.
with latest as (
    select
        r.*,
        {{ question_set_of('q') }} as question_set,
        coalesce(q.leakage_band, 'n/a') as leakage_band,
        q.leakage_score
    from {{ ref('int_retrieval_latest') }} r
    left join (
        select qa_id, filing_id, any_value(qa_source) as qa_source, any_value(external_set) as external_set,
               any_value(leakage_band) as leakage_band, any_value(leakage_score) as leakage_score
        from {{ ref('stg_qa_items') }} group by qa_id, filing_id
    ) q on q.qa_id = r.qa_id and q.filing_id = r.filing_id
)
select
    config_name, retriever, k, chunking, scope,
    question_set,
    leakage_band,
    avg(leakage_score) as leakage_score_mean,
    {{ retrieval_aggregate_columns() }}
from latest
group by config_name, retriever, k, chunking, scope, question_set, leakage_band
