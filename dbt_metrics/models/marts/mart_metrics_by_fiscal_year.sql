-- Key retrieval metrics per configuration and the filing's fiscal year (issuer's own FY label).
with latest as (
    select r.*, f.fiscal_year
    from {{ ref('int_retrieval_latest') }} r
    left join {{ ref('stg_filings') }} f on f.filing_id = r.filing_id
)
select
    config_name, retriever, k, chunking, scope,
    fiscal_year,
    count(distinct filing_id) as n_filings,
    count(*) as n_questions,
    count(*) filter (where is_ok) / nullif(count(*) filter (where not is_no_relevant), 0) as coverage,
    {% for m in key_retrieval_metrics() -%}
    {{ metric_with_ci(m.name, binary=m.binary) }},
    {% endfor -%}
    quantile_cont(latency_ms, 0.5) as latency_p50_ms
from latest
group by config_name, retriever, k, chunking, scope, fiscal_year
