-- The current retrieval results: only the newest run of each configuration x filing x scope, so a
-- re-evaluation replaces (not adds to) the numbers the leaderboard and breakdowns average. The rule is
-- the warehouse view eval.retrieval_current (finrag_pipeline/core/scoring/results_views.py).
select {{ scored_retrieval_columns() }}
from {{ source('eval', 'retrieval_current') }}
