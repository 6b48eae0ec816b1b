"""One wiring, and CLI writes seen by Dagster, on a real instance.

The code location's resources are overridden the way a deployment would: the embedder resource names
``minilm-flag`` of assets_config/embedder.yaml (FlagEmbedding; its vectors are stored under another
embedder name, so a LanceDB table built with it cannot be searched with the default embedder) and the
finrag resource points at a config directory whose eval_matrix.yaml runs only bm25 and dense at k=5.
One filing (four pages of Apple's FY2022 10-K) goes through ingest and evaluation as Dagster runs.
Then `finrag qa import` and `finrag qa review` change its QA set, and the automation conditions,
evaluated on the same instance, request its evaluation again.
"""

import csv
import json
import shutil
from pathlib import Path

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner

from finrag_pipeline.core.paths import ASSETS_CONFIG_DIR, FinragPaths
from finrag_pipeline.core.warehouse import Warehouse
from finrag_pipeline.defs.resources import EmbedderResource, FinragResource

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DATA = Path(__file__).parent / "data"
FILING = "AAPL-2022-10K"


def _defs_with(resources: dict) -> dg.Definitions:
    from finrag_pipeline.definitions import defs

    return dg.Definitions(assets=list(defs.assets), asset_checks=list(defs.asset_checks), jobs=list(defs.jobs),
                          sensors=list(defs.sensors), schedules=list(defs.schedules),
                          resources={**defs.resources, **resources})


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    from finrag_pipeline.defs.local_runs import get_instance, run_pipeline

    root = tmp_path_factory.mktemp("wiring")
    home = root / "home"
    config_dir = root / "config"
    config_dir.mkdir()
    matrix = yaml.safe_load((ASSETS_CONFIG_DIR / "eval_matrix.yaml").read_text())
    matrix["retrieval"].update(retrievers=["bm25", "dense"], top_k=[5], scopes=["filing"])
    matrix["answers"].update(models=["extractive"])
    (config_dir / "eval_matrix.yaml").write_text(yaml.safe_dump(matrix))
    corpus = root / "corpus"
    corpus.mkdir()
    shutil.copy(DATA / "apple_2022_excerpt.pdf", corpus / "APPLE_2022_10K.pdf")  # FinanceBench's doc_name

    mp = pytest.MonkeyPatch()
    mp.setenv("FINRAG_HOME", str(home))
    mp.setenv("DAGSTER_HOME", str(home / "dagster_home"))
    mp.delenv("FINRAG_CONFIG_DIR", raising=False)
    paths = FinragPaths.from_env(str(home)).ensure()
    defs = _defs_with({"finrag": FinragResource(home=str(home), config_dir=str(config_dir)),
                       "embedder": EmbedderResource(name="minilm-flag")})
    instance = get_instance(paths)
    report = run_pipeline([corpus], paths, instance, defs, build_marts=False, progress=lambda _m: None)
    yield {"paths": paths, "defs": defs, "instance": instance, "report": report, "root": root,
           "wh": Warehouse(paths.warehouse)}
    mp.undo()


def test_evaluation_searches_with_the_embedder_resource_and_reads_the_resource_config_dir(home):
    wh, report = home["wh"], home["report"]
    assert report.failed == {}
    # the vector index was built by the overridden embedder resource
    built = home["instance"].fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("vector_index"), asset_partitions=[FILING]), limit=1).records
    assert built[0].asset_materialization.metadata["embedder"].value.startswith("flag:")
    runs = wh.query_df("SELECT config_name, kind, status FROM eval.runs ORDER BY kind, config_name")
    # only the configurations of the resource's config directory ran (the repo's matrix has 21 retrieval ones)
    assert sorted(runs[runs["kind"] == "retrieval"]["config_name"]) == ["bm25@5", "dense@5"]
    answer_configs = set(runs[runs["kind"] == "answers"]["config_name"])
    assert any(c.startswith("extractive") for c in answer_configs)
    assert not any(c.startswith("calculator") for c in answer_configs)
    # dense search ran with the embedder the index was built with: every question scored, none errored
    dense = wh.query_df("SELECT status, error, hit_page FROM eval.retrieval_results WHERE config_name = 'dense@5'")
    assert len(dense) > 0
    assert set(dense["status"]) <= {"ok", "no_relevant"}, dense["error"].dropna().unique()[:3]
    assert dense["hit_page"].mean() > 0.3


def test_a_session_from_the_resources_uses_the_resource_embedder(home):
    from finrag_pipeline.core.models import SearchFilters
    from finrag_pipeline.defs.resources import session_from_resources

    resources = home["defs"].resources
    session = session_from_resources(resources["finrag"], resources["embedder"])
    hits = session.retriever("dense").search("net sales", 3, SearchFilters(filing_ids=(FILING,)))
    assert len(hits) == 3 and {h.filing_id for h in hits} == {FILING}
    assert session.resources.get("embedder").name.startswith("flag:")
    assert session.resources.get("lance").embedder is session.resources.get("embedder")
    # the default wiring (no resources) opens the default embedder and cannot search this index
    from finrag_pipeline.core.session import FinragSession

    with pytest.raises(ValueError, match="was built with flag:"):
        FinragSession.open(str(home["paths"].home)).retriever("dense").search("net sales", 3, None)


def _requested(defs, instance, cursor):
    result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    return set(result.get_requested_partitions(dg.AssetKey("retrieval_eval"))), result.cursor


def test_qa_import_and_review_from_the_cli_make_automation_reevaluate_the_filing(home):
    from finrag_pipeline.cli import main

    defs, instance, wh = home["defs"], home["instance"], home["wh"]
    # settle: the first tick may request what is missing (marts); the second requests no evaluation
    _first, cursor = _requested(defs, instance, None)
    quiet, cursor = _requested(defs, instance, cursor)
    assert quiet == set()

    cli = CliRunner()
    base = ["--home", str(home["paths"].home)]
    out = cli.invoke(main, [*base, "qa", "import", str(DATA / "financebench_sample.jsonl"),
                            "--format", "financebench"], catch_exceptions=False)
    assert out.exit_code == 0, out.output
    assert "imported 3 questions" in out.output
    assert f"QA sets changed: {FILING}" in out.output
    events = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("qa_set"), asset_partitions=[FILING]), limit=1).records
    assert events[0].run_id == "" and events[0].asset_materialization.metadata["change"].value.startswith(
        "finrag qa import")
    requested, cursor = _requested(defs, instance, cursor)
    assert requested == {FILING}
    # once requested, nothing more until the next change
    requested, cursor = _requested(defs, instance, cursor)
    assert requested == set()

    sheet = home["root"] / "review.csv"
    assert cli.invoke(main, [*base, "qa", "export", FILING, "--out", str(sheet)]).exit_code == 0
    rows = list(csv.DictReader(sheet.open(newline="", encoding="utf-8")))
    rows[0].update(decision="reject", note="ambiguous")
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    out = cli.invoke(main, [*base, "qa", "review", str(sheet), "--reviewer", "analyst"], catch_exceptions=False)
    assert out.exit_code == 0 and f"QA sets changed: {FILING}" in out.output, out.output
    assert json.loads(wh.query_df("SELECT after FROM qa.reviews").iloc[0, 0])["status"] == "rejected"
    requested, cursor = _requested(defs, instance, cursor)
    assert requested == {FILING}
