-- One row per question x retrieval configuration x scope x run, with the evaluation engine's
-- scoring rules (core/evaluation/runner.py aggregate/_prepare) applied once, here:
--   * status 'ok'          : metrics as stored; a NULL means "not computable" (e.g. chunk-level
--                            metrics of a chunking variant whose chunk ids differ from the QA
--                            evidence): left out of the mean, visible as lower coverage;
--   * status 'no_relevant' : the question has no relevant evidence to find: left out of every
--                            mean and counted apart (n_no_relevant);
--   * any other status     : a failure ('error', ...): every metric 0, so a retriever that
--                            crashes on hard questions cannot look better than one that answers
--                            them badly. Latency is kept only for non-failed rows.
with src as (
    select
        *,
        coalesce(status, 'error') not in ('ok', 'no_relevant') as _failed
    from {{ source('eval', 'retrieval_results') }}
)
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
    status = 'no_relevant' as is_no_relevant,
    _failed as is_failed,
    error,
    {% for m in retrieval_metrics() -%}
    case when status = 'no_relevant' then null when _failed then 0.0 else {{ m.name }} end as {{ m.name }},
    {% endfor -%}
    case when not _failed then latency_ms end as latency_ms,
    corpus_state,
    n_filings_in_corpus,
    evaluated_at,
    resolution,
    resolution_correct,
    resolved_filings
from src
