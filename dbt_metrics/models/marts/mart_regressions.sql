-- Latest run against the previous run, per configuration x filing x scope and metric (long format:
-- one row per metric, so `where outside_interval` lists every flagged change).
--   previous_ci_*   : 95% interval of the previous run's mean (Wilson / normal, as the leaderboard)
--   outside_interval: the latest mean falls outside that interval -> direction regression/improvement
--   delta_ci_*      : paired interval of the per-question difference (questions in both runs),
--                     the sharper test when the question set did not change (paired_significant).
-- A previous run with zero variance on a graded metric (all 1.0) has a zero-width normal interval,
-- so any dip is outside it: read outside_interval together with paired_significant and n.
-- Scope 'corpus' results also move when the corpus grows: compare n_filings_in_corpus of both runs
-- before blaming the retriever; config_changed says whether the configuration hash moved.
{%- set keys = ['config_name', 'retriever', 'k', 'chunking', 'filing_id', 'scope'] %}
with ord as (
    select * from {{ ref('int_retrieval_run_order') }} where run_recency <= 2
),
rows_ as (
    select r.*, o.run_recency
    from {{ ref('stg_retrieval_results') }} r
    join ord o
      on o.run_id = r.run_id
     and {{ null_safe_join('o', 'r', keys) }}
),
run_stats as (
    select
        {{ keys | join(', ') }}, run_recency,
        {% for m in key_retrieval_metrics() -%}
        count({{ m.name }}) as {{ m.name }}_n,
        avg({{ m.name }}) as {{ m.name }}_mean,
        stddev_samp({{ m.name }}) as {{ m.name }}_sd{% if not loop.last %},{% endif %}
        {% endfor %}
    from rows_
    group by all
),
paired as (
    select
        {% for c in keys %}l.{{ c }}, {% endfor %}
        {% for m in key_retrieval_metrics() -%}
        count(l.{{ m.name }} - p.{{ m.name }}) as {{ m.name }}_dn,
        avg(l.{{ m.name }} - p.{{ m.name }}) as {{ m.name }}_dmean,
        stddev_samp(l.{{ m.name }} - p.{{ m.name }}) as {{ m.name }}_dsd{% if not loop.last %},{% endif %}
        {% endfor %}
    from rows_ l
    join rows_ p
      on l.run_recency = 1 and p.run_recency = 2
     and l.qa_id = p.qa_id
     and {{ null_safe_join('l', 'p', keys) }}
    group by all
),
pairs as (
    select
        {% for c in keys %}l.{{ c }}, {% endfor %}
        ol.run_id as latest_run_id, op.run_id as previous_run_id,
        ol.run_at as latest_run_at, op.run_at as previous_run_at,
        ol.n_filings_in_corpus as latest_n_filings_in_corpus,
        op.n_filings_in_corpus as previous_n_filings_in_corpus,
        ol.config_hash is distinct from op.config_hash as config_changed,
        {% for m in key_retrieval_metrics() -%}
        l.{{ m.name }}_n as {{ m.name }}_latest_n, p.{{ m.name }}_n as {{ m.name }}_previous_n,
        l.{{ m.name }}_mean as {{ m.name }}_latest, p.{{ m.name }}_mean as {{ m.name }}_previous,
        p.{{ m.name }}_sd as {{ m.name }}_previous_sd,
        {% endfor -%}
        {% for m in key_retrieval_metrics() -%}
        coalesce(pd.{{ m.name }}_dn, 0) as {{ m.name }}_dn,
        pd.{{ m.name }}_dmean, pd.{{ m.name }}_dsd{% if not loop.last %},{% endif %}
        {% endfor %}
    from run_stats l
    join run_stats p on l.run_recency = 1 and p.run_recency = 2 and {{ null_safe_join('l', 'p', keys) }}
    join ord ol on ol.run_recency = 1 and {{ null_safe_join('ol', 'l', keys) }}
    join ord op on op.run_recency = 2 and {{ null_safe_join('op', 'l', keys) }}
    left join paired pd on {{ null_safe_join('pd', 'l', keys) }}
),
long as (
    {% for m in key_retrieval_metrics() -%}
    select
        {{ keys | join(', ') }},
        latest_run_id, previous_run_id, latest_run_at, previous_run_at,
        latest_n_filings_in_corpus, previous_n_filings_in_corpus, config_changed,
        '{{ m.name }}' as metric,
        {{ m.name }}_latest_n as latest_n, {{ m.name }}_previous_n as previous_n,
        {{ m.name }}_dn as n_paired,
        {{ m.name }}_latest as latest_mean,
        {{ m.name }}_previous as previous_mean,
        {{ m.name }}_latest - {{ m.name }}_previous as delta,
        {% if m.binary -%}
        {{ wilson_low(m.name ~ '_previous', m.name ~ '_previous_n') }} as previous_ci_low,
        {{ wilson_high(m.name ~ '_previous', m.name ~ '_previous_n') }} as previous_ci_high,
        {%- else -%}
        {{ normal_low(m.name ~ '_previous', m.name ~ '_previous_sd', m.name ~ '_previous_n') }} as previous_ci_low,
        {{ normal_high(m.name ~ '_previous', m.name ~ '_previous_sd', m.name ~ '_previous_n') }} as previous_ci_high,
        {%- endif %}
        {{ normal_low(m.name ~ '_dmean', m.name ~ '_dsd', m.name ~ '_dn', lo=-1.0) }} as delta_ci_low,
        {{ normal_high(m.name ~ '_dmean', m.name ~ '_dsd', m.name ~ '_dn', hi=1.0) }} as delta_ci_high
    from pairs
    {% if not loop.last %}union all{% endif %}
    {% endfor %}
)
select
    *,
    -- 1e-9: a Wilson bound of a perfect score computes to 0.99999999..., not 1.0 (no flag for float noise).
    coalesce(latest_mean < previous_ci_low - 1e-9 or latest_mean > previous_ci_high + 1e-9, false) as outside_interval,
    -- The paired test: the per-question differences' interval excludes 0 (needs >= 2 paired questions).
    coalesce(delta_ci_low > 0 or delta_ci_high < 0, false) as paired_significant,
    case
        when latest_mean < previous_ci_low - 1e-9 then 'regression'
        when latest_mean > previous_ci_high + 1e-9 then 'improvement'
        when previous_ci_low is null then 'undetermined'
        else 'within_interval'
    end as direction
from long
