-- One row per retrieval run of one configuration on one filing and scope, numbered newest first
-- (run_recency = 1 is the current result, 2 the one before it): the warehouse view
-- eval.retrieval_run_order (finrag_pipeline/core/scoring/results_views.py).
select * from {{ source('eval', 'retrieval_run_order') }}
