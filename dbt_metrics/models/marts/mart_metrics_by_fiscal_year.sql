-- Key retrieval metrics per configuration and the filing's fiscal year (issuer's own FY label).
with latest as (
    select r.*, f.fiscal_year
    from {{ ref('int_retrieval_latest') }} r
    left join {{ ref('stg_filings') }} f on f.filing_id = r.filing_id
)
{{ metrics_by(['fiscal_year']) }}
