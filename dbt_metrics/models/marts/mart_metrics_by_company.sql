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
    {{ retrieval_aggregate_columns() }}
from latest
group by config_name, retriever, k, chunking, scope, company
