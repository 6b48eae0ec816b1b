"""How a ranking or an answer is scored against its reference: one room, below the warehouse (whose
eval tables and results views it defines) and below everything that scores (retrieval's fitting and
sanity floors, QA generation, evaluation).

- ``metric_registry.py``: every metric once (name, level, direction, kind, chance flags, limits);
  ``python -m finrag_pipeline.core.scoring.metric_registry --write`` regenerates the dbt macro and docs table;
- ``response_states.py``: the response states and which are failures;
- ``metrics.py``: ranking metrics (chunk and page level);
- ``answer_claims.py`` / ``answer_metrics.py``: what an answer text claims, and its score against the
  reference (``score_answer``);
- ``answer_contract.py``: what a correct answer to a QA item must commit to (``answer_values``);
- ``results_views.py``: which stored rows are current and how they score, as warehouse SQL views.
"""
