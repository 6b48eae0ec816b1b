-- One row per question x answer configuration x run, scored: a failed answer scores 0 on every metric
-- that applies (the rates non_committal and abstention_correct stay as recorded), a NULL on a non-failed
-- answer is "not applicable" (left out of that metric's mean, reported as coverage). The rules are the
-- warehouse view eval.answer_scored (finrag_pipeline/core/scoring/results_views.py).
select {{ scored_answer_columns() }}
from {{ source('eval', 'answer_scored') }}
