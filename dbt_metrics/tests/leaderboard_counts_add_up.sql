-- Singular test: every leaderboard row's ok + failed questions make up its question count,
-- and coverage is exactly their ratio.
select *
from {{ ref('mart_retriever_leaderboard') }}
where n_ok + n_failed != n_questions
   or abs(coverage - n_ok::double / n_questions) > 1e-9
