-- Key retrieval metrics per configuration and company (the filing's issuer).
with latest as (
    select
        r.*,
        coalesce(f.company, 'unknown') as company,
        f.ticker
    from {{ ref('int_retrieval_latest') }} r
    left join {{ ref('stg_filings') }} f on f.filing_id = r.filing_id
)
select
    config_name, retriever, k, chunking, scope,
    company,
    -- One issuer can appear under several tickers over the years; show them all, group by company.
    string_agg(distinct ticker, ',' order by ticker) as tickers,
    count(distinct filing_id) as n_filings,
    count(*) as n_questions,
    count(*) filter (where is_ok) / nullif(count(*) filter (where not is_no_relevant), 0) as coverage,
    {% for m in key_retrieval_metrics() -%}
    {{ metric_with_ci(m.name, binary=m.binary) }},
    {% endfor -%}
    quantile_cont(latency_ms, 0.5) as latency_p50_ms
from latest
group by config_name, retriever, k, chunking, scope, company
