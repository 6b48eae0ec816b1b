-- The leaderboard per question set: key retrieval metrics with intervals per configuration x scope x
-- question set (an imported external set's name, or 'synthetic' for generated questions), newest run
-- per filing. mart_retriever_leaderboard averages every question together; this mart keeps the
-- hand-written or real questions (finrag qa import; the demo's analyst_questions) apart from the
-- generator's, so each set has its own leaderboard (rank_in_set: by all-evidence hit, then page hit).
with latest as (
    select
        r.*,
        {{ question_set_of('q') }} as question_set
    from {{ ref('int_retrieval_latest') }} r
    left join (
        select qa_id, filing_id, any_value(qa_source) as qa_source, any_value(external_set) as external_set
        from {{ ref('stg_qa_items') }} group by qa_id, filing_id
    ) q on q.qa_id = r.qa_id and q.filing_id = r.filing_id
),
agg as (
    select
        config_name, retriever, k, chunking, scope,
        question_set,
        count(distinct filing_id) as n_filings,
        {{ retrieval_aggregate_columns() }}
    from latest
    group by config_name, retriever, k, chunking, scope, question_set
)
select
    *,
    rank() over (partition by question_set, scope, k
                 order by all_evidence_hit_mean desc nulls last, hit_page_mean desc nulls last) as rank_in_set
from agg
