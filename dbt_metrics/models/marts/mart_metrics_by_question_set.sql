-- The leaderboard per question set: key retrieval metrics with intervals per configuration x scope x
-- question set (an imported external set's name, or 'synthetic' for generated questions), newest run
-- per filing. mart_retriever_leaderboard averages every question together; this mart keeps the
-- hand-written or real questions (finrag qa import; the demo's analyst_questions) apart from the
-- generator's, so each set has its own leaderboard (rank_in_set: by all-evidence hit, then page hit).
with latest as (
    select * from {{ ref('int_retrieval_latest_by_question_set') }}
),
agg as (
    {{ metrics_by(['question_set']) }}
)
select
    *,
    rank() over (partition by question_set, scope, k
                 order by all_evidence_hit_mean desc nulls last, hit_page_mean desc nulls last) as rank_in_set
from agg
