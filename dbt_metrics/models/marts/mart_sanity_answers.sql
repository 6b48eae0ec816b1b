-- The lazy answerers that run beside the real ones (core/evaluation/sanity_answerers.py), per answerer:
-- correctness on answerable questions (a scoring that cannot be gamed keeps it near 0), the non-committal
-- rate, and abstention accuracy on unanswerable questions; newest run of each configuration x filing.
-- max_correctness is the limit (macro sanity_limits(), generated from metric_registry.SANITY_LIMITS);
-- within_limit is NULL when there is no answerable question to measure.
select
    model,
    count(*) filter (where answerable) as n_answerable,
    avg(correctness) filter (where answerable) as correctness,
    avg(non_committal) as non_committal,
    count(*) filter (where not answerable) as n_unanswerable,
    avg(abstention_correct) filter (where not answerable) as abstention_accuracy,
    cast({{ sanity_limits().max_correctness }} as double) as max_correctness,
    avg(correctness) filter (where answerable) <= {{ sanity_limits().max_correctness }} as within_limit
from {{ ref('int_answer_latest') }}
where is_sanity
group by model
