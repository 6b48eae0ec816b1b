-- One row per question x retrieval configuration x scope x run.
-- A question whose retrieval failed (status != 'ok') scores 0 on every metric: a retriever that
-- crashes on hard questions must not look better than one that answers them badly.
select
    run_id,
    filing_id,
    scope,
    config_name,
    retriever,
    k,
    chunking,
    config_hash,
    qa_id,
    question_type,
    n_retrieved,
    first_relevant_rank_chunk,
    first_relevant_rank_page,
    status,
    status = 'ok' as is_ok,
    error,
    {% for m in retrieval_metrics() -%}
    case when status = 'ok' then coalesce({{ m.name }}, 0) else 0 end as {{ m.name }},
    {% endfor -%}
    -- Latency only of successful calls: a fast failure is not a fast retriever.
    case when status = 'ok' then latency_ms end as latency_ms,
    corpus_state,
    n_filings_in_corpus,
    evaluated_at
from {{ source('eval', 'retrieval_results') }}
