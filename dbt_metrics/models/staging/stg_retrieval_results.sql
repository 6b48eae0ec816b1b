-- One row per question x retrieval configuration x scope x run, scored. The scoring rules (a failure
-- scores 0, 'no_relevant' is left out of every mean, NULL = not computable) are the warehouse view
-- eval.retrieval_scored (finrag_pipeline/core/scoring/results_views.py), which the bootstrap
-- leaderboard, the report and the web explorer read too.
select {{ scored_retrieval_columns() }}
from {{ source('eval', 'retrieval_scored') }}
