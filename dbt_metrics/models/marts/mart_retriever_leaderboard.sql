-- Retriever leaderboard: one row per configuration x retriever x k x chunking x scope, over the
-- newest run of every filing. Failed questions count as 0; questions without relevant evidence
-- ('no_relevant') are left out of the means and counted in n_no_relevant; `coverage` is the share of
-- scoreable questions that ran without error; `*_metrics_coverage` the share with a chunk/page score.
-- Intervals: Wilson for 0/1 metrics, normal approximation for graded ones (macros/stats.sql).
with latest as (
    select * from {{ ref('int_retrieval_latest') }}
),
agg as (
    select
        config_name, retriever, k, chunking, scope,
        count(distinct filing_id) as n_filings,
        count(*) as n_questions,
        count(*) filter (where is_ok) as n_ok,
        count(*) filter (where is_failed) as n_failed,
        count(*) filter (where is_no_relevant) as n_no_relevant,
        count(*) filter (where is_ok) / nullif(count(*) filter (where not is_no_relevant), 0) as coverage,
        count(hit_chunk) / nullif(count(*) filter (where not is_no_relevant), 0) as chunk_metrics_coverage,
        count(hit_page) / nullif(count(*) filter (where not is_no_relevant), 0) as page_metrics_coverage,
        {% for m in retrieval_metrics() -%}
        {{ metric_with_ci(m.name, binary=m.binary) }},
        {% endfor -%}
        quantile_cont(latency_ms, 0.5) as latency_p50_ms,
        quantile_cont(latency_ms, 0.95) as latency_p95_ms,
        max(n_filings_in_corpus) as n_filings_in_corpus,
        max(evaluated_at) as last_evaluated_at
    from latest
    group by config_name, retriever, k, chunking, scope
)
select
    *,
    -- Ranks within a scope and k (comparing k=5 with k=20 is not a fair race). By chunk nDCG (the
    -- primary metric; chunking variants without chunk-level scores rank last), and by page nDCG,
    -- which every chunking variant has and so compares them fairly.
    rank() over (partition by scope, k order by ndcg_chunk_mean desc nulls last, ndcg_page_mean desc nulls last)
        as rank_in_scope_k,
    rank() over (partition by scope, k order by ndcg_page_mean desc nulls last, hit_page_mean desc nulls last)
        as rank_by_page_in_scope_k
from agg
