"""Marts for analysts: dbt models over the eval tables, a read-only snapshot, and an HTML report."""

import os
from collections.abc import Iterator, Mapping
from typing import Any

import dagster as dg
from dagster_dbt import (
    DagsterDbtTranslator,
    DagsterDbtTranslatorSettings,
    DbtCliResource,
    DbtProject,
    dbt_assets,
)

from finrag_pipeline.core.reporting.report import build_report, load_report_summary
from finrag_pipeline.core.reporting.serve import REPORT_FILE, report_url
from finrag_pipeline.core.warehouse import publish_snapshot
from finrag_pipeline.defs.automation.conditions import EVALUATION_KEYS, REFRESH_MARTS
from finrag_pipeline.defs.marts.columns import column_schema
from finrag_pipeline.defs.marts.project import DBT_PROJECT_DIR, dbt_executable, dbt_project
from finrag_pipeline.defs.resources import FinragResource

# The manifest exists before the code location loads (defs/marts/project.py says who prepares it);
# under `dagster dev` dagster-dbt re-parses a changed project here.
dbt_project.prepare_if_dev()


class MartsTranslator(DagsterDbtTranslator):
    """Staging and intermediate views in group ``staging``, result tables in ``marts``; every model
    refreshed by automation when an evaluation changed."""

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        fqn = dbt_resource_props.get("fqn", [])
        return "staging" if {"staging", "intermediate"} & set(fqn) else "marts"

    def get_owners(self, dbt_resource_props: Mapping[str, Any]):
        return ["team:finrag-eval"]

    def get_tags(self, dbt_resource_props: Mapping[str, Any]) -> Mapping[str, str]:
        return {**super().get_tags(dbt_resource_props), "layer": self.get_group_name(dbt_resource_props) or ""}

    def get_automation_condition(self, dbt_resource_props: Mapping[str, Any]):
        return REFRESH_MARTS

    def get_asset_spec(self, manifest: Mapping[str, Any], unique_id: str, project: DbtProject | None) -> dg.AssetSpec:
        """A model that reads either evaluation's tables depends on both: one evaluation run writes
        retrieval_eval and answer_eval one after the other, and the mart gate (REFRESH_MARTS) sees only an
        asset's own deps, so a model over answer_eval alone would build (and the snapshot and report after
        it) while the same run's retrieval_eval was still being written, and again after it."""
        spec = super().get_asset_spec(manifest, unique_id, project)
        if not unique_id.startswith("model."):
            return spec
        return with_both_evaluations(spec)



def with_both_evaluations(spec: dg.AssetSpec) -> dg.AssetSpec:
    """``spec`` with every evaluation as a dep if it has any as a dep (unchanged otherwise)."""
    deps = {dep.asset_key for dep in spec.deps}
    missing = [key for key in EVALUATION_KEYS if key not in deps]
    if not deps & set(EVALUATION_KEYS) or not missing:
        return spec
    return spec.merge_attributes(deps=missing)


@dbt_assets(manifest=dbt_project.manifest_path, project=dbt_project, dagster_dbt_translator=MartsTranslator(
    # eval.runs is written by both evaluation assets; it shares retrieval_eval's key.
    settings=DagsterDbtTranslatorSettings(enable_duplicate_source_asset_keys=True, enable_code_references=True)))
def dbt_metric_marts(context: dg.AssetExecutionContext, dbt: DbtCliResource, finrag: FinragResource):
    """dbt build: staging views and metric marts (leaderboard with intervals, by question type, company,
    fiscal year, corpus growth, regressions, answer quality) in schema ``marts``, with the project's tests."""
    os.environ["FINRAG_WAREHOUSE"] = str(finrag.paths.warehouse)  # the profile reads it
    finrag.publish_distributed_results()  # distributed mode: evaluation rows from the object store first
    # Artifacts and dbt.log of the latest build under FINRAG_HOME, not a new folder in the repo per run.
    invocation = dbt.cli(["build"], context=context, target_path=finrag.paths.home / "dbt_target")
    # Held until dbt exits: it holds the DuckDB file lock, and the schemas and row counts are read after.
    events = list(invocation.stream())
    yield from with_schemas_and_row_counts(events, invocation.get_artifact("manifest.json"), finrag.warehouse)


