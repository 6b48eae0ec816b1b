"""The filing x chunking partitions as Dagster sees them: definitions with and without variants, the
evaluation's dependency when the matrix names a variant, and automation building a new filing's and a
new variant's partitions (no-op computes, real conditions and partition mappings)."""

import json
import os
import subprocess
import sys
import textwrap

import dagster as dg
from _dagster_driver import run_automation_until_quiet

from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.variants import variant_names
from finrag_pipeline.defs.index.variants import build_variant_assets, variants_code_version
from finrag_pipeline.defs.partitions import (
    CHUNKING_DIMENSION,
    FILING_DIMENSION,
    FILINGS_PARTITIONS_NAME,
    filings_partitions,
)
from finrag_pipeline.defs.resources import code_location_resources

VARIANT_ASSETS = ("variant_chunks", "variant_bm25_index", "variant_vector_index")

_PROBE = textwrap.dedent("""
    import json
    import dagster as dg
    from finrag_pipeline.definitions import defs
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    eval_key = dg.AssetKey("retrieval_eval")
    variant = graph.get(dg.AssetKey("variant_chunks")) if graph.has(dg.AssetKey("variant_chunks")) else None
    print(json.dumps({
        "assets": sorted(k.to_user_string() for k in graph.get_all_asset_keys()),
        "jobs": sorted(j.name for j in defs.resolve_all_job_defs()),
        "chunking_keys": variant.partitions_def.get_partitions_def_for_dimension("chunking").get_partition_keys()
                         if variant else None,
        "eval_deps": {p.to_user_string(): type(graph.get_partition_mapping(eval_key, p)).__name__
                      for p in graph.get(eval_key).parent_keys},
    }))
""")


def _load_definitions(config_dir) -> dict:
    """The code location loaded in a fresh process with FINRAG_CONFIG_DIR=config_dir (partitions and deps are
    read from the config when the location loads)."""
    env = {**os.environ, "FINRAG_CONFIG_DIR": str(config_dir), "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_definitions_with_the_repo_variants():
    from finrag_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    for name in VARIANT_ASSETS:
        partitions_def = graph.get(dg.AssetKey(name)).partitions_def
        assert isinstance(partitions_def, dg.MultiPartitionsDefinition)
        assert set(partitions_def.partition_dimension_names) == {FILING_DIMENSION, CHUNKING_DIMENSION}
        chunking = partitions_def.get_partitions_def_for_dimension(CHUNKING_DIMENSION)
        assert chunking.get_partition_keys() == variant_names() == ["small", "large", "no_overlap", "prose_only"]
    assert "build_chunking_variants" in {j.name for j in defs.resolve_all_job_defs()}
    # the repo's eval matrix names no variant: evaluations do not wait for variant partitions
    assert graph.get(dg.AssetKey("retrieval_eval")).parent_keys == {dg.AssetKey("qa_set"), dg.AssetKey("corpus_state")}
    # the ingest job (one filing) holds none of the filing x chunking assets
    ingest = {k.to_user_string() for k in defs.resolve_job_def("ingest_filing").asset_layer.selected_asset_keys}
    assert ingest and not ingest & set(VARIANT_ASSETS)


def test_definitions_without_variants_and_with_a_matrix_naming_one(tmp_path):
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "ingest.yaml").write_text("chunking:\n  base: {chunk_size: 1000, overlap: 150}\n  variants: {default: {}}\n")
    loaded = _load_definitions(bare)
    assert not set(VARIANT_ASSETS) & set(loaded["assets"]) and "chunks" in loaded["assets"]
    assert "build_chunking_variants" not in loaded["jobs"] and "ingest_filing" in loaded["jobs"]
    assert loaded["chunking_keys"] is None

    named = tmp_path / "named"
    named.mkdir()
    (named / "ingest.yaml").write_text(
        "chunking:\n  base: {chunk_size: 1000, overlap: 150}\n  variants: {default: {}, small: {chunk_size: 500}}\n")
    (named / "eval_matrix.yaml").write_text((REPO_ROOT / "assets_config" / "eval_matrix.yaml").read_text()
                                            .replace("chunking: [null]", "chunking: [null, small]"))
    loaded = _load_definitions(named)
    assert loaded["chunking_keys"] == ["small"]
    deps = loaded["eval_deps"]
    assert set(deps) == {"qa_set", "corpus_state", "variant_bm25_index", "variant_vector_index"}, deps
    assert deps["variant_bm25_index"] == deps["variant_vector_index"] == "MultiToSingleDimensionPartitionMapping"


