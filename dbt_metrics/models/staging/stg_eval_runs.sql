-- Evaluation runs; `run_at` orders runs (finished, else started).
select
    run_id,
    kind,
    config_name,
    config_hash,
    filing_id,
    scope,
    code_version,
    corpus_state,
    n_filings_in_corpus,
    n_questions,
    status as run_status,
    message,
    dagster_run_id,
    started_at,
    finished_at,
    coalesce(finished_at, started_at) as run_at
from {{ source('eval', 'runs') }}
