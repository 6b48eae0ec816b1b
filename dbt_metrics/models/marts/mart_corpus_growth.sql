-- The effect of corpus growth on whole-corpus retrieval: one row per configuration and corpus size
-- (n_filings_in_corpus), over the history of scope='corpus' runs. When a filing was evaluated
-- several times at the same corpus size, only its newest run counts.
-- Caveat: each size averages the questions of the filings present at that size, so a new filing's
-- own questions enter the mean too; n_filings_evaluated says how many filings a point covers.
with rows_ as (
    -- the newest run of each configuration x filing at each corpus size (a warehouse view:
    -- finrag_pipeline/core/scoring/results_views.py)
    select {{ scored_retrieval_columns() }}, corpus_size, run_at
    from {{ source('eval', 'retrieval_current_per_corpus_size') }}
),
agg as (
    select
        config_name, retriever, k, chunking,
        corpus_size as n_filings_in_corpus,
        count(distinct run_id) as n_runs,
        count(distinct filing_id) as n_filings_evaluated,
        count(*) as n_questions,
        count(*) filter (where is_ok) / nullif(count(*) filter (where not is_no_relevant), 0) as coverage,
        {% for m in key_retrieval_metrics() -%}
        {{ metric_with_ci(m.name, binary=m.binary) }},
        {% endfor -%}
        quantile_cont(latency_ms, 0.5) as latency_p50_ms,
        min(run_at) as first_run_at,
        max(run_at) as last_run_at
    from rows_
    group by config_name, retriever, k, chunking, corpus_size
)
select
    *,
    -- Change against the smallest corpus this configuration was measured on.
    ndcg_chunk_mean - first_value(ndcg_chunk_mean) over w as ndcg_chunk_delta_vs_smallest,
    hit_chunk_mean - first_value(hit_chunk_mean) over w as hit_chunk_delta_vs_smallest
from agg
window w as (partition by config_name, retriever, k, chunking order by n_filings_in_corpus)
