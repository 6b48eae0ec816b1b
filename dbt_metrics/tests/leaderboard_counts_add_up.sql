-- Singular test: ok + failed + no-relevant questions make up each leaderboard row's question count,
-- and coverage is the ok share of the scoreable (not no_relevant) questions.
select *
from {{ ref('mart_retriever_leaderboard') }}
where n_ok + n_failed + n_no_relevant != n_questions
   or (n_questions > n_no_relevant
       and abs(coverage - n_ok::double / (n_questions - n_no_relevant)) > 1e-9)
