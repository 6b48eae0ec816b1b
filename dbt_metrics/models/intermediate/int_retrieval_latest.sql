-- The current retrieval results: only the newest run of each configuration x filing x scope, so a
-- re-evaluation replaces (not adds to) the numbers the leaderboard and breakdowns average.
select r.*
from {{ ref('stg_retrieval_results') }} r
join {{ ref('int_retrieval_run_order') }} o
  on o.run_id = r.run_id
 and {{ null_safe_join('o', 'r', ['config_name', 'retriever', 'k', 'chunking', 'filing_id', 'scope']) }}
where o.run_recency = 1
