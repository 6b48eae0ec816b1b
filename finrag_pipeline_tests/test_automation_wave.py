"""One wave per arrival: the real automation conditions and sensors of the code location, evaluated tick by
tick against a Dagster instance while runs queue, start and finish as the daemon and the run queue would
make them.

The asset graph is the real one (keys, deps, partition mappings, automation conditions, code versions,
groups) with every compute replaced by a no-op, so a wave over a demo-like corpus (three filings, one
arrival) runs in seconds. Each automation sensor of the definitions evaluates its own selection with its
own cursor, as the daemon does (a sensor does not see what another requests in the same tick). A requested
run is created in the instance (so automation sees it as in progress), waits in a queue that honours the
tag concurrency limits of assets_config/deployment.yaml, runs for a few ticks, and then executes for real
(materializations recorded by Dagster), with the sensors ticking again between the two steps of an
evaluation run (live, its answer_eval and retrieval_eval materialize minutes apart). The same harness on the conditions this branch replaced shows the
defects it was built to catch.
"""

import json
from collections import Counter
from dataclasses import dataclass, field

import dagster as dg
import pytest
from dagster._core.definitions.job_base import InMemoryJob
from dagster._core.execution.api import execute_run
from dagster._core.storage.dagster_run import DagsterRunStatus

from finrag_pipeline.core.deployment import run_concurrency_limits as load_run_concurrency
from finrag_pipeline.core.variants import partition_key
from finrag_pipeline.defs.automation.conditions import EVALUATION_KEYS, EVALUATIONS, MART_ASSETS
from finrag_pipeline.defs.automation.jobs import POOL_TAG, POOLS, ingest_filing_job
from finrag_pipeline.defs.partitions import CHUNKING_VARIANTS, FILINGS_PARTITIONS_NAME, evaluated_variants

BASE = ["AAPL-2022-10K", "MSFT-2022-10K", "NVDA-2025-10K"]
ARRIVAL = "AAPL-2025-10K"
# Ticks a run spends running before it finishes, by pool (the ingest of a 10-K is the longest).
RUN_TICKS = {"ingest": 3, "evaluation": 2, "warehouse": 2}


@pytest.fixture(scope="module")
def real_defs():
    from finrag_pipeline.definitions import defs

    return defs


def _op_name(key: dg.AssetKey) -> str:
    return "stub__" + "__".join(key.path)


def stub_definitions(real_defs: dg.Definitions, condition_for=None, parents_for=None) -> dg.Definitions:
    """The code location's asset graph with no-op computes. ``condition_for(node)`` replaces a condition,
    ``parents_for(node)`` the deps."""
    graph = real_defs.resolve_asset_graph()
    assets = []
    for key in graph.toposorted_asset_keys:
        node = graph.get(key)
        if not node.is_materializable:
            continue
        parents = parents_for(node) if parents_for else node.parent_keys
        deps = [dg.AssetDep(parent, partition_mapping=graph.get_partition_mapping(key, parent))
                for parent in parents]
        spec = dg.AssetSpec(key, deps=deps, partitions_def=node.partitions_def, group_name=node.group_name,
                            code_version=node.code_version,
                            automation_condition=condition_for(node) if condition_for else node.automation_condition)

        @dg.multi_asset(specs=[spec], name=_op_name(key))
        def _noop(context: dg.AssetExecutionContext):
            BETWEEN_STEPS.hook(context)
            for selected in context.selected_asset_keys:
                yield dg.MaterializeResult(asset_key=selected)

        assets.append(_noop)
    return dg.Definitions(assets=assets, executor=dg.in_process_executor)


class BetweenSteps:
    """Called by each stub step before it materializes: the daemon ticks the automation sensors there, as the
    real daemon does while a run is half done (one of its assets materialized, the next still in progress)."""

    hook = staticmethod(lambda context: None)


BETWEEN_STEPS = BetweenSteps()


@dataclass
class SimRun:
    run_id: str
    pool: str
    keys: frozenset
    partition: str | None
    submitted: int
    started: int | None = None
    finished: int | None = None
    submitted_during: "SimRun | None" = None  # the run that was half done when this one was requested


@dataclass
class Wave:
    """What happened: every request (tick, sensor, partition, assets) and every run."""

    requests: list[tuple[int, str, str | None, frozenset]] = field(default_factory=list)
    runs: list[SimRun] = field(default_factory=list)
    max_running: Counter = field(default_factory=Counter)

    def requested(self) -> Counter:
        return Counter((k.to_user_string(), pk) for _t, _s, pk, keys in self.requests for k in keys)

    def runs_of(self, asset: str, partition: str | None = None) -> list[SimRun]:
        return [r for r in self.runs if dg.AssetKey.from_user_string(asset) in r.keys
                and (partition is None or r.partition == partition)]


