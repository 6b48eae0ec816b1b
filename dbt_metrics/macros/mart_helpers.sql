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

{#- The question set of a QA item: an imported external set's name, the import format for items imported
    before sets were named (core/qa/importers.IMPORT_FORMATS), else 'synthetic'. -#}
{% macro question_set_of(q) -%}
    coalesce({{ q }}.external_set, case when {{ q }}.qa_source in ('financebench', 'jsonl', 'csv') then {{ q }}.qa_source end,
             'synthetic')
{%- endmacro %}
