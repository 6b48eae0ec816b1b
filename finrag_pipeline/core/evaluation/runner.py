"""The evaluation matrix and the runs: rows for eval.runs, eval.retrieval_results, eval.answer_results.

* :class:`EvalMatrix` is ``assets_config/eval_matrix.yaml`` (retrievers x top-k x chunking x scope;
  answer models x prompt types x temperature x top_p); ``narrow(**overrides)`` for CLI/launchpad.
* :func:`run_retrieval_eval` searches once per question and retriever config at the LARGEST k and
  computes every k from that one ranking (cheap, and the k=3 list is exactly a prefix of k=10).
* :func:`run_answer_eval` retrieves, answers and scores every answer config.
* :func:`aggregate` / :func:`compare_configs` turn result rows into means with bootstrap CIs,
  coverage and paired differences.

Pure core: the Dagster layer (defs/evaluation) writes the rows with ``Warehouse.replace_rows``.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from finrag_pipeline.core.answering import Answerer, AnswerResult
from finrag_pipeline.core.evaluation.answerer_registry import answerer_for_config, takes_decoding
from finrag_pipeline.core.evaluation.cited_evidence import CitedEvidence
from finrag_pipeline.core.evaluation.stats import bootstrap_ci, paired_comparison
from finrag_pipeline.core.models import Hit, QAItem, SearchFilters, stable_id
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.progress import task
from finrag_pipeline.core.scoring import metrics as m
from finrag_pipeline.core.scoring.answer_metrics import (
    ANSWER_METRICS,
    JUDGE_METRICS,
    AnswerKey,
    LLMJudge,
    score_answer,
)
from finrag_pipeline.core.scoring.failure_scoring import FAILED_SCORE, failed_retrieval_scores
from finrag_pipeline.core.scoring.metric_registry import (
    CHANCE_COLUMNS,
    CHANCE_INPUT_COLUMNS,
    CHANCE_METRICS,
    RETRIEVAL_METRIC_SPECS,
    RETRIEVAL_METRICS,
    chance_column,
)
from finrag_pipeline.core.scoring.response_states import FAILURE_STATES

Scope = Literal["filing", "corpus"]
EVAL_MATRIX_FILE = "eval_matrix.yaml"

# Metric names and order (RETRIEVAL_METRICS, ANSWER_METRICS) come from core/scoring/metric_registry.py.
RETRIEVAL_COLUMNS = (
    "run_id", "filing_id", "scope", "config_name", "retriever", "k", "chunking", "config_hash", "qa_id",
    "question_type", "n_retrieved", "first_relevant_rank_chunk", "first_relevant_rank_page",
    *RETRIEVAL_METRICS, "latency_ms", "status", "error", "notes", "corpus_state", "n_filings_in_corpus",
    "evaluated_at", "resolution", "resolution_correct", "resolved_filings",
    *(c for c, _ in CHANCE_INPUT_COLUMNS), *CHANCE_COLUMNS,
    # outside systems only (core/evaluation/system_eval.py); NULL for the built-in retrievers
    "system_kind", "system_state", "n_contexts", "n_contexts_unmapped", "mapping_confidence")
RUN_COLUMNS = ("run_id", "kind", "config_name", "config_hash", "config", "filing_id", "scope", "code_version",
               "corpus_state", "n_filings_in_corpus", "n_questions", "status", "message", "dagster_run_id",
               "started_at", "finished_at")
ANSWER_COLUMNS = (
    "run_id", "filing_id", "config_name", "config_hash", "model", "prompt_type", "temperature", "top_p",
    "retriever", "k", "qa_id", "question_type", "answer", "citations", "answerable", "is_sanity", "response_state",
    *ANSWER_METRICS,
    "judge_reasons", "notes", "prompt_tokens", "completion_tokens", "latency_ms", "cost_usd", "error",
    "evaluated_at", "system_kind")


# ---------------------------------------------------------------------------------------------
# Configuration


def _as_list(v: Any) -> Any:
    return v if isinstance(v, list | tuple) or v is None else [v]


class RetrievalMatrix(BaseModel):
    model_config = ConfigDict(extra="forbid")
    retrievers: list[str] = Field(min_length=1)           # names in retrievers.yaml
    top_k: list[int] = Field(default_factory=lambda: [3, 5, 10])
    chunking: list[str | None] = Field(default_factory=lambda: [None])  # None = the default chunking
    scopes: list[Scope] = Field(default_factory=lambda: ["filing", "corpus"])

    _lists = field_validator("retrievers", "top_k", "chunking", "scopes", mode="before")(_as_list)

    @field_validator("top_k")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(k <= 0 for k in v):
            raise ValueError("top_k needs positive integers")
        return sorted(set(v))


# Lazy systems run beside the real answerers in every answer evaluation (core/evaluation/sanity_answerers.py).
SANITY_ANSWERERS = ("sanity_echo", "sanity_all_figures", "sanity_first_figure", "sanity_abstain")


class AnswerMatrix(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # registered answerer names (answerer_registry: "calculator", "extractive", ...) or LLM names in models.yaml
    models: list[str] = Field(default_factory=lambda: ["calculator", "extractive"])
    sanity_answerers: list[str] = Field(default_factory=lambda: list(SANITY_ANSWERERS))
    prompt_types: list[str] = Field(default_factory=lambda: ["standard"])
    temperatures: list[float] = Field(default_factory=lambda: [0.0])
    top_p: list[float] = Field(default_factory=lambda: [1.0])
    retriever: str = "bm25"
    k: int = 5
    scope: Scope = "filing"
    judge_model: str | None = None
    max_questions: int | None = None

    _lists = field_validator("models", "prompt_types", "temperatures", "top_p", mode="before")(_as_list)

    @field_validator("sanity_answerers")
    @classmethod
    def _every_sanity_check(cls, v: list[str]) -> list[str]:
        # A score is only trusted next to the lazy baselines: they cannot be switched off, only added to.
        missing = [name for name in SANITY_ANSWERERS if name not in v]
        if missing:
            raise ValueError(f"sanity_answerers must include {list(SANITY_ANSWERERS)}; missing {missing}")
        return v


class StatsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n_boot: int = 2000
    n_perm: int = 10000
    confidence: float = 0.95
    seed: int = 0


class AgreementConfig(BaseModel):
    """External agreement (core/evaluation/agreement.py): the metric and k both leaderboards rank by."""

    model_config = ConfigDict(extra="forbid")
    metric: str = "all_evidence_hit"
    at_k: int = Field(5, gt=0)     # not "k": narrow(k=...) means the answer matrix's k

    @field_validator("metric")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in RETRIEVAL_METRICS:
            raise ValueError(f"agreement.metric {v!r} is not a retrieval metric ({', '.join(RETRIEVAL_METRICS)})")
        return v


class RetrievalConfig(BaseModel):
    """One retrieval configuration (scope is a separate column: the same config runs in both)."""

    retriever: str
    k: int
    chunking: str | None = None
    spec: dict[str, Any] = Field(default_factory=dict)  # the retriever's definition, for the hash

    @property
    def name(self) -> str:
        return f"{self.retriever}@{self.k}" + (f"[{self.chunking}]" if self.chunking else "")

    @property
    def config_hash(self) -> str:
        return config_hash(self.model_dump())



class AnswerConfig(BaseModel):
    model: str
    prompt_type: str
    temperature: float
    top_p: float
    retriever: str
    k: int
    retriever_spec: dict[str, Any] = Field(default_factory=dict)  # the answers' retriever definition, for the hash

    @property
    def is_sanity(self) -> bool:
        return self.model.startswith("sanity_")

    @property
    def name(self) -> str:
        if not takes_decoding(self.model):
            return f"{self.model}@{self.retriever}@{self.k}"
        return f"{self.model}/{self.prompt_type}/t{self.temperature:g}/p{self.top_p:g}@{self.retriever}@{self.k}"

    @property
    def config_hash(self) -> str:
        return config_hash(self.model_dump())


class EvalMatrix(BaseModel):
    """``assets_config/eval_matrix.yaml``."""

    model_config = ConfigDict(extra="forbid")
    retrieval: RetrievalMatrix
    answers: AnswerMatrix = Field(default_factory=AnswerMatrix)
    stats: StatsConfig = Field(default_factory=StatsConfig)
    agreement: AgreementConfig = Field(default_factory=AgreementConfig)

    @classmethod
    def load(cls, overrides: Mapping[str, Any] | None = None, directory: str | os.PathLike | None = None
             ) -> EvalMatrix:
        from finrag_pipeline.core.config import load_model

        return load_model(cls, EVAL_MATRIX_FILE, overrides, directory)

    def narrow(self, **overrides: Any) -> EvalMatrix:
        """A copy with fields replaced: ``narrow(retrievers=["bm25"], top_k=5, scopes="filing")``.

        Keys are field names of any section (``retrievers``, ``top_k``, ``chunking``, ``scopes``,
        ``models``, ``prompt_types``, ``temperatures``, ``top_p``, ``judge_model``, ``n_boot`` ...) or
        ``section__field``; a scalar given for a list field becomes a one-item list. None is ignored,
        so CLI options that were not given can be passed straight through.
        """
        data = self.model_dump()
        sections = {"retrieval": RetrievalMatrix, "answers": AnswerMatrix, "stats": StatsConfig,
                    "agreement": AgreementConfig}
        for key, value in overrides.items():
            if value is None:
                continue
            if "__" in key:
                section, name = key.split("__", 1)
            else:
                owners = [s for s, model in sections.items() if key in model.model_fields]
                if len(owners) != 1:
                    raise ValueError(f"unknown or ambiguous eval matrix field {key!r}")
                section, name = owners[0], key
            if section not in sections or name not in sections[section].model_fields:
                raise ValueError(f"unknown eval matrix field {key!r}")
            data[section][name] = value
        return EvalMatrix.model_validate(data)

    def retrieval_configs(self, specs: Mapping[str, Any] | None = None) -> list[RetrievalConfig]:
        r = self.retrieval
        return [RetrievalConfig(retriever=name, k=k, chunking=ch, spec=_spec_dict((specs or {}).get(name)))
                for name, ch, k in itertools.product(r.retrievers, r.chunking, r.top_k)]

    def answer_configs(self, specs: Mapping[str, Any] | None = None) -> list[AnswerConfig]:
        """Every answer configuration; ``specs`` (name -> retriever definition, with the session's overrides)
        puts the answers' retriever definition into each config hash, as retrieval_configs does."""
        a = self.answers
        retriever_spec = _spec_dict((specs or {}).get(a.retriever))
        out: dict[str, AnswerConfig] = {}
        models = list(dict.fromkeys([*a.models, *a.sanity_answerers]))
        for model, pt, t, p in itertools.product(models, a.prompt_types, a.temperatures, a.top_p):
            if not takes_decoding(model):  # no prompt and no decoding: one config, not one per combination
                pt, t, p = model, 0.0, 1.0
            cfg = AnswerConfig(model=model, prompt_type=pt, temperature=t, top_p=p, retriever=a.retriever, k=a.k,
                               retriever_spec=retriever_spec)
            out.setdefault(cfg.name, cfg)
        return list(out.values())


def _spec_dict(spec: Any) -> dict[str, Any]:
    if spec is None:
        return {}
    if hasattr(spec, "model_dump"):
        return spec.model_dump(mode="json")
    return json.loads(json.dumps(spec, default=str))


def config_hash(config: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON (sorted keys, no whitespace) of a configuration."""
    blob = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``git describe --always --dirty`` of the repo, else the installed package version."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return f"git:{out.stdout.strip()}"
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        from importlib.metadata import version

        return f"pkg:{version('finrag-pipeline')}"
    except Exception:  # noqa: BLE001 - not installed
        return "unknown"


# ---------------------------------------------------------------------------------------------
# Relevance of one QA item


def chunk_groups(item: QAItem) -> list[set[str]] | None:
    """Required groups of chunk ids; None if some group has no chunk id (evidence known by page only)."""
    groups = [{p.chunk_id for p in g if p.chunk_id} for g in item.evidence if g]
    return None if any(not g for g in groups) else groups


def page_groups(item: QAItem) -> list[set[tuple[str, int]]]:
    return [{(p.filing_id, int(p.page)) for p in g} for g in item.evidence if g]


def ordered_hits(hits: Iterable[Hit]) -> list[Hit]:
    """Deterministic ranking: (-score, chunk_id), a chunk counted once (its best-scored hit)."""
    out, seen = [], set()
    for h in sorted(hits, key=lambda h: (-h.score, h.chunk_id)):
        if h.chunk_id not in seen:
            seen.add(h.chunk_id)
            out.append(h)
    return out


def retrieval_metrics_for(hits: Sequence[Hit], item: QAItem, k: int, *, chunk_level: bool = True,
                          top_pages: Sequence[Any] | None = None) -> tuple[dict[str, Any], str, list[str]]:
    """Metric columns of one question at cut-off k from an ordered hit list -> (values, status, notes).
    ``top_pages``: the retriever's page ranking (``RetrievalResult.top_pages``); None = ranked from
    ``hits`` with the default page ranking (core/retrieval/pages.rank_pages)."""
    notes: list[str] = []
    pgroups = page_groups(item)
    if not pgroups:
        return ({c: None for c in (*RETRIEVAL_METRICS, "first_relevant_rank_chunk", "first_relevant_rank_page")},
                "no_relevant", ["question has no evidence (unanswerable): metrics undefined"])
    top = list(hits[:k])
    row: dict[str, Any] = {}
    cgroups = chunk_groups(item) if chunk_level else None
    if cgroups is None:
        notes.append("chunk-level metrics not computable: " + (
            "evidence chunk ids come from another chunking" if not chunk_level
            else "some evidence group has no chunk id"))
        row.update({s.name: None for s in RETRIEVAL_METRIC_SPECS if s.level == "chunk"})
        row["first_relevant_rank_chunk"] = None
    else:
        vals = m.evaluate_ranking([h.chunk_id for h in top], cgroups, k)
        row["first_relevant_rank_chunk"] = vals["first_relevant_rank"]
        row.update({s.name: vals[s.ranking] for s in RETRIEVAL_METRIC_SPECS if s.level == "chunk"})
    pages = m.ranked_pages((h.filing_id, h.pages) for h in top)
    vals = m.evaluate_ranking(pages, pgroups, k)
    row["first_relevant_rank_page"] = vals["first_relevant_rank"]
    # all-evidence hit is registered at page level: chunk ids change with chunking, pages do not
    row.update({s.name: vals[s.ranking] for s in RETRIEVAL_METRIC_SPECS if s.level == "page" and s.source == "hits"})
    if top_pages is None:
        from finrag_pipeline.core.retrieval.page_scores import rank_pages

        top_pages = rank_pages(hits)
    ranked = m.evaluate_ranking([(p.filing_id, int(p.page)) for p in top_pages], pgroups, k)
    row.update({s.name: ranked[s.ranking] for s in RETRIEVAL_METRIC_SPECS if s.source == "top_pages"})
    return row, "ok", notes


# ---------------------------------------------------------------------------------------------
# Retrieval evaluation

RetrieverFactory = Callable[[str, "str | None"], Any]  # (retriever name, chunking) -> object with .search
# (chunking, scope filters) -> the leaves a random draw picks from (core/retrieval/sanity.candidate_pool)
ChancePool = Callable[["str | None", "SearchFilters | None"], Sequence[Any]]


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def scope_filters(scope: str, filing_id: str) -> SearchFilters | None:
    """'filing' searches the filing alone; 'corpus' searches every filing (the others are distractors)."""
    if scope == "filing":
        return SearchFilters(filing_ids=(filing_id,))
    if scope == "corpus":
        return None
    raise ValueError(f"unknown scope {scope!r}")


def run_retrieval_eval(qa_items: Sequence[QAItem], retriever_factory: RetrieverFactory, matrix: EvalMatrix,
                       scope: str | None, filing_id: str, corpus_state: str, *,
                       n_filings_in_corpus: int | None = None, retriever_specs: Mapping[str, Any] | None = None,
                       evidence_chunking: str | None = None, dagster_run_id: str | None = None,
                       version: str | None = None, chance_pool: ChancePool | None = None
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Evaluate every retrieval config of ``matrix`` on one filing's questions.

    ``scope`` None runs every scope of the matrix. Each (retriever, chunking, scope) searches once
    per question at max(top_k); every k is a prefix of that ranking. ``evidence_chunking`` is the
    chunking whose chunk ids the QA evidence uses (None = default): for another chunking variant the
    chunk-level metrics are NULL with a note and the page-level ones carry the comparison.
    Returns (eval.runs rows, eval.retrieval_results rows). run_id is deterministic in
    (config, filing, scope, corpus_state), so a re-run replaces its own rows.
    ``chance_pool`` gives each (chunking, scope) its candidate pool, from which every row records the
    question's chance levels (``<metric>_chance``, :func:`chance_columns`); None leaves them NULL.
    """
    version = version or code_version()
    if retriever_specs is None:
        retriever_specs = _retrievers_yaml_specs()
    scopes = [scope] if scope else list(matrix.retrieval.scopes)
    max_k = max(matrix.retrieval.top_k)
    configs = matrix.retrieval_configs(retriever_specs)
    run_rows: list[dict[str, Any]] = []
    result_rows: list[dict[str, Any]] = []
    by_base: dict[tuple[str, str | None], list[RetrievalConfig]] = {}
    for cfg in configs:
        by_base.setdefault((cfg.retriever, cfg.chunking), []).append(cfg)
    chances = _ChanceCache(chance_pool, matrix.retrieval.top_k)
    work = task(f"evaluate retrieval {filing_id}", len(by_base) * len(scopes) * len(qa_items), "searches")
    for (name, chunking), cfgs in by_base.items():
        chunk_level = chunking == evidence_chunking or chunking is None and evidence_chunking is None
        for sc in scopes:
            filters = scope_filters(sc, filing_id)
            started = _now()
            searched = _search_all(qa_items, retriever_factory, name, chunking, max_k, filters,
                                   on_done=functools.partial(work.advance, 1, f"{name} {sc}"))
            finished = _now()
            for cfg in cfgs:
                run_id = stable_id("retrieval", cfg.config_hash, filing_id, sc, corpus_state)
                counts = {"ok": 0, "no_relevant": 0, "error": 0}
                for item, (hits, latency, error, info, top_pages) in zip(qa_items, searched, strict=True):
                    row = _retrieval_row(item, hits, latency, error, cfg, chunk_level, top_pages)
                    row.update(_resolution_columns(info, filing_id))
                    row.update(chances.columns(item, chunking, sc, filters, cfg.k, chunk_level))
                    counts[row["status"]] += 1
                    row.update(run_id=run_id, filing_id=filing_id, scope=sc, config_name=cfg.name,
                               retriever=cfg.retriever, k=cfg.k, chunking=cfg.chunking,
                               config_hash=cfg.config_hash, qa_id=item.qa_id, question_type=item.question_type,
                               corpus_state=corpus_state, n_filings_in_corpus=n_filings_in_corpus,
                               evaluated_at=finished)
                    result_rows.append({c: row.get(c) for c in RETRIEVAL_COLUMNS})
                n = len(qa_items)
                status = "ok" if not counts["error"] else ("error" if counts["error"] == n else "partial")
                run_rows.append({
                    "run_id": run_id, "kind": "retrieval", "config_name": cfg.name,
                    "config_hash": cfg.config_hash,
                    "config": json.dumps({**cfg.model_dump(), "scope": sc}, sort_keys=True, default=str),
                    "filing_id": filing_id, "scope": sc, "code_version": version, "corpus_state": corpus_state,
                    "n_filings_in_corpus": n_filings_in_corpus, "n_questions": n, "status": status,
                    "message": json.dumps(counts), "dagster_run_id": dagster_run_id,
                    "started_at": started, "finished_at": finished})
    work.close()
    return run_rows, result_rows


class _ChanceCache:
    """Chance levels per (chunking, scope) pool and question, computed once and shared by every
    retriever and k of an evaluation (they do not depend on the retriever)."""

    def __init__(self, chance_pool: ChancePool | None, ks: Sequence[int]):
        self.chance_pool = chance_pool
        self.ks = list(ks)
        self._levels: dict[tuple[str | None, str], Any] = {}
        self._questions: dict[tuple[str | None, str, str, bool], Any] = {}

    def columns(self, item: QAItem, chunking: str | None, scope: str, filters: SearchFilters | None, k: int,
                chunk_level: bool) -> dict[str, Any]:
        """The chance columns of one row: NULL without a pool, for a question without evidence, or where
        the pool could not be read (a missing chunking variant is already an error row of its own)."""
        empty = {**{c: None for c, _ in CHANCE_INPUT_COLUMNS}, **dict.fromkeys(CHANCE_COLUMNS)}
        if self.chance_pool is None or not page_groups(item):
            return empty
        key = (chunking, scope)
        if key not in self._levels:
            from finrag_pipeline.core.retrieval.sanity import ChanceLevels

            try:
                self._levels[key] = ChanceLevels(self.chance_pool(chunking, filters))
            except Exception:  # noqa: BLE001 - the chance level is optional; the metrics must still be written
                self._levels[key] = None
        levels = self._levels[key]
        if levels is None:
            return empty
        qkey = (chunking, scope, item.qa_id, chunk_level)
        if qkey not in self._questions:
            groups = chunk_groups(item) if chunk_level else None
            self._questions[qkey] = levels.for_question(groups, page_groups(item), self.ks)
        q = self._questions[qkey]
        return {"chance_pool_size": q.pool_size, "chance_evidence_chunks": q.evidence_chunks,
                "chance_evidence_page_chunks": q.evidence_page_chunks,
                **{chance_column(m): getattr(q, m)[k] for m in CHANCE_METRICS}}


def _retrievers_yaml_specs() -> dict[str, Any]:
    """Retriever definitions from retrievers.yaml, so editing a retriever changes its config hash.
    Unreadable or missing file -> {} (names alone are hashed; the run still records the names)."""
    try:
        from finrag_pipeline.core.retrieval.config import load_retrievers

        return dict(load_retrievers())
    except Exception:  # noqa: BLE001 - the hash degrades to names, it must not stop an evaluation
        return {}


def _resolution_columns(info: Mapping[str, Any] | None, filing_id: str) -> dict[str, Any]:
    """How the configuration's company/period resolution compares with the question's filing (NULL
    when the configuration resolves nothing): core/retrieval/company_first.resolution_outcome."""
    from finrag_pipeline.core.retrieval.company_first import resolution_outcome

    outcome, correct, filings = resolution_outcome(dict(info) if info else None, filing_id)
    return {"resolution": outcome, "resolution_correct": correct,
            "resolved_filings": ",".join(filings) if filings is not None else None}


def _search_all(qa_items: Sequence[QAItem], factory: RetrieverFactory, name: str, chunking: str | None,
                k: int, filters: SearchFilters | None, on_done: Callable[[], None] | None = None
                ) -> list[tuple[list[Hit], float | None, str | None, dict[str, Any] | None, list | None]]:
    """(hits, latency ms, error, the retriever's info, its page ranking or None) per question;
    ``on_done()`` after each question (progress)."""
    try:
        retriever = factory(name, chunking)
    except Exception as exc:  # noqa: BLE001 - a broken config is recorded, not fatal for the others
        err = f"building retriever {name!r}: {type(exc).__name__}: {exc}"[:1000]
        for _ in qa_items if on_done else ():
            on_done()
        return [([], None, err, None, None)] * len(qa_items)
    out = []
    for item in qa_items:
        if on_done and out:
            on_done()
        t0 = time.perf_counter()
        try:
            if hasattr(retriever, "retrieve"):
                # total includes work shared with other retrievers of the session at its measured cost
                result = retriever.retrieve(item.question, k, filters)
                hits, latency, info = ordered_hits(result.hits), result.timings_ms.get("total"), result.info
                top_pages = getattr(result, "top_pages", None)
            else:  # anything with the plain search(query, k, filters) contract
                hits = ordered_hits(retriever.search(item.question, k, filters))
                latency, info, top_pages = (time.perf_counter() - t0) * 1000.0, None, None
            out.append((hits, latency, None, info, top_pages))
        except Exception as exc:  # noqa: BLE001 - one failing query must not hide the others
            out.append(([], (time.perf_counter() - t0) * 1000.0, f"{type(exc).__name__}: {exc}"[:1000], None,
                        None))
    if on_done and out:
        on_done()
    return out


def _retrieval_row(item: QAItem, hits: list[Hit], latency: float | None, error: str | None,
                   cfg: RetrievalConfig, chunk_level: bool, top_pages: Sequence[Any] | None = None) -> dict[str, Any]:
    if error is not None:
        # A failed search delivered nothing: it scores 0 (stored, so even a naive AVG counts it).
        row: dict[str, Any] = failed_retrieval_scores()   # the rule of failure_scoring.py
        row.update(first_relevant_rank_chunk=None, first_relevant_rank_page=None, n_retrieved=0,
                   latency_ms=latency, status="error", error=error, notes=None)
        return row
    values, status, notes = retrieval_metrics_for(hits, item, cfg.k, chunk_level=chunk_level, top_pages=top_pages)
    return {**values, "n_retrieved": min(len(hits), cfg.k), "latency_ms": latency, "status": status,
            "error": None, "notes": "; ".join(notes) or None}


# ---------------------------------------------------------------------------------------------
# Answer evaluation

AnswererFactory = Callable[[AnswerConfig], Answerer]


def default_answerer_factory(cfg: AnswerConfig, **context: Any) -> Answerer:
    """A registered answerer name (answerer_registry: 'calculator', 'extractive', ...) builds that answerer;
    any other model name is an LLMAnswerer over models.yaml, or, with an analyst prompt type, a model handed
    the calculator's tools. ``context`` (e.g. ``warehouse=``) goes to the answerers that accept it."""
    if cfg.prompt_type in ANALYST_PROMPT_TYPES and takes_decoding(cfg.model):
        # the calculator's lookups + arithmetic handed to the model (core/analyst/llm_answerers.py)
        from finrag_pipeline.core.analyst import llm_answerers
        from finrag_pipeline.core.evaluation.analyst_answerers import calculator_answerer
        from finrag_pipeline.core.llm.client import LLMClient
        from finrag_pipeline.core.llm.registry import load_model_registry

        calculator = calculator_answerer(warehouse=context.get("warehouse"))
        if cfg.prompt_type == "analyst_tools":
            spec = load_model_registry().get(cfg.model)
            params = {**spec.params, "temperature": cfg.temperature, "top_p": cfg.top_p}
            return llm_answerers.ToolCallingAnswerer(spec.provider, calculator, name=cfg.name, timeout=spec.timeout_s,
                                                     **params)
        return llm_answerers.StructuredPromptAnswerer(LLMClient.from_registry(cfg.model), calculator, name=cfg.name)
    return answerer_for_config(cfg, **context)


# prompt types that give a model the calculator's tools: function calling, or a fact sheet in the prompt
ANALYST_PROMPT_TYPES = ("analyst_tools", "analyst_structured")



def build_judge(matrix: EvalMatrix) -> LLMJudge | None:
    if not matrix.answers.judge_model:
        return None
    from finrag_pipeline.core.llm.client import LLMClient

    return LLMJudge(LLMClient.from_registry(matrix.answers.judge_model))


def cited_texts(result: AnswerResult, hits: Sequence[Hit], evidence: CitedEvidence | None = None) -> list[str]:
    """Texts of the evidence an answer cites: the cited chunk, else every hit covering the page. With
    ``evidence`` (the warehouse), also what retrieval did not return: any chunk, an XBRL fact, a page
    (core/evaluation/cited_evidence.py)."""
    if evidence is not None:
        return evidence.texts(result.citations, hits)
    texts: list[str] = []
    by_id = {h.chunk_id: h for h in hits}
    for filing, page, chunk_id in result.citations:
        if chunk_id and chunk_id in by_id:
            chosen = [by_id[chunk_id]]
        else:
            chosen = [h for h in hits if h.filing_id == filing and h.page_start <= page <= h.page_end]
        texts += [h.text for h in chosen if h.text not in texts]
    return texts


def run_answer_eval(qa_items: Sequence[QAItem], retriever_factory: RetrieverFactory, matrix: EvalMatrix,
                    filing_id: str, corpus_state: str, *,
                    answerer_factory: AnswererFactory = default_answerer_factory,
                    judge: LLMJudge | None = None, n_filings_in_corpus: int | None = None,
                    dagster_run_id: str | None = None, version: str | None = None,
                    retriever_specs: Mapping[str, Any] | None = None,
                    evidence: CitedEvidence | None = None
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Answer and score every answer config of ``matrix`` -> (eval.runs rows, eval.answer_results rows).

    Retrieval (``answers.retriever`` at ``answers.k`` in ``answers.scope``) runs once per question
    and is shared by every answer config, so configs differ only in the answerer. A retrieval
    failure becomes a ``backend_error`` answer (scored 0), never a skipped question. ``evidence``
    resolves citations beyond the retrieved hits (table rows, XBRL facts, pages) for grounding.
    ``retriever_specs`` as in :func:`run_retrieval_eval` (default: retrievers.yaml as written).
    """
    version = version or code_version()
    if retriever_specs is None:
        retriever_specs = _retrievers_yaml_specs()
    a = matrix.answers
    items = list(qa_items)[: a.max_questions] if a.max_questions else list(qa_items)
    searched = _search_all(items, retriever_factory, a.retriever, None, a.k, scope_filters(a.scope, filing_id))
    run_rows, rows = [], []
    configs = matrix.answer_configs(retriever_specs)
    work = task(f"evaluate answers {filing_id}", len(configs) * len(items), "answers")
    for cfg in configs:
        started = _now()
        run_id = stable_id("answers", cfg.config_hash, filing_id, a.scope, corpus_state,
                           judge.name if judge else "")
        try:
            answerer: Answerer | None = answerer_factory(cfg)
            build_error = None
        except Exception as exc:  # noqa: BLE001
            answerer, build_error = None, f"building answerer: {type(exc).__name__}: {exc}"[:1000]
        states: dict[str, int] = {}
        for item, (hits, _lat, search_error, _info, _pages) in zip(items, searched, strict=True):
            error = build_error or (f"retrieval: {search_error}" if search_error else None)
            if error or answerer is None:
                result = AnswerResult("", [], "backend_error", error=error)
            else:
                try:
                    result = answerer.answer(item.question, hits[: a.k], periods=item.periods)
                except Exception as exc:  # noqa: BLE001 - an answerer bug is a failure, scored 0
                    result = AnswerResult("", [], "backend_error", error=f"{type(exc).__name__}: {exc}"[:1000])
            row = _answer_row(item, result, hits, judge, evidence)
            states[result.response_state] = states.get(result.response_state, 0) + 1
            row.update(run_id=run_id, filing_id=filing_id, config_name=cfg.name, config_hash=cfg.config_hash,
                       model=cfg.model, prompt_type=cfg.prompt_type, temperature=cfg.temperature,
                       top_p=cfg.top_p, retriever=cfg.retriever, k=cfg.k, qa_id=item.qa_id,
                       question_type=item.question_type, answerable=bool(page_groups(item)),
                       is_sanity=cfg.is_sanity, evaluated_at=_now())
            rows.append({c: row.get(c) for c in ANSWER_COLUMNS})
            work.advance(1, cfg.name)
        failures = sum(v for s, v in states.items() if s in FAILURE_STATES)
        run_rows.append({
            "run_id": run_id, "kind": "answers", "config_name": cfg.name, "config_hash": cfg.config_hash,
            "config": json.dumps({**cfg.model_dump(), "scope": a.scope,
                                  "judge": judge.name if judge else None}, sort_keys=True),
            "filing_id": filing_id, "scope": a.scope, "code_version": version, "corpus_state": corpus_state,
            "n_filings_in_corpus": n_filings_in_corpus, "n_questions": len(items),
            "status": "ok" if not failures else ("error" if failures == len(items) else "partial"),
            "message": json.dumps(states, sort_keys=True), "dagster_run_id": dagster_run_id,
            "started_at": started, "finished_at": _now()})
    work.close()
    return run_rows, rows


def answer_key(item: QAItem) -> AnswerKey:
    """What an answer to ``item`` is scored against (its answer contract and evidence)."""
    from finrag_pipeline.core.scoring.answer_contract import contract_options, ensure_contract

    item = ensure_contract(item)
    return AnswerKey(question=item.question, answer_values=item.answer_values, answer_choice=item.answer_choice,
                     choice_options=contract_options(item), inputs=item.answer_figures,
                     asked_periods=item.periods, gold_page_groups=page_groups(item),
                     gold_block_groups=chunk_groups(item),
                     required_terms=list(item.metadata.get("required_terms") or []),
                     key_facts=list(item.metadata.get("key_facts") or []),
                     contract_note=str(item.metadata.get("contract_note") or ""))


def _answer_row(item: QAItem, result: AnswerResult, hits: Sequence[Hit], judge: LLMJudge | None,
                evidence: CitedEvidence | None = None) -> dict:
    metrics_, notes = score_answer(
        answer=result.text, response_state=result.response_state, citations=result.citations,
        cited_texts=cited_texts(result, hits, evidence), key=answer_key(item),
        judge=judge)
    judge_reasons = {k: notes.pop(k) for k in JUDGE_METRICS
                     if judge is not None and result.response_state == "answered"}
    return {
        **metrics_, "answer": result.text,
        "citations": json.dumps([list(c) for c in result.citations]),
        "response_state": result.response_state,
        "judge_reasons": json.dumps(judge_reasons, default=str) if judge_reasons else None,
        "notes": json.dumps(notes, default=str), "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens, "latency_ms": result.latency_ms,
        "cost_usd": result.cost_usd, "error": result.error,
    }


# ---------------------------------------------------------------------------------------------
# Aggregation and comparison


def _metric_columns(df: pd.DataFrame) -> list[str]:
    known = (*RETRIEVAL_METRICS, *ANSWER_METRICS, "latency_ms", "cost_usd")
    return [c for c in known if c in df.columns]


# A question is the same question in two configurations when these match (paired comparisons).
PAIR_ON = ("filing_id", "scope", "qa_id")


def scored_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Rows that enter a mean: 'no_relevant' rows are excluded (they are counted apart)."""
    return df[df["status"] != "no_relevant"] if "status" in df.columns else df


def metric_values(scored: pd.DataFrame, metric: str) -> np.ndarray:
    """``metric`` over :func:`scored_rows` as float64: NaN where not computable, and 0 on 'error' rows
    for retrieval metrics (a failed search scores nothing, it is not missing)."""
    values = pd.to_numeric(scored[metric], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if metric in RETRIEVAL_METRICS and "status" in scored.columns:
        failed = scored["status"].eq("error").to_numpy(dtype=bool, na_value=False)
        values = np.where(failed & np.isnan(values), FAILED_SCORE, values)
    return values


def aggregate(results: pd.DataFrame, by: Sequence[str] = ("config_name",), *,
              metrics: Sequence[str] | None = None, n_boot: int = 2000, confidence: float = 0.95,
              seed: int = 0) -> pd.DataFrame:
    """Long table: one row per group x metric with mean, bootstrap CI, n and coverage.

    Columns: ``*by, metric, mean, ci_low, ci_high, n_rows, n_no_relevant, n_error, n_total, n_scored,
    coverage``. ``n_total`` = rows that should have a value (all but no_relevant); ``n_scored`` =
    rows that have one; failures are in both (as 0), so they lower the mean; NULLs (not computable)
    are only in ``n_total`` and show as coverage < 1.
    """
    by = list(by)
    metrics = list(metrics or _metric_columns(results))
    out = []
    if results.empty:
        return pd.DataFrame(columns=[*by, "metric", "mean", "ci_low", "ci_high", "n_rows", "n_no_relevant",
                                     "n_error", "n_total", "n_scored", "coverage"])
    for key, group in results.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        n_rows = len(group)
        n_nr = int((group["status"] == "no_relevant").sum()) if "status" in group else 0
        n_err = int((group["status"] == "error").sum()) if "status" in group else int(
            group.get("response_state", pd.Series(dtype=str)).isin(FAILURE_STATES).sum())
        scored = scored_rows(group)
        for metric in metrics:
            vals = metric_values(scored, metric)
            ci = bootstrap_ci(vals, n_boot=n_boot, confidence=confidence, seed=seed)
            out.append({**dict(zip(by, key, strict=True)), "metric": metric, "mean": ci.mean,
                        "ci_low": ci.ci_low, "ci_high": ci.ci_high, "n_rows": n_rows, "n_no_relevant": n_nr,
                        "n_error": n_err, "n_total": ci.n_total, "n_scored": ci.n_scored,
                        "coverage": ci.coverage})
    return pd.DataFrame(out)


def compare_configs(results: pd.DataFrame, metric: str, config_a: str, config_b: str, *,
                    config_col: str = "config_name", pair_on: Sequence[str] = PAIR_ON,
                    n_boot: int = 2000, n_perm: int = 10000, seed: int = 0) -> dict[str, Any]:
    """Paired comparison of config B against A on the questions both ran (B - A)."""
    pair_on = [c for c in pair_on if c in results.columns]
    a = scored_rows(results[results[config_col] == config_a])
    b = scored_rows(results[results[config_col] == config_b])
    return {"metric": metric, "config_a": config_a, "config_b": config_b,
            **compare_scored(a, b, metric, pair_on, n_boot=n_boot, n_perm=n_perm, seed=seed)}


def compare_scored(a: pd.DataFrame, b: pd.DataFrame, metric: str, pair_on: Sequence[str], *,
                   n_boot: int = 2000, n_perm: int = 10000, seed: int = 0) -> dict[str, Any]:
    """:func:`compare_configs` on two configs' :func:`scored_rows`: callers comparing many configs
    against one best split and score each config once."""
    # An inner join on pair_on in the left frame's order (what DataFrame.merge gives), in plain Python:
    # a few hundred rows, and a pandas merge per comparison was most of the statistics asset's time.
    right: dict[tuple, list[float]] = defaultdict(list)
    for key, value in _keyed_values(b, pair_on, metric):
        right[key].append(value)
    pairs = [(value, other) for key, value in _keyed_values(a, pair_on, metric) for other in right.get(key, ())]
    res = paired_comparison([p[0] for p in pairs], [p[1] for p in pairs], n_boot=n_boot, n_perm=n_perm, seed=seed)
    return res.as_dict()


def _keyed_values(scored: pd.DataFrame, pair_on: Sequence[str], metric: str) -> list[tuple[tuple, float]]:
    keys = zip(*(scored[c].tolist() for c in pair_on), strict=True)
    return list(zip(keys, metric_values(scored, metric).tolist(), strict=True))
