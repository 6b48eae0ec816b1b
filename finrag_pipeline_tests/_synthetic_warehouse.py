"""A small warehouse with hand-checkable evaluation rows, for the dbt marts and the report tests.

Numbers the tests assert (failed questions count as 0, 'no_relevant' ones are left out):
  * dense-k5 / filing / AAPL: hit_chunk [1, 0, 1, error, no_relevant] -> mean 0.5, coverage 0.75,
    mrr_chunk [1, 0, 0.5, error, -] -> 0.375, latency [10, 20, 30] -> p50 20, p95 29.
    Chance levels (CHANCE_B1, pool of 20 leaves): hit_chunk and hit_page [0.1, 0.2, 0.3, 0.4 (the failed
    question keeps its chance)] -> 0.25, band 3 * sqrt(0.09 + 0.16 + 0.21 + 0.24) / 4; all_evidence_hit
    [0.1, 0.2, 0.3, not computable] -> n/a ("1 of 4 ... no computable chance level"). Every other
    configuration was "evaluated before chance levels were recorded" (NULL pool size).
  * bm25-k5-w256 (a chunking variant): chunk-level metrics NULL (not computable), hit_page
    [1, 1, 0, 1] -> 0.75, chunk_metrics_coverage 0.
  * bm25-k5 / filing / AAPL: run A1 hits [1, 1, 1, 1], then run A2 hits [1, 0, 1, error] (0.5): a
    regression outside A1's Wilson interval [0.51, 1]. MSFT run A3 hits [1, 1] -> leaderboard
    mean over AAPL A2 + MSFT A3 = 4/6.
  * bm25-k5 / corpus: AAPL at 1 filing [1, 1, 1, 1]; at 2 filings AAPL [1, 1, 0, 0] + MSFT [1, 0]
    -> corpus growth 1.0 then 0.5.
  * company resolution, bm25-k5 / corpus (newest runs A5 + A6): exact, covers, wrong, unresolved, exact,
    exact -> accuracy 4/6, exact rate 3/6; no other configuration resolves, so it is the mart's only row.
    Corpus-vs-filing cost of bm25-k5: filing A2 + A3 all-evidence [1, 0, 1, error, 1, 1] = 4/6, corpus
    A5 + A6 [1, 1, 0, 0, 1, 0] = 3/6 over the same 6 questions -> cost -1/6.
  * answers qwen-0.5b / cite / 0.0: states answered, answered, abstained (unanswerable q5),
    backend_error; correctness [1, 0, NULL, error] -> 1/3 with coverage 0.75; state_correct
    [1, 1, 1, 0] -> 0.75; non_committal [0, 1, NULL, NULL (a failure is not a rate)] -> 0.5;
    abstention_correct on the unanswerable q5 [1] -> 1.0; block_citation_precision [1, 0.5, -, error]
    -> 0.5. qwen-1.5b: correctness [1, 1] -> 1.0. sanity_echo (is_sanity): correctness [0, 0] -> 0.
  * paired comparisons, scope filing, k=10, MSFT questions z01..z20: bm25-k10 and hybrid-k10 have
    IDENTICAL rows (ndcg/mrr 1.0 on every question) -> tie, best = bm25-k10 (smaller name):
    hybrid-k10 vs best: delta 0, p = 1, not distinguishable; dense-k10 scores [0.5, 0.25] * 10,
    strictly worse on every one of the 20 questions -> delta -0.625, the paired CI is far below 0,
    distinguishable, p = 1 / (1 + n_perm) (no sign flip reaches |mean|).
  * ``with_statistics=True`` also writes eval.leaderboard / eval.comparisons with the pipeline's own
    core function (core/evaluation/leaderboard.build_eval_statistics, STATS below), and
    eval.external_agreement(_configs) from the small hand-computed case of AGREEMENT_CASE (its rows
    are not written to eval.retrieval_results, so no other mart changes).
  * phrasing leakage (qa.items metadata): q1 high, q2 low, q3 medium, q4 high, q5 and MSFT none ->
    dense-k5 / filing by band: high [1, error] = 0.5, low [0], medium [1], n/a only q5 (no_relevant).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

import pandas as pd

from finrag_pipeline.core.evaluation.agreement import compute_external_agreement
from finrag_pipeline.core.evaluation.leaderboard import build_eval_statistics
from finrag_pipeline.core.evaluation.runner import AgreementConfig, StatsConfig
from finrag_pipeline.core.paths import REPO_ROOT
from finrag_pipeline.core.warehouse import Warehouse

DBT_PROJECT_DIR = REPO_ROOT / "dbt_metrics"
T0 = dt.datetime(2026, 1, 1, 3, 0)
T1 = dt.datetime(2026, 2, 1, 3, 0)

FILINGS = [
    dict(filing_id="AAPL-2022-10K", content_sha256="a" * 64, company="Apple Inc.", ticker="AAPL",
         cik="0000320193", form_type="10-K", fiscal_year=2022, source_format="html", n_pages=80),
    dict(filing_id="MSFT-2022-10K", content_sha256="b" * 64, company="Microsoft Corporation",
         ticker="MSFT", cik="0000789019", form_type="10-K", fiscal_year=2022, source_format="pdf",
         n_pages=120),
]

QA = [
    ("AAPL-2022-10K", "q1", "What were Apple's total net sales in FY2022?", "numerical"),
    ("AAPL-2022-10K", "q2", "Where is Apple headquartered?", "factual"),
    ("AAPL-2022-10K", "q3", "What was Apple's gross margin in FY2022?", "numerical"),
    ("AAPL-2022-10K", "q4", "Did services revenue grow faster than products?", "comparative"),
    ("AAPL-2022-10K", "q5", "What was Apple's revenue from its Mars segment?", "unanswerable"),
    ("MSFT-2022-10K", "m1", "What was Microsoft's revenue in FY2022?", "numerical"),
    ("MSFT-2022-10K", "m2", "How many employees did Microsoft have?", "factual"),
]
CMP_Q = [f"z{i:02d}" for i in range(1, 21)]
QA += [("MSFT-2022-10K", qa_id, f"Synthetic comparison question {qa_id}?", "numerical") for qa_id in CMP_Q]
QTYPE = {qa_id: qt for _, qa_id, _, qt in QA}
STATS = StatsConfig(n_boot=1000, n_perm=2000, seed=0)

ERR = "error"       # a failed question in the hit lists below
NR = "no_relevant"  # a question without relevant evidence (metrics NULL, left out of means)


CHANCE_B1 = [0.1, 0.2, 0.3, 0.4, None]   # per question of run B1 (q5: no relevant evidence)


def _retrieval_rows(run_id, config, retriever, filing_id, scope, qa_ids, hits, mrrs=None,
                    latencies=None, n_filings=1, at=T1, k=5, chunking="window-512", chunk_level=True,
                    resolutions=None, chances=None):
    rows = []
    correct = {"exact": 1.0, "covers": 1.0, "wrong": 0.0, "unresolved": 0.0}
    for i, (qa_id, hit) in enumerate(zip(qa_ids, hits, strict=True)):
        status = hit if hit in (ERR, NR) else "ok"
        ok = status == "ok"
        hit = hit if ok else None
        mrr = (mrrs[i] if mrrs else hit) if ok else None
        page = dict(hit_page=hit, mrr_page=mrr, precision_page=(hit / k if ok else None), recall_page=hit,
                    ap_page=mrr, ndcg_page=mrr, all_evidence_hit=hit)
        chunk = dict(hit_chunk=hit, mrr_chunk=mrr, precision_chunk=(hit / k if ok else None),
                     recall_chunk=hit, ap_chunk=mrr, ndcg_chunk=mrr)
        if not chunk_level:  # evidence chunk ids belong to another chunking: not computable
            chunk = dict.fromkeys(chunk)
        if status == ERR:    # as the evaluation engine stores failures: every metric 0
            chunk, page = dict.fromkeys(chunk, 0.0), dict.fromkeys(page, 0.0)
        rows.append(dict(
            run_id=run_id, filing_id=filing_id, scope=scope, config_name=config, retriever=retriever,
            k=k, chunking=chunking, config_hash=f"h-{config}", qa_id=qa_id,
            question_type=QTYPE[qa_id], n_retrieved=k if ok else 0, **chunk, **page,
            latency_ms=(latencies[i] if latencies and latencies[i] is not None else 15.0),
            status=status, error="TimeoutError: retriever" if status == ERR else None,
            corpus_state=f"corpus-{n_filings}", n_filings_in_corpus=n_filings, evaluated_at=at,
            resolution=resolutions[i] if resolutions else None,
            resolution_correct=correct[resolutions[i]] if resolutions else None,
            **_chance_columns(chances[i] if chances else None),
        ))
    return rows


def _chance_columns(p):
    """Chance columns as the runner records them; None = not recorded (an older row)."""
    if p is None:
        return {}
    return dict(chance_pool_size=20, chance_evidence_chunks=2, chance_evidence_page_chunks=4,
                hit_chunk_chance=p, hit_page_chance=p, all_evidence_hit_chance=p if p < 0.4 else None)


def _run(run_id, config, filing_id, scope, n_questions, n_filings, at):
    return dict(run_id=run_id, kind="retrieval", config_name=config, config_hash=f"h-{config}",
                filing_id=filing_id, scope=scope, code_version="test", corpus_state=f"corpus-{n_filings}",
                n_filings_in_corpus=n_filings, n_questions=n_questions, status="ok",
                started_at=at - dt.timedelta(minutes=5), finished_at=at)


AAPL_Q = ["q1", "q2", "q3", "q4"]
MSFT_Q = ["m1", "m2"]


def retrieval_rows() -> tuple[list[dict], list[dict]]:
    """(eval.retrieval_results rows, eval.runs rows)."""
    a = "AAPL-2022-10K"
    m = "MSFT-2022-10K"
    results, runs = [], []

    def add(run_id, config, retriever, filing_id, scope, qa_ids, hits, n_filings, at, **kw):
        results.extend(_retrieval_rows(run_id, config, retriever, filing_id, scope, qa_ids, hits,
                                       n_filings=n_filings, at=at, **kw))
        runs.append(_run(run_id, config, filing_id, scope, len(qa_ids), n_filings, at))

    add("B1", "dense-k5", "dense", a, "filing", [*AAPL_Q, "q5"], [1, 0, 1, ERR, NR], 2, T1,
        mrrs=[1, 0, 0.5, None, None], latencies=[10.0, 20.0, 30.0, 500.0, 12.0], chances=CHANCE_B1)
    add("C1", "bm25-k5-w256", "bm25", a, "filing", AAPL_Q, [1, 1, 0, 1], 2, T1,
        chunking="window-256", chunk_level=False)
    add("A1", "bm25-k5", "bm25", a, "filing", AAPL_Q, [1, 1, 1, 1], 1, T0)
    add("A2", "bm25-k5", "bm25", a, "filing", AAPL_Q, [1, 0, 1, ERR], 2, T1)
    add("A3", "bm25-k5", "bm25", m, "filing", MSFT_Q, [1, 1], 2, T1)
    add("A4", "bm25-k5", "bm25", a, "corpus", AAPL_Q, [1, 1, 1, 1], 1, T0)
    add("A5", "bm25-k5", "bm25", a, "corpus", AAPL_Q, [1, 1, 0, 0], 2, T1,
        resolutions=["exact", "covers", "wrong", "unresolved"])
    add("A6", "bm25-k5", "bm25", m, "corpus", MSFT_Q, [1, 0], 2, T1, resolutions=["exact", "exact"])
    # Paired comparisons (k=10): two identical best configs, one strictly worse on all 20 questions.
    for run_id, config, retriever, mrrs in (("P1", "bm25-k10", "bm25", [1.0] * 20),
                                            ("P2", "hybrid-k10", "hybrid", [1.0] * 20),
                                            ("P3", "dense-k10", "dense", [0.5, 0.25] * 10)):
        add(run_id, config, retriever, m, "filing", CMP_Q, [1] * 20, 2, T1, k=10, mrrs=mrrs)
    return results, runs


def answer_rows() -> list[dict]:
    def row(run_id, model, qa_id, state, figure, faith, correct, error=None, latency=900.0,
            non_committal=None, block=None, abstention=None):
        return dict(run_id=run_id, filing_id="AAPL-2022-10K", config_name=f"{model}-cite",
                    config_hash=f"h-{model}", model=model, prompt_type="cite", temperature=0.0,
                    top_p=1.0, retriever="bm25", k=5, qa_id=qa_id, question_type=QTYPE[qa_id],
                    answerable=QTYPE[qa_id] != "unanswerable", is_sanity=model.startswith("sanity_"),
                    answer="..." if state != "backend_error" else None, citations="[]", response_state=state,
                    correctness=figure, non_committal=non_committal, grounded=faith, period_ok=figure,
                    citation_precision=faith, citation_recall=faith, block_citation_precision=block,
                    block_citation_recall=block, abstention_correct=abstention, faithfulness=faith,
                    answer_relevancy=faith, state_correct=correct,
                    # the judge leaves its reasons where it scored (a configuration with a judge)
                    judge_reasons=json.dumps({"faithfulness": "judged"}) if faith is not None else None,
                    prompt_tokens=800, completion_tokens=60, latency_ms=latency, cost_usd=0.0,
                    error=error, evaluated_at=T1)

    small = "qwen-0.5b"
    large = "qwen-1.5b"
    return [
        row("X1", small, "q1", "answered", 1.0, 0.9, 1.0, non_committal=0.0, block=1.0),
        row("X1", small, "q2", "answered", 0.0, 0.5, 1.0, non_committal=1.0, block=0.5),
        row("X1", small, "q5", "abstained", None, None, 1.0, abstention=1.0),
        # Stored with NULL metrics on purpose: the marts must still score a failure as 0.
        row("X1", small, "q4", "backend_error", None, None, None, error="TimeoutError: llm"),
        row("X2", large, "q1", "answered", 1.0, 1.0, 1.0, non_committal=0.0, block=1.0),
        row("X2", large, "q2", "answered", 1.0, 0.8, 1.0, non_committal=0.0, block=1.0),
        row("X3", "sanity_echo", "q1", "answered", 0.0, 0.0, 1.0, non_committal=1.0, block=1.0),
        row("X3", "sanity_echo", "q2", "answered", 0.0, 0.0, 1.0, non_committal=1.0, block=1.0),
    ]


def build_synthetic_warehouse(path: Path, *, with_answers: bool = True, with_statistics: bool = False) -> Warehouse:
    """Fill a fresh warehouse file at ``path`` with the rows above, through the pipeline's own writer
    (and, with ``with_statistics``, eval.leaderboard / eval.comparisons through the core function)."""
    wh = Warehouse(path)
    fids = [f["filing_id"] for f in FILINGS]
    wh.replace_rows("core.filings", FILINGS, where={"filing_id": fids})
    wh.replace_rows("core.chunks", [
        dict(chunk_id=f"{fid}-c{i}", filing_id=fid, company="x", fiscal_year=2022, form_type="10-K",
             page_start=i, page_end=i, chunk_type="prose", text="lorem ipsum " * 10, is_leaf=True)
        for fid in fids for i in range(3)
    ], where={"filing_id": fids})
    wh.replace_rows("qa.items", [
        dict(qa_id=qa_id, filing_id=fid, question=q, reference_answer="42", question_type=qt,
             status="accepted", source="synthetic",
             metadata=json.dumps({"leakage": LEAKAGE[qa_id]}) if qa_id in LEAKAGE else None)
        for fid, qa_id, q, qt in QA
    ], where={"filing_id": fids})
    results, runs = retrieval_rows()
    wh.replace_rows("eval.retrieval_results", results, where={"filing_id": fids})
    wh.replace_rows("eval.runs", runs, where={"filing_id": fids})
    if with_answers:
        wh.replace_rows("eval.answer_results", answer_rows(), where={"filing_id": fids})
    else:
        with wh.connect():  # still create the (empty) tables
            pass
    if with_statistics:
        build_eval_statistics(wh, STATS, built_at=T1)
        agreement, configs = compute_external_agreement(*agreement_case(), AgreementConfig(), STATS, built_at=T1)
        wh.replace_rows("eval.external_agreement", agreement, where={})
        wh.replace_rows("eval.external_agreement_configs", configs, where={})
    return wh


LEAKAGE = {"q1": {"score": 0.6, "band": "high"}, "q2": {"score": 0.1, "band": "low"},
           "q3": {"score": 0.3, "band": "medium"}, "q4": {"score": 0.5, "band": "high"}}

# External agreement, hand-computed: synthetic A (1, 1) = 1, B (1, 0) = .5, C (0, 0) = 0; external
# A (0, 0, 1) = 1/3, B (1, 1, 0) = 2/3, C (0, 1, 0) = 1/3 -> tau-b 0, rho 0, one flipped pair (A, B).
AGREEMENT_CASE = {"s1": {"A": 1, "B": 1, "C": 0}, "s2": {"A": 1, "B": 0, "C": 0},
                  "e1": {"A": 0, "B": 1, "C": 0}, "e2": {"A": 0, "B": 1, "C": 1}, "e3": {"A": 1, "B": 0, "C": 0}}


def agreement_case() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(current retrieval rows, qa items) of the hand-computed agreement case."""
    rows = [dict(run_id=f"G-{cfg}", filing_id="AAPL-2022-10K", scope="filing", config_name=f"{cfg}@5",
                 retriever=cfg, k=5, chunking=None, qa_id=qa, all_evidence_hit=float(v), status="ok",
                 evaluated_at=T1)
            for qa, by_cfg in AGREEMENT_CASE.items() for cfg, v in by_cfg.items()]
    items = [dict(qa_id=qa, filing_id="AAPL-2022-10K", source="financebench" if qa[0] == "e" else "generated",
                  metadata=json.dumps({"external_set": "analyst_questions"}) if qa[0] == "e" else None)
             for qa in AGREEMENT_CASE]
    return pd.DataFrame(rows), pd.DataFrame(items)


def run_dbt_build(warehouse_path: Path, scratch: Path) -> subprocess.CompletedProcess:
    """``dbt build`` of the metrics project into ``warehouse_path``; target/ and logs/ go to scratch
    so the test never races a dagster-dbt run over the repo's own dbt_metrics/target."""
    from finrag_pipeline.defs.marts import project as marts_project  # the one place dbt is found

    env = {**os.environ,
           "FINRAG_WAREHOUSE": str(warehouse_path),
           "DBT_TARGET_PATH": str(scratch / "dbt_target"),
           "DBT_LOG_PATH": str(scratch / "dbt_logs"),
           "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    return subprocess.run(
        [marts_project.dbt_executable(), "build", "--project-dir", str(DBT_PROJECT_DIR),
         "--profiles-dir", str(DBT_PROJECT_DIR)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
