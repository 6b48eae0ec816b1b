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

{#- Answer metrics (core/evaluation/answer_metrics.ANSWER_METRICS). correctness, non_committal,
    abstention_correct and state_correct are 0/1; the others are graded scores in [0, 1]. `rate`: a
    behaviour rate, not a score, so a failed answer is NOT set to 0 (non_committal is measured on
    answered answerable questions, abstention_correct on unanswerable ones; NULL elsewhere). -#}
{% macro answer_metrics() -%}
    {{ return([
        {'name': 'correctness', 'binary': true, 'rate': false},
        {'name': 'non_committal', 'binary': true, 'rate': true},
        {'name': 'grounded', 'binary': false, 'rate': false},
        {'name': 'period_ok', 'binary': false, 'rate': false},
        {'name': 'citation_precision', 'binary': false, 'rate': false},
        {'name': 'citation_recall', 'binary': false, 'rate': false},
        {'name': 'block_citation_precision', 'binary': false, 'rate': false},
        {'name': 'block_citation_recall', 'binary': false, 'rate': false},
        {'name': 'abstention_correct', 'binary': true, 'rate': true},
        {'name': 'faithfulness', 'binary': false, 'rate': false},
        {'name': 'answer_relevancy', 'binary': false, 'rate': false},
        {'name': 'state_correct', 'binary': true, 'rate': false},
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
