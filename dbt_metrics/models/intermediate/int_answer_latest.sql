-- The current answer results: the newest run of each answer configuration x filing (the warehouse view
-- eval.answer_current, finrag_pipeline/core/scoring/results_views.py).
select {{ scored_answer_columns() }}
from {{ source('eval', 'answer_current') }}
