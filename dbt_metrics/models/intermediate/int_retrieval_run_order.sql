-- One row per retrieval run of one configuration on one filing and scope, numbered newest first
-- (run_recency = 1 is the current result, 2 the one before it). Runs are ordered by the run's own
-- finish time from eval.runs, else by the latest evaluated_at of its result rows.
with per_run as (
    select
        config_name, retriever, k, chunking, filing_id, scope, run_id,
        max(config_hash) as config_hash,
        max(evaluated_at) as last_evaluated_at,
        max(n_filings_in_corpus) as n_filings_in_corpus,
        max(corpus_state) as corpus_state,
        count(*) as n_questions
    from {{ ref('stg_retrieval_results') }}
    group by all
),
runs as (
    -- run_id should be unique in eval.runs; aggregate anyway so a duplicate cannot fan out rows.
    select run_id, max(run_at) as run_at, max(n_filings_in_corpus) as n_filings_in_corpus
    from {{ ref('stg_eval_runs') }}
    group by run_id
)
select
    p.config_name, p.retriever, p.k, p.chunking, p.filing_id, p.scope, p.run_id, p.config_hash,
    coalesce(r.run_at, p.last_evaluated_at) as run_at,
    coalesce(p.n_filings_in_corpus, r.n_filings_in_corpus) as n_filings_in_corpus,
    p.corpus_state,
    p.n_questions,
    row_number() over (
        partition by p.config_name, p.retriever, p.k, p.chunking, p.filing_id, p.scope
        order by coalesce(r.run_at, p.last_evaluated_at) desc nulls last, p.run_id desc
    ) as run_recency
from per_run p
left join runs r on r.run_id = p.run_id
