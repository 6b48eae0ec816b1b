"""Named automation conditions: what triggers what (the README's "What triggers what" table).

One arrival makes one wave: ingest -> corpus_state -> every filing's evaluation -> marts, snapshot, report,
each asset (partition) built once.

- A new filing is registered by the inbox sensor, which requests the ingest job for its partition
  (parse -> chunks -> both indexes -> QA set).
- CORPUS_CHANGED: any filing's index partition updated (or the corpus state is missing) -> the corpus
  state is recomputed (and filings removed from the catalog are dropped from the indexes), once no index
  partition is still being written (a running ingest).
- EVALUATE_WHEN_INPUTS_CHANGE: a QA set updated, the corpus state changed (a distractor pool grew or
  shrank), the partition is new, or the evaluation configuration changed (its code version is a hash of
  assets_config/retrievers.yaml + eval_matrix.yaml + lexicon.yaml) -> that evaluation partition re-runs.
  It waits while corpus_state is pending (in progress, requested, being fed by a running ingest, or its
  indexes updated since it last ran): a new filing's QA set lands before the corpus state that includes
  it, and evaluating then would evaluate it twice (once against the old corpus).
- REFRESH_MARTS: an evaluation (or an upstream mart) updated -> eval_statistics, the dbt models, the
  analysts' snapshot and the report, in one run, once no evaluation partition is pending (in progress,
  requested, missing, waiting for its own inputs, or with inputs updated since it ran). The gate sees an
  asset's own evaluation deps only, so every mart entry depends on both evaluations (eval_statistics by
  definition, each dbt model over an evaluation table through MartsTranslator). Ingest-side
  updates (a filing's pages, chunks, QA set, which some dbt staging views read) do not trigger them on
  their own: they always lead to evaluations, after which the marts build once.
- BUILD_VARIANT: a filing parsed (pages / table_rows updated), a chunking variant added to ingest.yaml
  (its partitions are missing) or the variants' settings changed -> that (filing, variant) partition of
  variant_chunks, then variant_bm25_index and variant_vector_index. An evaluation whose matrix names a
  variant depends on them (MultiToSingleDimensionPartitionMapping on the filing) and waits for them.
- A nightly schedule re-runs the full evaluation whatever changed (assets_config/automation.yaml).

The gates do not rely on ``will_be_requested`` alone: evaluations, marts and corpus/QA assets are
evaluated by three automation sensors (one run-concurrency pool each, defs/automation/sensors.py), and a
sensor does not see what another requests in the same tick. "Inputs updated since it last ran" (a
``since`` over its own materialization or a failed attempt) closes that gap.
"""

import dagster as dg

AC = dg.AutomationCondition

EVALUATION_KEYS = (dg.AssetKey("retrieval_eval"), dg.AssetKey("answer_eval"))
EVALUATIONS = dg.AssetSelection.assets(*EVALUATION_KEYS)
CORPUS = dg.AssetSelection.assets("corpus_state")
# eval_statistics, the dbt models (groups staging and marts), analyst_snapshot and eval_report.
MART_ASSETS = dg.AssetSelection.assets("eval_statistics") | dg.AssetSelection.groups("staging", "marts")
# What the marts react to: the evaluations and, for chaining inside one run, the mart chain itself.
MART_TRIGGERS = EVALUATIONS | MART_ASSETS


def _inputs_updated_since_built() -> dg.AutomationCondition:
    """True for a target whose deps updated after its own latest materialization (or failed attempt): its
    refresh is still owed. A failure resets it, so one broken partition cannot hold the wave forever."""
    return AC.any_deps_match(AC.newly_updated()).since(
        AC.newly_updated() | AC.execution_failed()).with_label("inputs updated since built")


def _pending() -> dg.AutomationCondition:
    """True for an asset partition that the wave has not finished with yet."""
    return (AC.in_progress() | AC.will_be_requested() | AC.any_deps_in_progress()
            | _inputs_updated_since_built()).with_label("pending")


def _changed(*, code_version: bool) -> dg.AutomationCondition:
    """The trigger, held until the target is requested (``since_last_handled``)."""
    trigger = AC.newly_missing() | AC.any_deps_updated()
    if code_version:
        trigger = trigger | AC.code_version_changed()
    return trigger.since_last_handled().with_label("inputs changed")


_NOT_BLOCKED = ~AC.in_progress() & ~AC.any_deps_in_progress() & ~AC.any_deps_missing()

CORPUS_CHANGED = (_changed(code_version=False) & _NOT_BLOCKED).with_label("corpus changed")

EVALUATE_WHEN_INPUTS_CHANGE = (
    _changed(code_version=True) & _NOT_BLOCKED
    & ~AC.any_deps_match(_pending()).allow(CORPUS).with_label("corpus_state pending")
).with_label("QA set, corpus or eval config changed")

# The chunking-variant partitions (filing x chunking): a new filing's parse (pages, table_rows updated), a
# variant added to ingest.yaml (its partitions are new, hence missing) or the variants' settings changed (the
# code version) -> that (filing, variant) is re-chunked and re-indexed.
BUILD_VARIANT = (_changed(code_version=True) & _NOT_BLOCKED).with_label(
    "filing parsed, variant new or its settings changed")

REGENERATE_QA = (_changed(code_version=True) & _NOT_BLOCKED).with_label("filing re-ingested or QA config changed")
REGENERATE_QA_ON_CONFIG_CHANGE = REGENERATE_QA  # the former name

REFRESH_MARTS = (
    # a mart never built (e.g. a staging model over ingest tables, which no evaluation update names) is
    # built with the next wave; one already built refreshes after an evaluation (or upstream mart) update
    (AC.missing() | AC.any_deps_updated().allow(MART_TRIGGERS).since_last_handled())
    .with_label("missing, or evaluation updated")
    & _NOT_BLOCKED
    & ~AC.any_deps_match(_pending()).allow(EVALUATIONS).with_label("an evaluation pending")
).with_label("last evaluation of the wave done")