def _stub_defs(variants: list[str]) -> dg.Definitions:
    """pages / table_rows per filing and the variant assets over ``variants``, computes replaced by no-ops."""
    partitions = dg.MultiPartitionsDefinition({FILING_DIMENSION: filings_partitions,
                                               CHUNKING_DIMENSION: dg.StaticPartitionsDefinition(variants)})
    real = build_variant_assets(partitions, variants_code_version(variants))
    graph = dg.Definitions(assets=real, resources=code_location_resources()).resolve_asset_graph()
    specs = [dg.AssetSpec(name, partitions_def=filings_partitions) for name in ("pages", "table_rows")]
    stubs = []
    for key in (dg.AssetKey(n) for n in VARIANT_ASSETS):
        node = graph.get(key)
        spec = dg.AssetSpec(key, deps=[dg.AssetDep(p, partition_mapping=graph.get_partition_mapping(key, p))
                                       for p in node.parent_keys],
                            partitions_def=node.partitions_def, group_name=node.group_name,
                            code_version=node.code_version, automation_condition=node.automation_condition)

        @dg.multi_asset(specs=[spec], name="stub_" + key.path[-1])
        def _noop(context: dg.AssetExecutionContext):
            for selected in context.selected_asset_keys:
                yield dg.MaterializeResult(asset_key=selected)

        stubs.append(_noop)
    return dg.Definitions(assets=[*specs, *stubs], executor=dg.in_process_executor)


def _parsed(instance: dg.DagsterInstance, filing_id: str) -> None:
    instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, [filing_id])
    for name in ("pages", "table_rows"):
        instance.report_runless_asset_event(dg.AssetMaterialization(name, partition=filing_id))


def test_automation_builds_new_filings_and_new_variants(tmp_path, monkeypatch):
    from finrag_pipeline.core.config import using_config_dir

    config = tmp_path / "config"
    config.mkdir()
    (config / "ingest.yaml").write_text(
        "chunking:\n  base: {chunk_size: 1000, overlap: 150}\n"
        "  variants: {default: {}, small: {chunk_size: 500}, large: {chunk_size: 2000}}\n")
    instance = dg.DagsterInstance.ephemeral()
    with using_config_dir(config):
        one, two = _stub_defs(["small"]), _stub_defs(["small", "large"])

    ran, cursor = run_automation_until_quiet(one, instance)  # the daemon ticking before anything arrives
    assert ran == []
    _parsed(instance, "AAPL-2022-10K")
    ran, cursor = run_automation_until_quiet(one, instance, cursor)
    assert sorted(ran) == sorted((a, "small|AAPL-2022-10K") for a in VARIANT_ASSETS)

    # a new filing: its partitions of every variant, nothing of the others
    _parsed(instance, "WMT-2021-10K")
    ran, cursor = run_automation_until_quiet(one, instance, cursor)
    assert sorted(ran) == sorted((a, "small|WMT-2021-10K") for a in VARIANT_ASSETS)
    ran, cursor = run_automation_until_quiet(one, instance, cursor)
    assert ran == []  # settled

    # a variant added to ingest.yaml: its partitions are missing, then built. The variants' code version
    # covers every variant's settings, so the existing variant's partitions are rebuilt with them.
    ran, cursor = run_automation_until_quiet(two, instance, cursor)
    built = {(a, f"{v}|{f}") for a in VARIANT_ASSETS for v in ("small", "large") for f in ("AAPL-2022-10K", "WMT-2021-10K")}
    assert set(ran) == built and len(ran) == len(built)
    assert instance.get_materialized_partitions(dg.AssetKey("variant_vector_index")) == {pk for _a, pk in built}
    ran, _ = run_automation_until_quiet(two, instance, cursor)
    assert ran == []
