"""What the Dagster UI shows about every asset beyond its own definition: owner, tags, freshness, and
the "what triggers what" chain of its group. One table per group, applied in definitions.py."""

from dataclasses import dataclass
from datetime import timedelta

import dagster as dg

OWNER = "team:finrag-eval"


@dataclass(frozen=True)
class GroupInfo:
    domain: str
    triggered_by: str
    # Longest time after which a materialization is stale: None for assets updated only when their inputs
    # change (a filing's parse is fresh forever; a stale report is not).
    fresh_within: timedelta | None = None


GROUPS: dict[str, GroupInfo] = {
    "ingest": GroupInfo(
        "ingest",
        "A file in the inbox: the inbox sensor registers it, adds its partition and requests the ingest_filing "
        "job (filings -> pages, table_rows, xbrl_facts -> chunks -> both indexes -> qa_set). Also `finrag "
        "ingest` / `finrag demo`. inbox_quarantine records files the sensor rejected, with the reason."),
    "index": GroupInfo(
        "index",
        "bm25_index and vector_index run in the ingest_filing job after chunks. corpus_state follows by "
        "automation (finrag_automation sensor) once any filing's index partition changed and no ingest is "
        "still writing an index; one corpus_state per arrival."),
    "variants": GroupInfo(
        "index",
        "Partitioned filing x chunking (the non-default variants of assets_config/ingest.yaml). Automation "
        "(finrag_automation): a filing parsed, a variant added or the variants' settings changed -> "
        "variant_chunks -> variant_bm25_index, variant_vector_index of that (filing, variant). Also the "
        "build_chunking_variants job (`finrag variants build`, and `finrag eval --chunking` for what is missing). "
        "Evaluations whose matrix names a variant wait for these partitions and never build them."),
    "qa": GroupInfo(
        "qa",
        "Runs in the ingest_filing job after the indexes; automation re-generates a filing's QA set when "
        "assets_config/qa.yaml or models.yaml changed (its code version)."),
    "evaluation": GroupInfo(
        "evaluation",
        "Automation (finrag_evaluation_automation): a QA set updated, corpus_state changed (a filing arrived "
        "or left: every filing re-evaluates) or the evaluation config changed -> retrieval_eval and answer_eval "
        "of that filing, one run per filing, only once corpus_state is up to date (never against the old "
        "corpus). Runs queue by tag finrag/pool=evaluation (assets_config/deployment.yaml). eval_statistics "
        "builds with the marts after the last evaluation. The nightly_reevaluation schedule re-runs every filing.",
        fresh_within=timedelta(days=2)),
    "staging": GroupInfo(
        "marts",
        "dbt staging views over the eval tables, rebuilt by automation (finrag_marts_automation) with the "
        "marts in the same run, after the last evaluation of a wave (job build_marts from the CLI)."),
    "marts": GroupInfo(
        "marts",
        "Automation (finrag_marts_automation), once per wave: when the last evaluation is done and none is "
        "queued, running or owed (inputs updated since it ran), one run builds eval_statistics -> dbt build "
        "(staging views, marts, tests as checks) -> analyst_snapshot -> eval_report. Ingest-side updates alone "
        "do not trigger it. Also the build_marts job (`finrag demo`, `finrag ingest`).",
        fresh_within=timedelta(days=2)),
}


def with_catalog_metadata(spec: dg.AssetSpec) -> dg.AssetSpec:
    info = GROUPS.get(spec.group_name or "")
    if info is None:
        return spec
    spec = spec.merge_attributes(
        owners=[] if OWNER in spec.owners else [OWNER],
        tags={"domain": info.domain, **({"partitioned": _partitioned_by(spec.partitions_def)}
                                        if spec.partitions_def else {})},
        metadata={"triggered_by": dg.MetadataValue.md(info.triggered_by)},
    )
    if info.fresh_within is not None and spec.freshness_policy is None:
        spec = spec.replace_attributes(freshness_policy=dg.FreshnessPolicy.time_window(fail_window=info.fresh_within))
    return spec


def _partitioned_by(partitions_def: dg.PartitionsDefinition) -> str:
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return "per-" + "-x-".join(partitions_def.partition_dimension_names)  # per-chunking-x-filing
    return "per-filing"
