"""One place that opens what the CLI, the Dagster assets and the tests search with.

A :class:`FinragSession` over a FINRAG_HOME opens the indexes, the embedder and the chunk store once
(lazily) and builds named retrievers from assets_config/retrievers.yaml with overrides.

Two ways in: ``FinragSession.open(home)`` takes every part from the environment (FINRAG_HOME, the
default embedder of embedder.yaml, FINRAG_CONFIG_DIR); ``FinragSession.from_parts(paths, embedder,
config_dir)`` takes them explicitly. The Dagster assets and the CLI's writing commands build it from
the Dagster resources (``defs/resources.session_from_resources``), so the embedder the vector index was
built with is the one evaluation searches with, and the configured config directory is the one read.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from finrag_pipeline.core.config import using_config_dir
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import LATEST_CORPUS_VERSION_SQL, Warehouse


@dataclass
class CorpusState:
    corpus_state: str
    filing_ids: list[str]
    n_filings: int

    @classmethod
    def empty(cls) -> CorpusState:
        return cls("empty", [], 0)


_SHARED_SESSIONS: dict[tuple[str, ...], tuple[tuple[str, str], FinragSession]] = {}
_SHARED_LOCK = threading.Lock()


def _eval_config_fingerprint() -> str:
    from finrag_pipeline.core.config import config_fingerprint

    return config_fingerprint("retrievers.yaml", "eval_matrix.yaml", "lexicon.yaml", "models.yaml",
                              "embedder.yaml", "analyst_vocabulary.yaml")


@dataclass
class FinragSession:
    paths: FinragPaths
    retriever_overrides: Mapping[str, Any] = field(default_factory=dict)
    # Where evaluation rows go: None = the warehouse; distributed mode passes a writer with the same
    # replace_rows (core/storage/results.PartitionResults) whose rows a publisher loads later.
    result_writer: Any = None
    # Explicit parts (None: from the environment). ``embedder``: an Embedder or a zero-argument factory;
    # ``tantivy`` / ``lance``: opened indexes or factories; ``config_dir``: the assets_config directory
    # read while this session builds retrievers and evaluates (files it lacks keep their defaults).
    embedder: Any = None
    config_dir: str | None = None
    tantivy: Any = None
    lance: Any = None

    @classmethod
    def open(cls, home: str | None = None, **kwargs: Any) -> FinragSession:
        return cls(FinragPaths.from_env(home).ensure(), **kwargs)

    @classmethod
    def from_parts(cls, paths: FinragPaths, embedder: Any = None, config_dir: str | None = None, *,
                   tantivy: Any = None, lance: Any = None,
                   retriever_overrides: Mapping[str, Any] | None = None,
                   result_writer: Any = None) -> FinragSession:
        """A session over explicit parts: the layout, the embedder, the config directory and optionally
        opened indexes (a LanceIndex must use the same embedder). What the Dagster layer builds."""
        return cls(paths, retriever_overrides=dict(retriever_overrides or {}), embedder=embedder,
                   config_dir=str(config_dir) if config_dir else None, tantivy=tantivy, lance=lance,
                   result_writer=result_writer)

    def configured(self) -> contextlib.AbstractContextManager[None]:
        """The block reads configuration from this session's config directory (if it has one)."""
        return using_config_dir(self.config_dir)

    @classmethod
    def shared(cls, paths: FinragPaths, embedder: Any = None, config_dir: str | None = None, *,
               retriever_overrides: Mapping[str, Any] | None = None, embedder_key: str = "") -> FinragSession:
        """A session kept for this process while the corpus and the configuration stay the same.

        Every evaluation run of one process (``finrag demo`` runs 2 x 8 evaluation assets in-process)
        would otherwise re-load the chunk store, re-open both indexes and rebuild each filing's fact
        layer for the calculator. The session is reused only while :meth:`data_fingerprint` (corpus
        state, the chunks, table rows, facts and active filings) and the retrieval/answer YAMLs are
        unchanged: any re-ingest or config edit gets a fresh session. Pure reuse: a search's
        results depend only on those inputs, so rows are the same as with a new session.

        ``embedder`` / ``config_dir`` as for :meth:`from_parts`; ``embedder_key`` names the embedder (a
        factory has no identity of its own), so another embedder or config directory is another session."""
        overrides = dict(retriever_overrides or {})
        session = cls.from_parts(paths, embedder, config_dir, retriever_overrides=overrides)
        key = (str(paths.home), str(config_dir or ""), embedder_key,
               json.dumps(overrides, sort_keys=True, default=str))
        with session.configured():  # the config files of the session's directory
            fingerprint = (session.data_fingerprint(), _eval_config_fingerprint())
        with _SHARED_LOCK:
            cached = _SHARED_SESSIONS.get(key)
            if cached is not None and cached[0] == fingerprint:
                return cached[1]
            _SHARED_SESSIONS[key] = (fingerprint, session)  # one per home: an outdated one is dropped
            return session

    def data_fingerprint(self) -> str:
        """A hash of what searches and answers read: corpus state, chunks, table rows, XBRL facts and
        the active filings (one DuckDB query; milliseconds on the demo corpus)."""
        row = self.warehouse.query_df(f"""
            SELECT (SELECT coalesce(any_value(corpus_state), '') FROM ({LATEST_CORPUS_VERSION_SQL})) AS state,
                   (SELECT count(*) || ':' || coalesce(sum(hash(chunk_id, text, metadata, page_start, page_end,
                           is_leaf, parent_id)), 0) FROM core.chunks) AS chunks,
                   (SELECT count(*) || ':' || coalesce(sum(hash(filing_id, table_id, row_index, page_number,
                           headers, cells, row_path, unit, unit_text, statement_type)), 0)
                    FROM core.table_rows) AS table_rows,
                   (SELECT count(*) || ':' || coalesce(sum(hash(filing_id, fact_id, concept, value, unit,
                           period_start, period_end, dimensions, scale)), 0) FROM core.xbrl_facts) AS facts,
                   (SELECT coalesce(string_agg(filing_id || '=' || content_sha256, ',' ORDER BY filing_id), '')
                    FROM core.filings WHERE NOT coalesce(removed, FALSE)) AS filings""").iloc[0]
        return "|".join(str(v) for v in row.tolist())

    @cached_property
    def warehouse(self) -> Warehouse:
        return Warehouse(self.paths.warehouse)

    @cached_property
    def resources(self):
        from finrag_pipeline.core.retrieval.resources import RetrievalResources

        parts = {name: value for name, value in (("embedder", self.embedder), ("tantivy", self.tantivy),
                                                 ("lance", self.lance)) if value is not None}
        # Evaluation runs the same dense search for several retrievers of a question: run it once
        # (latencies still count it, see RetrievalResources.shared_search).
        from finrag_pipeline.core.indexing.exact_scan import load_dense_search_config

        with self.configured():
            depth = load_dense_search_config().shared_search_depth
        return RetrievalResources.from_paths(self.paths, warehouse=self.warehouse, search_memo_size=8192,
                                             shared_search_depth=depth, **parts)

    @cached_property
    def _retrievers(self) -> dict[str, Any]:
        return {}

    def retriever(self, name: str) -> Any:
        """A named retriever of retrievers.yaml (with this session's overrides), built once."""
        if name not in self._retrievers:
            from finrag_pipeline.core.retrieval.registry import build_named_retrievers

            with self.configured():
                self._retrievers[name] = build_named_retrievers(self.resources, [name],
                                                                overrides=self.retriever_overrides)[name]
        return self._retrievers[name]

    def eval_matrix(self, **narrowed: Any) -> Any:
        """eval_matrix.yaml of this session's config directory, narrowed (``retrievers=[...]``, ...)."""
        from finrag_pipeline.core.evaluation.runner import EvalMatrix

        with self.configured():
            matrix = EvalMatrix.load()
        narrowed = {k: v for k, v in narrowed.items() if v}
        return matrix.narrow(**narrowed) if narrowed else matrix

    @cached_property
    def variants(self):
        """The chunking variants' indexes (core/variants.py), as the variant assets built them."""
        from finrag_pipeline.core.variants import VariantIndexes

        return VariantIndexes(self.paths, self.warehouse, base_resources=self.resources)

    def retriever_factory(self, name: str, chunking: str | None = None) -> Any:
        """The evaluation runner's factory: (retriever name, chunking variant) -> retriever.

        None / "default" is the pipeline's own index; any other variant of ingest.yaml is read from what
        the variant assets built under FINRAG_HOME/indexes/variants/<variant> (never built here)."""
        from finrag_pipeline.core.variants import is_default_chunking

        if is_default_chunking(chunking):
            return self.retriever(name)
        with self.configured():
            return self.variants.retriever(name, chunking, overrides=self.retriever_overrides)

    def retriever_specs(self) -> dict[str, Any]:
        """The retriever definitions this session builds from (retrievers.yaml with its overrides): the
        evaluation hashes these, so a run with ``retriever_overrides`` gets its own config_hash and run_id
        instead of overwriting the default run's rows."""
        from finrag_pipeline.core.retrieval.config import load_retrievers

        with self.configured():
            return dict(load_retrievers(overrides=self.retriever_overrides))

    def chance_pool(self, chunking: str | None, filters: Any) -> list[Any]:
        """The leaves sanity_random draws from for this chunking and scope (the chance levels' pool)."""
        from finrag_pipeline.core.retrieval.sanity import candidate_pool
        from finrag_pipeline.core.variants import is_default_chunking

        store = (self.resources.get("chunk_store") if is_default_chunking(chunking)
                 else self.variants.get(chunking).chunk_store())
        return candidate_pool(store, filters)

    def require_variants(self, matrix: Any, filing_id: str, state: CorpusState | None = None) -> None:
        """Every chunking variant the retrieval matrix names must be built (by the variant assets) for the
        filings its scopes search: the filing itself, and with scope ``corpus`` every filing of the corpus
        state. Raises ``core.variants.VariantNotBuilt`` naming each missing (filing, variant).
        A name ingest.yaml does not define is left to the runner (an error row naming it)."""
        from finrag_pipeline.core.chunking.config import chunking_variants
        from finrag_pipeline.core.variants import is_default_chunking

        known = chunking_variants()
        named = [v for v in matrix.retrieval.chunking if not is_default_chunking(v) and v in known]
        if not named:
            return
        filings = {filing_id}
        if "corpus" in matrix.retrieval.scopes:
            filings |= set((state or self.corpus_state()).filing_ids)
        self.variants.require(named, filings)

    def corpus_state(self) -> CorpusState:
        df = self.warehouse.query_df(LATEST_CORPUS_VERSION_SQL)
        if not len(df):
            return CorpusState.empty()
        row = df.iloc[0]
        return CorpusState(row["corpus_state"], json.loads(row["filing_ids"]), int(row["n_filings"]))

    # ---- evaluation: shared by the Dagster assets and `finrag eval` -----------------------------

    def evaluate_retrieval(self, filing_id: str, matrix: Any = None, *, scope: str | None = None,
                           dagster_run_id: str | None = None) -> tuple[list[dict], list[dict]]:
        """Run the retrieval matrix on one filing's accepted questions and write the rows idempotently.
        Rows a parallel evaluation's worker computed for this filing, matrix and unchanged inputs
        (core/parallel_eval.py) are written instead of computing them again."""
        runs, rows = self._prepared_or("retrieval", filing_id, matrix, scope, lambda m: self.compute_retrieval(
            filing_id, m, scope=scope, dagster_run_id=dagster_run_id), dagster_run_id)
        self._replace_runs(runs, "eval.retrieval_results", rows)
        return runs, rows

    def compute_retrieval(self, filing_id: str, matrix: Any = None, *, scope: str | None = None,
                          dagster_run_id: str | None = None) -> tuple[list[dict], list[dict]]:
        """The rows :meth:`evaluate_retrieval` writes (eval.runs, eval.retrieval_results), computed, not written."""
        from finrag_pipeline.core.evaluation.runner import EvalMatrix, run_retrieval_eval
        from finrag_pipeline.core.records import load_qa_items

        state = self.corpus_state()
        with self.configured():
            matrix = matrix or EvalMatrix.load()
            self.require_variants(matrix, filing_id, state)
            return run_retrieval_eval(load_qa_items(self.warehouse, filing_id), self.retriever_factory,
                                      matrix, scope, filing_id, state.corpus_state,
                                      n_filings_in_corpus=state.n_filings, dagster_run_id=dagster_run_id,
                                      chance_pool=self.chance_pool, retriever_specs=self.retriever_specs())

    def evaluate_answers(self, filing_id: str, matrix: Any = None, *,
                         dagster_run_id: str | None = None) -> tuple[list[dict], list[dict]]:
        """Run the answer matrix on one filing's questions and write the rows idempotently (prepared rows
        as for :meth:`evaluate_retrieval`)."""
        runs, rows = self._prepared_or("answers", filing_id, matrix, None, lambda m: self.compute_answers(
            filing_id, m, dagster_run_id=dagster_run_id), dagster_run_id)
        self._replace_runs(runs, "eval.answer_results", rows)
        return runs, rows

    def compute_answers(self, filing_id: str, matrix: Any = None, *,
                        dagster_run_id: str | None = None) -> tuple[list[dict], list[dict]]:
        """The rows :meth:`evaluate_answers` writes, computed, not written."""
        from finrag_pipeline.core.evaluation.cited_evidence import CitedEvidence
        from finrag_pipeline.core.evaluation.runner import EvalMatrix, build_judge, run_answer_eval
        from finrag_pipeline.core.records import load_qa_items

        state = self.corpus_state()
        with self.configured():
            matrix = matrix or EvalMatrix.load()
            return run_answer_eval(load_qa_items(self.warehouse, filing_id), self.retriever_factory, matrix,
                                   filing_id, state.corpus_state, judge=build_judge(matrix),
                                   answerer_factory=self.answerer_factory,
                                   n_filings_in_corpus=state.n_filings, dagster_run_id=dagster_run_id,
                                   retriever_specs=self.retriever_specs(),
                                   evidence=CitedEvidence(self.warehouse))

    def inputs_fingerprint(self) -> str:
        """What an evaluation's rows depend on besides the matrix: the data (:meth:`data_fingerprint`), the
        retrieval / answer YAMLs of this session's config directory and its retriever overrides. Rows
        computed under one fingerprint are valid under the same fingerprint only."""
        with self.configured():
            config = _eval_config_fingerprint()
        return "|".join((self.data_fingerprint(), config, json.dumps(dict(self.retriever_overrides), sort_keys=True,
                                                                     default=str)))

    def _prepared_or(self, kind: str, filing_id: str, matrix: Any, scope: str | None, compute: Any,
                     dagster_run_id: str | None) -> tuple[list[dict], list[dict]]:
        from finrag_pipeline.core.evaluation import prepared as ahead
        from finrag_pipeline.core.evaluation.runner import EvalMatrix

        if scope is None and ahead.has_prepared(self.paths.home, kind, filing_id):
            with self.configured():
                resolved = matrix or EvalMatrix.load()
            prepared = ahead.take_prepared(self.paths.home, kind, filing_id, resolved, self.inputs_fingerprint())
            if prepared is not None:
                from finrag_pipeline.core.progress import task

                with task(f"evaluate {kind} {filing_id}: rows computed in parallel by {prepared.worker} in "
                          f"{prepared.seconds:.1f} s", len(prepared.rows), "rows") as done:  # the step log says so
                    done.update(len(prepared.rows))
                # the run that writes the rows is the Dagster run they belong to
                return [{**r, "dagster_run_id": dagster_run_id} for r in prepared.runs], prepared.rows
        return compute(matrix)

    def context_mapper(self) -> Any:
        """Places an outside system's contexts in this corpus (core/evaluation/context_mapping.py): the chunk
        store, each filing's page count and BM25 for text-only contexts."""
        from finrag_pipeline.core.evaluation.context_mapping import ContextMapper

        counts = self.warehouse.query_df("SELECT filing_id, max(page_number) AS n FROM core.pages GROUP BY ALL")
        page_counts = {str(r.filing_id): int(r.n) for r in counts.itertuples()}
        bm25 = self.retriever("bm25")
        return ContextMapper(self.resources.get("chunk_store"), page_counts,
                             lambda query, k, filters: bm25.search(query, k, filters))

    def evaluate_system(self, filing_id: str, name: str, matrix: Any = None, *, systems: Any = None,
                        dagster_run_id: str | None = None) -> tuple[list[dict], list[dict], list[dict]]:
        """Ask outside system ``name`` (systems.yaml, or ``systems``: a SystemsConfig) every accepted question of
        the filing, score its contexts and answers like a built-in configuration's, and write the rows
        idempotently -> (eval.runs rows, retrieval rows, answer rows)."""
        from finrag_pipeline.core.evaluation.runner import EvalMatrix, build_judge
        from finrag_pipeline.core.evaluation.system_eval import check_system_name, run_system_eval
        from finrag_pipeline.core.evaluation.systems import SystemsConfig
        from finrag_pipeline.core.records import load_qa_items

        state = self.corpus_state()
        with self.configured():
            matrix = matrix or EvalMatrix.load()
            spec = (systems or SystemsConfig.load()).get(name)
            check_system_name(name)
            spec.check_ready()
            runs, retrieval_rows, answer_rows = run_system_eval(
                load_qa_items(self.warehouse, filing_id), name, spec, self.context_mapper(), matrix, filing_id,
                state.corpus_state, n_filings_in_corpus=state.n_filings, judge=build_judge(matrix),
                chance_pool=self.chance_pool, dagster_run_id=dagster_run_id)
        run_ids = sorted({r["run_id"] for r in runs})
        writer = self.result_writer or self.warehouse
        writer.replace_rows("eval.retrieval_results", retrieval_rows, where={"run_id": run_ids})
        writer.replace_rows("eval.answer_results", answer_rows, where={"run_id": run_ids})
        writer.replace_rows("eval.runs", runs, where={"run_id": run_ids})
        return runs, retrieval_rows, answer_rows

    def answerer_factory(self, cfg: Any) -> Any:
        """The runner's answerer factory with this session's warehouse (the calculator reads its facts);
        answerers are kept per config and corpus state, so the fact layer is loaded once per corpus and
        a filing added later in the same session is seen."""
        from finrag_pipeline.core.evaluation.runner import default_answerer_factory

        key = (cfg.name, self.corpus_state().corpus_state)
        if key not in self._answerers:
            with self.configured():
                self._answerers[key] = default_answerer_factory(cfg, warehouse=self.warehouse)
        return self._answerers[key]

    @cached_property
    def _answerers(self) -> dict[tuple[str, str], Any]:
        return {}

    def _replace_runs(self, run_rows: list[dict], result_table: str, result_rows: list[dict]) -> None:
        """Rows are keyed by run_id (config x filing x scope x corpus state): a re-run replaces its own rows,
        and earlier corpus states stay as history (the corpus-growth and regression marts read them)."""
        run_ids = sorted({r["run_id"] for r in run_rows})
        writer = self.result_writer or self.warehouse
        writer.replace_rows(result_table, result_rows, where={"run_id": run_ids})
        writer.replace_rows("eval.runs", run_rows, where={"run_id": run_ids})