class Daemon:
    """The automation sensors, the queued run coordinator (tag limits) and run workers, one tick at a time."""

    def __init__(self, real_defs: dg.Definitions, defs: dg.Definitions, sensors, instance: dg.DagsterInstance):
        self.defs, self.instance = defs, instance
        self.job = defs.resolve_implicit_global_asset_job_def()
        self.sensors = sensors  # [(name, selection, run_tags)]
        self.cursors: dict[str, object] = {}
        self.limits = {lim["value"]: lim["limit"] for lim in load_run_concurrency() if lim["key"] == POOL_TAG}
        self.queue: list[SimRun] = []
        self.running: list[SimRun] = []
        self.tick = 0
        self.executing: SimRun | None = None
        self.mid_run_ticks = 0
        self.wave = Wave()

    def submit(self, keys, partition: str | None, tags: dict[str, str]) -> SimRun:
        """A run created as the daemon creates it: in the instance (planned materializations, so automation
        sees it in progress from now on), waiting in the run queue."""
        run = self.instance.create_run_for_job(
            job_def=self.job, asset_selection=frozenset(keys), status=DagsterRunStatus.NOT_STARTED,
            tags={**tags, **({"dagster/partition": partition} if partition else {})})
        sim = SimRun(run.run_id, tags[POOL_TAG], frozenset(keys), partition, self.tick,
                     submitted_during=self.executing)
        self.queue.append(sim)
        self.wave.runs.append(sim)
        return sim

    def step(self) -> int:
        """One tick: finished runs execute; the coordinator starts queued runs within the limits; each
        automation sensor evaluates its selection and submits its requests. Returns the runs requested."""
        self.tick += 1
        for sim in [r for r in self.running if self.tick - r.started >= RUN_TICKS[r.pool]]:
            self._execute(sim)
            sim.finished = self.tick
            self.running.remove(sim)
        for sim in list(self.queue):
            if sum(r.pool == sim.pool for r in self.running) < self.limits[sim.pool]:
                sim.started = self.tick
                self.queue.remove(sim)
                self.running.append(sim)
        for pool in POOLS:
            self.wave.max_running[pool] = max(self.wave.max_running[pool], sum(r.pool == pool for r in self.running))
        return self._tick_sensors()

    def _execute(self, sim: SimRun) -> None:
        """Executes the run for real, one step after the other. In a run of the evaluations the sensors tick
        between its steps: live, retrieval_eval and answer_eval of one run materialize a minute apart (the
        ingest and marts runs are not split, to keep the harness fast)."""
        steps_done = []

        def between_steps(context):
            if steps_done and sim.keys <= set(EVALUATION_KEYS):
                self.mid_run_ticks += 1
                self._tick_sensors()
            steps_done.append(context.op.name)

        BETWEEN_STEPS.hook, self.executing = between_steps, sim
        try:
            result = execute_run(InMemoryJob(self.job), self.instance.get_run_by_id(sim.run_id), self.instance)
        finally:
            BETWEEN_STEPS.hook, self.executing = BetweenSteps.hook, None
        assert result.success
        assert len(steps_done) == len(sim.keys)

    def _tick_sensors(self) -> int:
        n = 0
        for name, selection, run_tags in self.sensors:
            result = dg.evaluate_automation_conditions(defs=self.defs, instance=self.instance,
                                                       asset_selection=selection, cursor=self.cursors.get(name))
            self.cursors[name] = result.cursor
            # One run per partition key (and one for the unpartitioned assets), as the sensor groups them.
            by_partition: dict[str | None, set] = {}
            for key in selection.resolve(self.defs.resolve_asset_graph()):
                for pk in result.get_requested_partitions(key):
                    by_partition.setdefault(pk, set()).add(key)
            for pk, keys in sorted(by_partition.items(), key=lambda kv: kv[0] or ""):
                self.submit(keys, pk, dict(run_tags))
                self.wave.requests.append((self.tick, name, pk, frozenset(keys)))
                n += 1
        return n

    def run_until_quiet(self, max_ticks: int = 60) -> Wave:
        quiet = 0
        while quiet < 2:
            assert self.tick < max_ticks, f"automation never settled: {self.wave.requests[-5:]}"
            quiet = quiet + 1 if self.step() == 0 and not self.queue and not self.running else 0
        return self.wave


def _automation_sensors(real_defs: dg.Definitions):
    return [(s.name, s.asset_selection, s.run_tags) for s in real_defs.sensors
            if isinstance(s, dg.AutomationConditionSensorDefinition)]


def _partition_keys(partitions_def, filings) -> list[str | None]:
    """The keys of ``filings`` under an asset's partitioning: none, the filing, or filing x chunking variant."""
    if partitions_def is None:
        return [None]
    if isinstance(partitions_def, dg.MultiPartitionsDefinition):
        return [partition_key(f, v) for f in filings for v in CHUNKING_VARIANTS]
    return list(filings)


