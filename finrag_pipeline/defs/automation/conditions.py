"""Named automation conditions: what triggers what (the README's "What triggers what" table).

- A new filing is registered by the inbox sensor, which requests the ingest job for its partition
  (parse -> chunks -> both indexes -> QA set).
- CORPUS_CHANGED: any filing's index partition updated (or the corpus state is missing) -> the corpus
  state is recomputed (and filings removed from the catalog are dropped from the indexes).
- EVALUATE_WHEN_INPUTS_CHANGE: a QA set updated, or the corpus state changed (a distractor pool grew or
  shrank), or the evaluation configuration changed (its code version is a hash of
  assets_config/retrievers.yaml + eval_matrix.yaml) -> that evaluation partition re-runs. Since the
  corpus state is upstream of every partition, a new filing re-evaluates every existing QA set.
- REFRESH_MARTS: any evaluation partition updated -> dbt marts, the analysts' snapshot and the report.
- A nightly schedule re-runs the full evaluation whatever changed (assets_config/automation.yaml).
"""

import dagster as dg

CORPUS_CHANGED = dg.AutomationCondition.eager().with_label("corpus changed")

EVALUATE_WHEN_INPUTS_CHANGE = (
    dg.AutomationCondition.eager()
    | (dg.AutomationCondition.code_version_changed() & ~dg.AutomationCondition.any_deps_missing()
       & ~dg.AutomationCondition.in_progress())
).with_label("QA set, corpus or eval config changed")

REGENERATE_QA_ON_CONFIG_CHANGE = (
    dg.AutomationCondition.code_version_changed() & ~dg.AutomationCondition.any_deps_missing()
    & ~dg.AutomationCondition.in_progress()
).with_label("QA config changed")

REFRESH_MARTS = dg.AutomationCondition.eager().with_label("evaluation updated")
