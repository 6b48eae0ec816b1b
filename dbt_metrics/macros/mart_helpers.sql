{#- The grain that identifies one retrieval configuration in every mart. -#}
{% macro retrieval_config_cols(prefix='') -%}
    {{ prefix }}config_name, {{ prefix }}retriever, {{ prefix }}k, {{ prefix }}chunking, {{ prefix }}scope
{%- endmacro %}

{#- `a.c is not distinct from b.c and ...`: joins on config columns that may be NULL (chunking). -#}
{% macro null_safe_join(left, right, cols) -%}
    {%- for c in cols %}{{ left }}.{{ c }} is not distinct from {{ right }}.{{ c }}{% if not loop.last %} and {% endif %}{% endfor -%}
{%- endmacro %}

{#- The aggregate columns every "metrics by <dimension>" mart shares: question count, coverage, each key
    metric with its interval (failures count as 0; no_relevant rows are left out), median latency. -#}
{% macro retrieval_aggregate_columns() -%}
    count(*) as n_questions,
    count(*) filter (where is_ok) / nullif(count(*) filter (where not is_no_relevant), 0) as coverage,
    {% for m in key_retrieval_metrics() -%}
    {{ metric_with_ci(m.name, binary=m.binary) }},
    {% endfor -%}
    quantile_cont(latency_ms, 0.5) as latency_p50_ms
{%- endmacro %}

{#- The columns of the scored results views (core/scoring/results_views.py) the staging models
    expose: the scoring rules and "newest run" live in those views, never here. -#}
{% macro scored_retrieval_columns() -%}
    run_id, filing_id, scope, config_name, retriever, k, chunking, config_hash, qa_id, question_type,
    n_retrieved, first_relevant_rank_chunk, first_relevant_rank_page, status, is_ok, is_no_relevant, is_failed,
    error,
    {% for m in retrieval_metrics() -%}{{ m.name }}, {% endfor %}
    latency_ms, corpus_state, n_filings_in_corpus, evaluated_at, resolution, resolution_correct, resolved_filings,
    chance_pool_size, chance_evidence_chunks, chance_evidence_page_chunks,
    {% for m in chance_metrics() -%}{{ m }}_chance, {% endfor %}
    system_kind, system_state, n_contexts, n_contexts_unmapped, mapping_confidence
{%- endmacro %}

{% macro scored_answer_columns() -%}
    run_id, filing_id, config_name, config_hash, model, prompt_type, temperature, top_p, retriever, k, qa_id,
    question_type, response_state, is_error, answerable, is_sanity,
    {% for m in answer_metrics() -%}{{ m.name }}, {% endfor %}
    prompt_tokens, completion_tokens, latency_ms, cost_usd, error, evaluated_at, system_kind
{%- endmacro %}

{#- The body of every "metrics by <dimension>" mart over a `latest` CTE: one row per configuration x
    `dims`, with `extra` columns (aggregates of the dimension) before the shared aggregate columns. -#}
{% macro metrics_by(dims, extra=none) -%}
select
    {{ retrieval_config_cols() }},
    {{ dims | join(', ') }},
    {% if extra %}{{ extra }},
    {% endif -%}
    count(distinct filing_id) as n_filings,
    {{ retrieval_aggregate_columns() }}
from latest
group by {{ retrieval_config_cols() }}, {{ dims | join(', ') }}

{%- endmacro %}
