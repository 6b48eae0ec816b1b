-- Registered filings with the labels the breakdown marts group by (`removed` kept for filtering).
select
    filing_id,
    company,
    ticker,
    cik,
    form_type,
    fiscal_year,
    period_end_date,
    source_format,
    n_pages,
    registered_at,
    coalesce(removed, false) as removed
from {{ source('core', 'filings') }}