def _demo_like_daemon(real_defs, defs, sensors) -> Daemon:
    """Five filings fully built (ingest, corpus state, evaluations, marts), automation settled; then the
    inbox sensor's work for one arrival: its partition added, its ingest run submitted."""
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, BASE)
    graph = defs.resolve_asset_graph()
    for key in graph.toposorted_asset_keys:
        for pk in _partition_keys(graph.get(key).partitions_def, BASE):
            instance.report_runless_asset_event(dg.AssetMaterialization(key, partition=pk))
    daemon = Daemon(real_defs, defs, sensors, instance)
    settled = daemon.run_until_quiet()
    assert settled.requests == [], f"a fully built corpus requested runs: {settled.requests}"

    instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, [ARRIVAL])
    daemon.submit(ingest_filing_job.selection.resolve(graph), ARRIVAL,
                  {**real_defs.resolve_job_def("ingest_filing").run_tags, "finrag/trigger": "inbox"})
    return daemon


@pytest.fixture(scope="module")
def wave(real_defs) -> tuple[Wave, Daemon]:
    daemon = _demo_like_daemon(real_defs, stub_definitions(real_defs), _automation_sensors(real_defs))
    return daemon.run_until_quiet(), daemon


def test_each_asset_of_the_wave_is_requested_once(wave, real_defs):
    wave, daemon = wave
    requested = wave.requested()
    twice = {ap: n for ap, n in requested.items() if n > 1}
    assert twice == {}, f"requested more than once: {twice}"
    filings = [*BASE, ARRIVAL]
    graph = daemon.defs.resolve_asset_graph()
    evaluations = EVALUATIONS.resolve(graph)
    expected = {("corpus_state", None)} | {(k.to_user_string(), f) for k in evaluations for f in filings}
    # The marts chain: everything downstream of the evaluations (the staging views over ingest tables alone,
    # stg_filings / stg_chunks / stg_qa_items, are views and need no rebuild).
    chain = {k for k in MART_ASSETS.resolve(graph) if graph.get(k).parent_keys & (evaluations | MART_ASSETS.resolve(graph))}
    expected |= {(k.to_user_string(), None) for k in chain}
    # the arrival's chunking-variant partitions (filing x chunking), built by automation after its parse
    # while the evaluation matrix evaluates a variant (otherwise they are built on demand)
    variant_keys = dg.AssetSelection.groups("variants").resolve(graph)
    assert len(variant_keys) == (3 if CHUNKING_VARIANTS else 0)
    if not evaluated_variants():
        variant_keys = set()
    expected |= {(k.to_user_string(), pk) for k in variant_keys for pk in _partition_keys(graph.get(k).partitions_def,
                                                                                         [ARRIVAL])}
    assert {"eval_statistics", "marts/mart_retriever_leaderboard", "analyst_snapshot", "eval_report"} <= {
        a for a, _ in expected}
    assert set(requested) == expected, (set(requested) ^ expected)
    # nothing of the ingest is re-run by automation (its QA set came with the ingest run)
    assert not any(a in ("qa_set", "chunks", "bm25_index") for a, _ in requested)


def test_evaluations_start_only_after_corpus_state(wave):
    wave, _ = wave
    [corpus] = wave.runs_of("corpus_state")
    [ingest] = wave.runs_of("vector_index", ARRIVAL)
    assert corpus.submitted >= ingest.finished  # not while the arrival's indexes are being written
    for asset in ("retrieval_eval", "answer_eval"):
        runs = wave.runs_of(asset)
        assert {r.partition for r in runs} == {*BASE, ARRIVAL}
        for run in runs:
            assert run.submitted >= corpus.finished, (asset, run.partition, run.submitted, corpus.finished)
    # one run per filing holding both evaluations, in the evaluation pool
    assert all(r.keys == {dg.AssetKey("retrieval_eval"), dg.AssetKey("answer_eval")} and r.pool == "evaluation"
               for r in wave.runs_of("retrieval_eval"))


def test_marts_build_once_in_one_run_after_the_last_evaluation(wave):
    wave, daemon = wave
    # the sensors ticked between the steps of every evaluation run
    assert daemon.mid_run_ticks == len(wave.runs_of("retrieval_eval")) > 0
    [marts] = wave.runs_of("eval_report")
    assert wave.runs_of("eval_statistics") == [marts] == wave.runs_of("marts/mart_retriever_leaderboard")
    assert marts.pool == "warehouse"
    last_evaluation = max(r.finished for r in wave.runs_of("retrieval_eval"))
    assert marts.submitted >= last_evaluation
    # not between the two steps of the last evaluation run either (the sensors tick there too)
    assert marts.submitted_during is None


