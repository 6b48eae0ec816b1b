{#- The retrieval metrics every mart reports, with whether they are 0/1 per question (Wilson CI)
    or graded (normal-approximation CI). One list, so a new metric is added in one place. -#}
{% macro retrieval_metrics() -%}
    {{ return([
        {'name': 'hit_chunk', 'binary': true},
        {'name': 'mrr_chunk', 'binary': false},
        {'name': 'ndcg_chunk', 'binary': false},
        {'name': 'recall_chunk', 'binary': false},
        {'name': 'precision_chunk', 'binary': false},
        {'name': 'ap_chunk', 'binary': false},
        {'name': 'hit_page', 'binary': true},
        {'name': 'mrr_page', 'binary': false},
        {'name': 'ndcg_page', 'binary': false},
        {'name': 'recall_page', 'binary': false},
        {'name': 'precision_page', 'binary': false},
        {'name': 'ap_page', 'binary': false},
        {'name': 'all_evidence_hit', 'binary': true},
    ]) }}
{%- endmacro %}

{#- The subset shown in the breakdown marts (by question type, company, year, corpus size). -#}
{% macro key_retrieval_metrics() -%}
    {{ return([
        {'name': 'hit_chunk', 'binary': true},
        {'name': 'mrr_chunk', 'binary': false},
        {'name': 'ndcg_chunk', 'binary': false},
        {'name': 'recall_chunk', 'binary': false},
        {'name': 'hit_page', 'binary': true},
        {'name': 'mrr_page', 'binary': false},
        {'name': 'all_evidence_hit', 'binary': true},
    ]) }}
{%- endmacro %}

{#- Answer metrics: figure match and state_correct are 0/1; the others are graded scores in [0, 1]. -#}
{% macro answer_metrics() -%}
    {{ return([
        {'name': 'figure_match', 'binary': true},
        {'name': 'grounded', 'binary': false},
        {'name': 'period_ok', 'binary': false},
        {'name': 'citation_precision', 'binary': false},
        {'name': 'citation_recall', 'binary': false},
        {'name': 'faithfulness', 'binary': false},
        {'name': 'answer_relevancy', 'binary': false},
        {'name': 'state_correct', 'binary': true},
    ]) }}
{%- endmacro %}

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
