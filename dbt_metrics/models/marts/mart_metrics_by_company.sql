-- Key retrieval metrics per configuration and company (the filing's issuer).
with latest as (
    select
        r.*,
        coalesce(f.company, 'unknown') as company,
        f.ticker
    from {{ ref('int_retrieval_latest') }} r
    left join {{ ref('stg_filings') }} f on f.filing_id = r.filing_id
)
-- One issuer can appear under several tickers over the years; show them all, group by company.
{{ metrics_by(['company'], extra="string_agg(distinct ticker, ',' order by ticker) as tickers") }}