def with_schemas_and_row_counts(events: list, manifest: Mapping[str, Any], wh) -> Iterator:
    """Each model's materialization with ``dagster/column_schema`` (every column of the built relation,
    its type from the warehouse catalog, its description from the yml or the naming rules) and
    ``dagster/row_count``. A relation that cannot be read keeps dbt's own metadata."""
    catalog: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for schema, table, column, dtype in wh.query_df(
            "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema IN ('staging', 'marts') ORDER BY table_schema, table_name, ordinal_position"
    ).itertuples(index=False):
        catalog.setdefault((schema, table), []).append((column, dtype))
    nodes = manifest.get("nodes", {})
    located = []
    for event in events:
        unique_id = event.metadata.get("unique_id") if isinstance(event, dg.Output) else None
        node = nodes.get(getattr(unique_id, "value", unique_id)) if unique_id is not None else None
        relation = (node["schema"], node.get("alias") or node["name"]) if node else None
        located.append((event, node, relation if relation in catalog else None))
    # Every model's row count in one query (one connection), not one connection per model.
    relations = list(dict.fromkeys(r for _e, _n, r in located if r is not None))
    counts: dict[tuple[str, str], int] = {}
    if relations:
        sql = " UNION ALL ".join(f"SELECT {i} AS i, count(*) AS n FROM \"{s}\".\"{t}\""
                                 for i, (s, t) in enumerate(relations))
        counts = {relations[int(i)]: int(n) for i, n in wh.query_df(sql).itertuples(index=False)}
    for event, node, relation in located:
        if relation is None:
            yield event
            continue
        yield event.with_metadata({
            **event.metadata,
            "dagster/column_schema": column_schema(catalog[relation], node.get("columns", {})),
            "dagster/row_count": dg.MetadataValue.int(counts[relation]),
        })


@dg.asset(
    group_name="marts", kinds={"duckdb"}, deps=[dbt_metric_marts], automation_condition=REFRESH_MARTS,
    description="warehouse_read.duckdb: a copy of the warehouse swapped in atomically after each "
                "successful marts build. Analysts open it read-only; an open session never blocks the "
                "pipeline and never sees a half-written state.",
)
def analyst_snapshot(finrag: FinragResource) -> dg.MaterializeResult:
    path = publish_snapshot(finrag.warehouse, finrag.paths.warehouse_snapshot)
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(path)), "bytes": path.stat().st_size,
        "connect": dg.MetadataValue.md(f"`duckdb -readonly {path}`"),
    })


@dg.asset(
    group_name="marts", kinds={"html"}, deps=[analyst_snapshot], automation_condition=REFRESH_MARTS,
    description="Self-contained HTML report: the filings evaluated, metrics per retriever and k with interval "
                "bars, a configuration x question type heatmap, the corpus growth curve, answer quality, "
                "regressions and the worst questions. Its `report` link opens it over http while `finrag report "
                "--serve` or `finrag serve` runs.",
)
def eval_report(finrag: FinragResource) -> dg.MaterializeResult:
    out = build_report(finrag.paths.warehouse_snapshot, finrag.paths.reports_dir / REPORT_FILE)
    summary = load_report_summary(finrag.paths.warehouse_snapshot)
    # Browsers block file:// links from an http page: link the report server (`finrag report --serve`).
    return dg.MaterializeResult(metadata={
        "report": dg.MetadataValue.url(report_url(out.name)),
        "serve": dg.MetadataValue.md(f"`finrag report --serve` (or the web explorer, `finrag serve`) serves "
                                     f"`{out.parent}` at {report_url('')}"),
        "path": dg.MetadataValue.path(str(out)),
        "best_per_scope_and_k": dg.MetadataValue.md(
            summary.to_markdown(index=False) if not summary.empty else "_no retrieval evaluation yet_"),
    })


dbt_resource = DbtCliResource(project_dir=dbt_project, profiles_dir=str(DBT_PROJECT_DIR), dbt_executable=dbt_executable())