def test_runs_queue_within_the_pool_limits(wave):
    wave, daemon = wave
    # four evaluation runs were submitted at once; the queue ran them at most `limit` at a time
    assert daemon.limits["evaluation"] >= 1
    evaluations = wave.runs_of("retrieval_eval")
    assert len({r.submitted for r in evaluations}) == 1 and len(evaluations) > daemon.limits["evaluation"]
    assert wave.max_running["evaluation"] == daemon.limits["evaluation"]
    assert {r.pool for r in wave.runs} == set(POOLS)


# ---------------------------------------------------------------------------------------------
# The same harness on the conditions and the single sensor that this change replaced: the defects of the
# live measurement (new filing evaluated before corpus_state, marts built over partial states) show.


def _conditions_before(node):
    AC = dg.AutomationCondition
    if node.automation_condition is None:
        return None
    if node.key.to_user_string() in ("retrieval_eval", "answer_eval", "qa_set"):
        return AC.eager() | (AC.code_version_changed() & ~AC.any_deps_missing() & ~AC.in_progress())
    return AC.eager()


@pytest.mark.slow  # an extra check: that the harness can see the defects at all
def test_the_replaced_conditions_built_the_wave_several_times(real_defs):
    defs = stub_definitions(real_defs, _conditions_before)
    one_sensor = [("default", dg.AssetSelection.all(), {"finrag/trigger": "automation", POOL_TAG: "evaluation"})]
    daemon = _demo_like_daemon(real_defs, defs, one_sensor)
    wave = daemon.run_until_quiet()
    [corpus] = wave.runs_of("corpus_state")
    # the new filing was evaluated against the old corpus: requested before corpus_state finished
    assert min(r.submitted for r in wave.runs_of("retrieval_eval", ARRIVAL)) < corpus.finished
    # the marts, snapshot and report were built over partial states, the first time with the ingest
    requested = wave.requested()
    assert requested[("eval_report", None)] >= 2 and requested[("analyst_snapshot", None)] >= 2
    assert min(r.submitted for r in wave.runs_of("eval_report")) <= corpus.submitted


def _dbt_manifest_parents() -> dict[dg.AssetKey, set[dg.AssetKey]]:
    """Each dbt model's deps as dagster-dbt draws them from the manifest (what the marts had before every
    model over an evaluation table was given both evaluations as deps)."""
    from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings

    from finrag_pipeline.defs.marts.assets import dbt_project

    manifest = json.loads(dbt_project.manifest_path.read_text())
    plain = DagsterDbtTranslator(settings=DagsterDbtTranslatorSettings(enable_duplicate_source_asset_keys=True))
    specs = [plain.get_asset_spec(manifest, uid, dbt_project) for uid in manifest["nodes"] if uid.startswith("model.")]
    return {spec.key: {dep.asset_key for dep in spec.deps} for spec in specs}


def test_a_model_reading_one_evaluation_waits_for_both(real_defs):
    graph = real_defs.resolve_asset_graph()
    evaluations = set(EVALUATION_KEYS)
    manifest_parents = _dbt_manifest_parents()
    one_sided = {k for k, parents in manifest_parents.items() if len(parents & evaluations) == 1}
    # the manifest has models over one evaluation only (the answer side, the retrieval side)
    assert dg.AssetKey(["staging", "stg_answer_results"]) in one_sided
    assert dg.AssetKey(["staging", "stg_retrieval_results"]) in one_sided
    for key in one_sided:
        assert graph.get(key).parent_keys >= evaluations | manifest_parents[key], key
    # models over neither keep their deps (a staging view over ingest tables does not wait for evaluations)
    stg_filings = dg.AssetKey(["staging", "stg_filings"])
    assert graph.get(stg_filings).parent_keys == manifest_parents[stg_filings]


@pytest.mark.slow  # an extra check: the regression the mid-run ticks were added for
def test_one_sided_models_built_the_report_twice(real_defs):
    """The live defect (docs/BENCHMARKS.md): the answer-side models, then the snapshot and the report, built
    between the two steps of the wave's last evaluation run, and again after its retrieval_eval."""
    manifest_parents = _dbt_manifest_parents()
    defs = stub_definitions(real_defs, parents_for=lambda node: manifest_parents.get(node.key, node.parent_keys))
    wave = _demo_like_daemon(real_defs, defs, _automation_sensors(real_defs)).run_until_quiet()
    requested = wave.requested()
    assert requested[("eval_report", None)] == 2 and requested[("analyst_snapshot", None)] == 2
    # the first was requested between the two steps of an evaluation run
    first_report = min(wave.runs_of("eval_report"), key=lambda r: r.submitted)
    assert first_report.submitted_during is not None
    assert first_report.submitted_during.keys == set(EVALUATION_KEYS)
