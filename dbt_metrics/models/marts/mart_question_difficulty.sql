-- Per question and scope: how every configuration did on it (newest runs). Sort by
-- hit_chunk_mean / ndcg_chunk_mean ascending for the "worst questions" list. The chance-level
-- baseline sanity_random (core/retrieval/sanity.py) is no configuration a question is hard for.
with latest as (
    select * from {{ ref('int_retrieval_latest') }}
    where retriever is distinct from 'sanity_random'
),
agg as (
    select
        qa_id, filing_id, scope,
        count(*) as n_configs,
        count(*) filter (where is_failed) as n_failed,
        avg(hit_chunk) as hit_chunk_mean,
        avg(mrr_chunk) as mrr_chunk_mean,
        avg(ndcg_chunk) as ndcg_chunk_mean,
        avg(recall_chunk) as recall_chunk_mean,
        avg(hit_page) as hit_page_mean,
        avg(all_evidence_hit) as all_evidence_hit_mean,
        arg_max(config_name, coalesce(ndcg_chunk, -1)) as best_config_name,
        max(ndcg_chunk) as best_ndcg_chunk,
        any_value(question_type) as result_question_type
    from latest
    group by qa_id, filing_id, scope
)
select
    a.qa_id, a.filing_id, a.scope,
    coalesce(a.result_question_type, q.question_type, 'unknown') as question_type,
    q.question, q.reference_answer, q.difficulty,
    a.n_configs, a.n_failed,
    a.hit_chunk_mean, a.mrr_chunk_mean, a.ndcg_chunk_mean, a.recall_chunk_mean,
    a.hit_page_mean, a.all_evidence_hit_mean,
    a.best_config_name, a.best_ndcg_chunk,
    rank() over (partition by a.scope order by coalesce(a.ndcg_chunk_mean, a.hit_page_mean) asc nulls last,
                                            a.hit_chunk_mean asc nulls last) as worst_rank
from agg a
left join (
    select qa_id, any_value(question) as question, any_value(reference_answer) as reference_answer,
           any_value(question_type) as question_type, any_value(difficulty) as difficulty
    from {{ ref('stg_qa_items') }} group by qa_id
) q on q.qa_id = a.qa_id
