{#- GENERATED from finrag_pipeline/core/scoring/metric_registry.py; do not edit. Rewrite with
    `python -m finrag_pipeline.core.scoring.metric_registry --write`. `binary`: 0/1 per question
    (Wilson CI), else graded (normal-approximation CI). `rate`: a behaviour rate, not a score, so a
    failed answer is NOT set to 0 for it. -#}

{#- The retrieval metrics every mart reports. -#}
{% macro retrieval_metrics() -%}
    {{ return([
        {'name': 'hit_chunk', 'binary': true},
        {'name': 'mrr_chunk', 'binary': false},
        {'name': 'precision_chunk', 'binary': false},
        {'name': 'recall_chunk', 'binary': false},
        {'name': 'ap_chunk', 'binary': false},
        {'name': 'ndcg_chunk', 'binary': false},
        {'name': 'hit_page', 'binary': true},
        {'name': 'mrr_page', 'binary': false},
        {'name': 'precision_page', 'binary': false},
        {'name': 'recall_page', 'binary': false},
        {'name': 'ap_page', 'binary': false},
        {'name': 'ndcg_page', 'binary': false},
        {'name': 'all_evidence_hit', 'binary': true},
        {'name': 'hit_ranked_page', 'binary': true},
        {'name': 'recall_ranked_page', 'binary': false},
        {'name': 'all_evidence_hit_ranked_page', 'binary': true},
    ]) }}
{%- endmacro %}

{#- The subset shown in the breakdown marts (by question type, company, year, corpus size). -#}
{% macro key_retrieval_metrics() -%}
    {{ return([
        {'name': 'hit_chunk', 'binary': true},
        {'name': 'mrr_chunk', 'binary': false},
        {'name': 'recall_chunk', 'binary': false},
        {'name': 'ndcg_chunk', 'binary': false},
        {'name': 'hit_page', 'binary': true},
        {'name': 'mrr_page', 'binary': false},
        {'name': 'all_evidence_hit', 'binary': true},
    ]) }}
{%- endmacro %}

{#- The answer metrics (non_committal is measured on answered answerable questions,
    abstention_correct on unanswerable ones; NULL elsewhere). -#}
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
        {'name': 'key_fact_recall', 'binary': false, 'rate': false},
    ]) }}
{%- endmacro %}

{#- The retrieval metrics with a chance level (column <name>_chance per question). -#}
{% macro chance_metrics() -%}
    {{ return([
        'hit_chunk',
        'hit_page',
        'all_evidence_hit',
    ]) }}
{%- endmacro %}

{#- The sanity limits (metric_registry.SANITY_LIMITS). -#}
{% macro sanity_limits() -%}
    {{ return({
        'max_correctness': 0.05,
        'chance_band_se': 3.0,
        'chance_band_slack': 0.02,
    }) }}
{%- endmacro %}
