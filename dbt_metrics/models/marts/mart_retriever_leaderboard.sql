-- Retriever leaderboard: one row per configuration x retriever x k x chunking x scope, over the
-- newest run of every filing. Failed questions count as 0; questions without relevant evidence
-- ('no_relevant') are left out of the means and counted in n_no_relevant; `coverage` is the share of
-- scoreable questions that ran without error; `*_metrics_coverage` the share with a chunk/page score.
-- Intervals, two kinds:
--   * <metric>_ci_low / _ci_high: CLOSED-FORM, computed here in SQL: Wilson for 0/1 metrics,
--     normal approximation for graded ones (macros/stats.sql);
--   * <metric>_boot_ci_low / _boot_ci_high: the seeded percentile BOOTSTRAP interval of the
--     evaluation engine (source eval.leaderboard, written by the eval_statistics asset from the same
--     newest runs and scoring rules); NULL until that asset has run for this configuration.
-- Paired comparison with the best configuration of the same scope and k by page nDCG (source
-- eval.comparisons, metric = best_by = ndcg_page): delta_vs_best = this config - best on the questions
-- both answered, its paired-bootstrap CI, the sign-flip permutation p_value_vs_best, and
-- distinguishable_from_best = that CI excludes 0 (false for the best itself).
-- Chance levels (mart_chance_levels): <metric>_chance is what k leaf chunks drawn at random earn on the
-- same questions, <metric>_chance_band its band (sanity limits' standard errors), for every metric with a
-- chance level (macro chance_metrics()); NULL when some question has none (the reason: mart_chance_levels).
with latest as (
    select * from {{ ref('int_retrieval_latest') }}
),
agg as (
    select
        config_name, retriever, k, chunking, scope,
        count(distinct filing_id) as n_filings,
        count(*) as n_questions,
        count(*) filter (where is_ok) as n_ok,
        count(*) filter (where is_failed) as n_failed,
        count(*) filter (where is_no_relevant) as n_no_relevant,
        count(*) filter (where is_ok) / nullif(count(*) filter (where not is_no_relevant), 0) as coverage,
        count(hit_chunk) / nullif(count(*) filter (where not is_no_relevant), 0) as chunk_metrics_coverage,
        count(hit_page) / nullif(count(*) filter (where not is_no_relevant), 0) as page_metrics_coverage,
        {% for m in retrieval_metrics() -%}
        {{ metric_with_ci(m.name, binary=m.binary) }},
        {% endfor -%}
        quantile_cont(latency_ms, 0.5) as latency_p50_ms,
        quantile_cont(latency_ms, 0.95) as latency_p95_ms,
        max(n_filings_in_corpus) as n_filings_in_corpus,
        max(evaluated_at) as last_evaluated_at,
        -- outside systems under test (systems.yaml): their kind, and how many of their contexts were not in the corpus
        max(system_kind) as system_kind,
        sum(n_contexts_unmapped) as n_contexts_unmapped
    from latest
    group by config_name, retriever, k, chunking, scope
),
boot as (
    -- eval.leaderboard is long (one row per metric): pivot the bootstrap bounds to columns.
    select
        scope, config_name, retriever, k, chunking,
        {% for m in retrieval_metrics() -%}
        max(ci_low) filter (where metric = '{{ m.name }}') as {{ m.name }}_boot_ci_low,
        max(ci_high) filter (where metric = '{{ m.name }}') as {{ m.name }}_boot_ci_high,
        {% endfor -%}
        max(n_boot) as boot_n_resamples,
        max(built_at) as boot_built_at
    from {{ source('eval', 'leaderboard') }}
    where kind = 'retrieval'
    group by scope, config_name, retriever, k, chunking
),
chance as (
    select
        {{ retrieval_config_cols() }},
        {% for m in chance_metrics() -%}
        max(chance_level) filter (where metric = '{{ m }}') as {{ m }}_chance,
        max(chance_band) filter (where metric = '{{ m }}') as {{ m }}_chance_band{% if not loop.last %},{% endif %}
        {% endfor %}
    from {{ ref('mart_chance_levels') }}
    group by {{ retrieval_config_cols() }}
),
cmp as (
    select
        scope, config_name, retriever, k, chunking,
        any_value(best_config_name) as best_config_name,
        any_value(best_by) as compared_on_metric,
        any_value(mean_diff) as delta_vs_best,
        any_value(ci_low) as delta_vs_best_ci_low,
        any_value(ci_high) as delta_vs_best_ci_high,
        any_value(p_value) as p_value_vs_best,
        any_value(n_pairs) as n_pairs_vs_best,
        any_value(distinguishable) as distinguishable_from_best,
        any_value(is_best) as is_best
    from {{ source('eval', 'comparisons') }}
    where kind = 'retrieval' and metric = best_by
    group by scope, config_name, retriever, k, chunking
),
joined as (
    select
        agg.*,
        {% for m in retrieval_metrics() -%}
        boot.{{ m.name }}_boot_ci_low,
        boot.{{ m.name }}_boot_ci_high,
        {% endfor -%}
        boot.boot_n_resamples,
        boot.boot_built_at,
        {% for m in chance_metrics() -%}
        chance.{{ m }}_chance,
        chance.{{ m }}_chance_band,
        {% endfor -%}
        cmp.best_config_name,
        cmp.compared_on_metric,
        cmp.delta_vs_best,
        cmp.delta_vs_best_ci_low,
        cmp.delta_vs_best_ci_high,
        cmp.p_value_vs_best,
        cmp.n_pairs_vs_best,
        cmp.distinguishable_from_best,
        cmp.is_best
    from agg
    left join boot on {{ null_safe_join('boot', 'agg', ['scope', 'config_name', 'retriever', 'k', 'chunking']) }}
    left join chance on {{ null_safe_join('chance', 'agg', ['scope', 'config_name', 'retriever', 'k', 'chunking']) }}
    left join cmp on {{ null_safe_join('cmp', 'agg', ['scope', 'config_name', 'retriever', 'k', 'chunking']) }}
)
select
    *,
    -- Ranks within a scope and k (comparing k=5 with k=20 is not a fair race). By chunk nDCG (the
    -- primary metric; chunking variants without chunk-level scores rank last), and by page nDCG,
    -- which every chunking variant has and so compares them fairly.
    rank() over (partition by scope, k order by ndcg_chunk_mean desc nulls last, ndcg_page_mean desc nulls last)
        as rank_in_scope_k,
    rank() over (partition by scope, k order by ndcg_page_mean desc nulls last, hit_page_mean desc nulls last)
        as rank_by_page_in_scope_k
from joined
