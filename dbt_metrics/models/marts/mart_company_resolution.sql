-- How often a configuration's company/period resolution found the question's own filing, per
-- configuration x scope x question set (newest run per filing). Only configurations that resolve
-- (company_mode prefilter: core/retrieval/company_first.py; period_mode: the period filter) have rows.
-- resolution (per question): exact = only the question's filing; covers = it among others (other
-- years a 10-K also reports); wrong = filings that exclude it; unresolved = no company named, the
-- whole scope was searched. resolution_accuracy = (exact + covers) / questions; failed searches count 0.
with latest as (
    select * from {{ ref('int_retrieval_latest_by_question_set') }}
    where not is_no_relevant
)
select
    config_name, retriever, k, chunking, scope, question_set,
    count(*) as n_questions,
    count(*) filter (where resolution = 'exact') as n_exact,
    count(*) filter (where resolution = 'covers') as n_covers,
    count(*) filter (where resolution = 'wrong') as n_wrong,
    count(*) filter (where resolution = 'unresolved') as n_unresolved,
    avg(case when is_failed then 0.0 else resolution_correct end) as resolution_accuracy,
    count(*) filter (where resolution = 'exact') / count(*) as exact_rate
from latest
group by config_name, retriever, k, chunking, scope, question_set
having count(resolution) > 0
