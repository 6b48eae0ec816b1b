-- Retriever leaderboard: one row per configuration x retriever x k x chunking x scope, over the
-- newest run of every filing. Means count failed questions as 0; `coverage` is the share that ran.
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
        count(*) filter (where not is_ok) as n_failed,
        avg(case when is_ok then 1.0 else 0.0 end) as coverage,
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
    -- Rank within a scope and k (comparing k=5 with k=20 is not a fair race).
    rank() over (partition by scope, k order by ndcg_chunk_mean desc, hit_chunk_mean desc) as rank_in_scope_k
from agg
