"""`finrag`: the command line over the same core the Dagster assets use.

    finrag demo                      ingest + evaluate the sample corpus, print the leaderboard
    finrag ingest PATH...            register and ingest filings (files or folders)
    finrag remove FILING_ID          drop a filing from the catalog and both indexes
    finrag search "question"         ranked hits with page, type, snippet and stage timings
    finrag ask "question"            an answer with evidence, citations, state and timings
    finrag eval                      run (or re-run) the evaluation matrix, print the table
    finrag eval --system NAME        evaluate an outside RAG system of systems.yaml the same way
    finrag systems list              the outside systems and regression gates of systems.yaml
    finrag gate --baseline A --candidate B --metric M [--max-drop D]   exit 1 on a significant regression
    finrag sql "SELECT ..."          query the analysts' snapshot (or --live warehouse)
    finrag inspect FILE [--json]     parse one filing without registering it; show what was read
    finrag company-map refresh       rebuild the SEC company map (edgartools offline, or EDGAR online)
    finrag qa import|export|review   external QA sets and human review
    finrag score agreement FILE      the answer scorer (and a judge) against answers people graded
    finrag report                    rebuild the HTML report
    finrag serve [--port 8765]       web explorer over the analysts' snapshot and the indexes
"""

import json
import os
import sys
import time
from typing import Any

import click

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _paths(home: str | None):
    from finrag_pipeline.core.paths import FinragPaths

    return FinragPaths.from_env(home).ensure()


def _valid_filing_ids(ctx: click.Context, param: click.Parameter, value):
    """A filing id from the command line matches the same pattern as one from a document or sidecar."""
    from finrag_pipeline.core.ingest.errors import InvalidFilingId
    from finrag_pipeline.core.ingest.registry import validate_filing_id

    try:
        for v in (value if isinstance(value, tuple) else (value,)):
            validate_filing_id(v)
    except InvalidFilingId as exc:
        raise click.BadParameter(exc.message) from None
    return value


def _emit(data: Any, as_json: bool, table: str | None = None) -> None:
    if as_json:
        click.echo(json.dumps(data, indent=2, default=str))
    elif table is not None:
        click.echo(table)


class _Group(click.Group):
    """Configuration mistakes (an unknown retriever, model or --set name; an invalid value) end with
    a message naming what is valid, not a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        from pydantic import ValidationError

        from finrag_pipeline.core.config import ConfigError
        from finrag_pipeline.core.llm.local_model import LocalLLMUnavailable

        try:
            return super().invoke(ctx)
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from exc
        except LocalLLMUnavailable as exc:  # e.g. the LLM reranker without the local LLM installed
            raise click.ClickException(str(exc)) from exc
        except ValidationError as exc:
            raise click.ClickException(f"invalid configuration: {exc}") from exc


@click.group(cls=_Group)
@click.option("--home", envvar="FINRAG_HOME", default=None, help="FINRAG_HOME (default <repo>/.finrag).")
@click.pass_context
def main(ctx: click.Context, home: str | None) -> None:
    """finrag-pipeline: evaluate RAG over 10-K filings."""
    ctx.obj = {"home": home}


# ---------------------------------------------------------------------------------------------
# Pipeline


def _run(ctx: click.Context, inputs: list[str], evaluate: bool, marts: bool,
         external_sets: list[tuple[str, str]] | None = None, trigger: str = "cli") -> Any:
    from finrag_pipeline.cli_progress import terminal_progress
    from finrag_pipeline.defs.local_runs import get_instance, run_pipeline

    paths = _paths(ctx.obj["home"])
    os.environ["FINRAG_HOME"] = str(paths.home)  # the code location's resources read it
    os.environ.setdefault("DAGSTER_HOME", str(paths.dagster_home))
    from finrag_pipeline.definitions import defs

    instance = get_instance(paths)
    t0 = time.perf_counter()
    with terminal_progress() as echo:  # bars on a terminal; plain lines otherwise
        report = run_pipeline(inputs, paths, instance, defs, evaluate=evaluate, build_marts=marts, progress=echo,
                              external_sets=external_sets or (), trigger=trigger)
    report.seconds["total"] = time.perf_counter() - t0
    return paths, report


@main.command()
@click.option("--no-eval", is_flag=True, help="Stop after QA generation.")
@click.pass_context
def demo(ctx: click.Context, no_eval: bool) -> None:
    """Materialize the whole asset graph on the sample corpus in data/sample_filings, with the
    hand-written analysts' questions on those filings imported as an external QA set."""
    from finrag_pipeline.core.paths import SAMPLE_EXTERNAL_QA, SAMPLE_FILINGS_DIR

    click.echo(f"finrag demo: sample corpus {SAMPLE_FILINGS_DIR}")
    external = [(str(SAMPLE_EXTERNAL_QA), "financebench")] if SAMPLE_EXTERNAL_QA.exists() else []
    paths, report = _run(ctx, [str(SAMPLE_FILINGS_DIR)], evaluate=not no_eval, marts=not no_eval,
                         external_sets=external, trigger="demo")
    _print_summary(paths, report)
    if report.failed or report.failed_checks:
        sys.exit(1)


@main.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--no-eval", is_flag=True, help="Stop after QA generation.")
@click.pass_context
def ingest(ctx: click.Context, inputs: tuple[str, ...], no_eval: bool) -> None:
    """Register and ingest filings (PDF or inline-XBRL HTML files, or folders of them)."""
    paths, report = _run(ctx, list(inputs), evaluate=not no_eval, marts=not no_eval)
    _print_summary(paths, report)
    if report.failed or report.failed_checks:
        sys.exit(1)


@main.command()
@click.argument("filing_id", callback=lambda c, p, v: _valid_filing_ids(c, p, v))
@click.pass_context
def remove(ctx: click.Context, filing_id: str) -> None:
    """Remove a filing: out of the catalog and both indexes; the whole-corpus evaluation is refreshed."""
    from finrag_pipeline.core.catalog import mark_removed
    from finrag_pipeline.core.warehouse import Warehouse
    from finrag_pipeline.defs.local_runs import execute_job, get_instance
    from finrag_pipeline.defs.partitions import FILINGS_PARTITIONS_NAME

    paths = _paths(ctx.obj["home"])
    os.environ["FINRAG_HOME"] = str(paths.home)
    from finrag_pipeline.definitions import defs

    wh = Warehouse(paths.warehouse)
    if not len(wh.query_df("SELECT 1 FROM core.filings WHERE filing_id = ?", [filing_id])):
        raise click.ClickException(f"no filing {filing_id!r} in the catalog (finrag sql "
                                   "\"SELECT filing_id FROM core.filings\" lists them)")
    mark_removed(wh, filing_id)
    instance = get_instance(paths)
    if instance.has_dynamic_partition(FILINGS_PARTITIONS_NAME, filing_id):
        instance.delete_dynamic_partition(FILINGS_PARTITIONS_NAME, filing_id)
    result = execute_job(defs, "refresh_corpus_state", instance, trigger="cli")
    click.echo(f"removed {filing_id}; corpus state refreshed ({'ok' if result.success else 'FAILED'})")
    if not result.success:
        sys.exit(1)


def _print_summary(paths, report) -> None:
    from finrag_pipeline.core.warehouse import Warehouse

    wh = Warehouse(paths.warehouse)
    counts = wh.query_df("""
        SELECT f.filing_id, f.company, f.fiscal_year, f.n_pages AS pages,
          (SELECT count(DISTINCT table_id) FROM core.table_rows t WHERE t.filing_id = f.filing_id) AS tables,
          (SELECT count(*) FROM core.xbrl_facts x WHERE x.filing_id = f.filing_id) AS facts,
          (SELECT count(*) FROM core.chunks c WHERE c.filing_id = f.filing_id AND c.is_leaf) AS chunks,
          (SELECT count(*) FROM qa.items q WHERE q.filing_id = f.filing_id) AS questions
        FROM core.filings f WHERE NOT coalesce(f.removed, FALSE) ORDER BY f.filing_id""")
    click.echo("\nFilings")
    click.echo(counts.to_markdown(index=False))
    click.echo("\nSeconds per stage: " + ", ".join(f"{k} {v:.1f}" for k, v in report.seconds.items()))
    bad = [r for r in report.registrations if not r.ok and r.status != "duplicate"]
    for r in bad:
        click.echo(f"rejected {r.original_name}: [{r.status}] {r.message} (remedy: {r.remedy})")
    for asset, check, partition, _ok, _severity in report.failed_checks:
        click.echo(f"CHECK FAILED {asset}.{check}" + (f" [{partition}]" if partition else ""))
    for asset, check, partition, _ok, _severity in report.warnings:
        click.echo(f"check warning {asset}.{check}" + (f" [{partition}]" if partition else "")
                   + " (see its metadata in the UI)")
    for fid, err in report.failed.items():
        click.echo(f"FAILED {fid}: {err}")
    try:
        board = wh.query_df("""
            SELECT scope, k, config_name, n_questions,
                   round(ndcg_page_mean, 3) AS ndcg_page,
                   '[' || round(ndcg_page_boot_ci_low, 3) || ', ' || round(ndcg_page_boot_ci_high, 3) || ']' AS ndcg_ci,
                   round(hit_page_mean, 3) AS hit_page, round(mrr_page_mean, 3) AS mrr_page,
                   round(all_evidence_hit_mean, 3) AS all_evidence_hit,
                   CASE WHEN is_best THEN 'best' WHEN distinguishable_from_best THEN 'worse'
                        ELSE 'not distinguishable' END AS vs_best
            FROM marts.mart_retriever_leaderboard ORDER BY scope, k, ndcg_page_mean DESC""")
        click.echo("\nRetriever leaderboard (page level; 95% bootstrap intervals; paired test against the best)")
        click.echo(board.to_markdown(index=False))
    except Exception as exc:  # noqa: BLE001 - marts not built yet (e.g. --no-eval)
        click.echo(f"\n(no leaderboard: {str(exc).splitlines()[0]})")
    _print_external_agreement(wh)
    click.echo(f"\nWarehouse:        {paths.warehouse}")
    click.echo(f"Analyst snapshot: {paths.warehouse_snapshot}")
    click.echo(f"Indexes:          {paths.tantivy_dir.parent}")
    from finrag_pipeline.core.reporting.serve import REPORT_FILE, report_url

    report_path = paths.reports_dir / REPORT_FILE
    if report_path.exists():
        click.echo(f"Report:           {report_path}  (`finrag report --serve`: {report_url(report_path.name)})")
    click.echo(f"Dagster UI:       make ui  (DAGSTER_HOME={paths.dagster_home})")


def _print_external_agreement(wh) -> None:
    """The synthetic-vs-external rank agreement (marts.mart_external_agreement), when a set was imported."""
    try:
        agreement = wh.query_df("""
            SELECT external_set, scope, metric || '@' || k AS ranked_by, n_configs,
                   n_external_questions AS n_ext, n_synthetic_questions AS n_syn,
                   round(kendall_tau_b, 2) AS kendall_tau_b,
                   '[' || round(kendall_ci_low, 2) || ', ' || round(kendall_ci_high, 2) || ']' AS tau_ci,
                   round(spearman_rho, 2) AS spearman_rho, n_flipped_pairs || ' of ' || n_pairs AS flipped,
                   best_synthetic, best_external
            FROM marts.mart_external_agreement ORDER BY external_set, scope""")
    except Exception:  # noqa: BLE001 - marts not built yet: the leaderboard message above says so
        return
    if len(agreement):
        click.echo("\nSynthetic vs external questions (rank agreement of the leaderboards; 95% bootstrap CI)")
        click.echo(agreement.to_markdown(index=False))


# ---------------------------------------------------------------------------------------------
# Search and answers


def _session(ctx: click.Context, overrides: tuple[str, ...] = ()):
    """A session wired like the code location's assets: from the same Dagster resources (home, config
    directory, embedder), so `finrag search` embeds queries with the embedder the vector index was built with."""
    from finrag_pipeline.core.config import parse_overrides
    from finrag_pipeline.defs.resources import code_location_resources, session_from_resources

    resources = code_location_resources(str(_paths(ctx.obj["home"]).home))
    return session_from_resources(resources["finrag"], resources["embedder"], parse_overrides(overrides))


def _filters(filing: tuple[str, ...]):
    from finrag_pipeline.core.models import SearchFilters

    return SearchFilters(filing_ids=tuple(filing)) if filing else None


def _snippet(text: str, width: int = 110) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


@main.command()
@click.argument("question")
@click.option("--retriever", "-r", default="hybrid_rrf", show_default=True, help="A name in retrievers.yaml.")
@click.option("--k", "-k", default=5, show_default=True)
@click.option("--filing", multiple=True, callback=lambda c, p, v: _valid_filing_ids(c, p, v),
              help="Restrict to filing id(s); default the whole corpus.")
@click.option("--set", "sets", multiple=True, help="Override a retriever field: NAME.field=value.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def search(ctx, question, retriever, k, filing, sets, as_json) -> None:
    """Ranked hits with filing, page, chunk type, a snippet, and the time each stage took."""
    session = _session(ctx, sets)
    result = session.retriever(retriever).retrieve(question, k, _filters(filing))
    data = {"query": question, "retriever": retriever, "timings_ms": result.timings_ms, "info": result.info,
            "hits": [{"rank": h.rank, "score": h.score, "filing_id": h.filing_id, "pages": h.pages,
                      "chunk_type": h.chunk_type, "chunk_id": h.chunk_id, "stage": h.stage, "text": h.text}
                     for h in result.hits],
            "top_pages": [{"filing_id": p.filing_id, "page": p.page, "score": p.score, "n_chunks": p.n_chunks}
                          for p in result.top_pages[:k]]}
    lines = [f"{h.rank:>2}. {h.score:8.4f}  {h.filing_id}  p.{h.page_start}"
             + (f"-{h.page_end}" if h.page_end != h.page_start else "")
             + f"  [{h.chunk_type}]  {_snippet(h.text)}" for h in result.hits]
    pages = ", ".join(f"{p.filing_id} p.{p.page}" for p in result.top_pages[:k])
    timing = ", ".join(f"{k_}: {v:.1f} ms" for k_, v in result.timings_ms.items())
    info = f"\nquery understanding: {json.dumps(result.info, default=str)}" if result.info else ""
    _emit(data, as_json, "\n".join(lines or ["(no hits)"]) + f"\n\ntop pages: {pages or '-'}"
          + f"\nstages: {timing}{info}")


@main.command()
@click.argument("question")
@click.option("--retriever", "-r", default="hybrid_rrf", show_default=True)
@click.option("--model", "-m", default="calculator", show_default=True,
              help="'calculator' (offline: line items, XBRL facts, arithmetic), 'extractive' (offline quote) "
                   "or a model name from assets_config/models.yaml.")
@click.option("--prompt-type", default="standard", show_default=True)
@click.option("--temperature", default=0.0, show_default=True, type=float)
@click.option("--top-p", default=1.0, show_default=True, type=float)
@click.option("--k", "-k", default=5, show_default=True)
@click.option("--filing", multiple=True, callback=lambda c, p, v: _valid_filing_ids(c, p, v))
@click.option("--json", "as_json", is_flag=True)
@click.option("--explain", is_flag=True, help="Print the calculator's plan (formula, what the question wrote, "
              "statements, years, unit) and every operand with its row (page, label, period, value).")
@click.pass_context
def ask(ctx, question, retriever, model, prompt_type, temperature, top_p, k, filing, as_json, explain) -> None:
    """Answer a question with its evidence, citations, response state and timings.

    The calculator also prints its formula and every input with its page and table row."""
    from finrag_pipeline.core.evaluation.runner import AnswerConfig

    _require_local_llm(model)  # a local LLM that is not installed: one line, before any retrieval
    session = _session(ctx)
    result = session.retriever(retriever).retrieve(question, k, _filters(filing))
    answerer = session.answerer_factory(AnswerConfig(model=model, prompt_type=prompt_type, temperature=temperature,
                                                     top_p=top_p, retriever=retriever, k=k))
    t0 = time.perf_counter()
    answer = answerer.answer(question, result.hits)
    answer_ms = (time.perf_counter() - t0) * 1000
    data = {"question": question, "answer": answer.text, "response_state": answer.response_state,
            "error": answer.error, "citations": answer.citations, "retrieval_ms": result.timings_ms, "answer_ms": answer_ms,
            "details": answer.details,
            "evidence": [{"rank": h.rank, "filing_id": h.filing_id, "pages": h.pages, "text": h.text}
                         for h in result.hits]}
    if explain:
        from finrag_pipeline.core.analyst import explanation

        data["explain"] = explanation(answer.details)
    cites = "; ".join(f"{c[0]} p.{c[1]}" if isinstance(c, list | tuple) else str(c) for c in answer.citations)
    text = (f"{answer.text or '(no answer)'}\n\nstate: {answer.response_state}\n"
            + (f"error: {answer.error}\n" if answer.error else "")  # why a backend_error, e.g. a timeout
            + f"citations: {cites or '-'}\n"
            + _calculation_lines(answer.details)
            + (_explain_lines(answer.details) if explain else "")
            + f"timings: retrieval {result.timings_ms.get('total', 0):.0f} ms, answer {answer_ms:.1f} ms"
            + _answer_timings(answer.details) + "\n\nevidence:\n"
            + "\n".join(f"  {h.rank}. {h.filing_id} p.{h.page_start} {_snippet(h.text, 100)}" for h in result.hits))
    _emit(data, as_json, text)


def _require_local_llm(model: str) -> None:
    """One line naming the install command when ``model`` is a local LLM that is not installed."""
    from finrag_pipeline.core.config import ConfigError
    from finrag_pipeline.core.llm.client import local_unavailable_reason
    from finrag_pipeline.core.llm.registry import load_model_registry

    try:
        reason = local_unavailable_reason(load_model_registry().get(model).provider)
    except (ConfigError, KeyError):
        return  # not a model name (an answerer registered under another name): the factory decides
    if reason:
        raise click.ClickException(reason)


def _calculation_lines(details: dict) -> str:
    """Formula and inputs (page, table row or XBRL fact) of a calculator answer; '' for other answerers."""
    from finrag_pipeline.core.numbers import SCALE_NAME

    lines = []
    if details.get("formula"):
        lines.append(f"formula: {details['formula']}" + (f" ({details['operation']})"
                                                         if details.get("operation") not in (None, "value") else ""))
    for i in details.get("inputs", []):
        src = i["source"]
        where = (f"p.{src.get('page')} row \"{_snippet(src.get('row_label') or '', 60)}\" [{src.get('column_header')}]"
                 if src["kind"] == "table_row" else f"p.{src.get('page')} XBRL {src.get('concept')} ({src.get('context_id')})")
        scale = f" {SCALE_NAME[i['scale']]}" if i["scale"] in SCALE_NAME else ""
        lines.append(f"  input {i['line_item']} {i['period']}: {i['value']}{scale} {i['unit'] or ''} <- "
                     f"{src.get('filing_id')} {where} chunk {src.get('chunk_id') or '-'}")
    if details.get("reason") and not details.get("formula"):
        lines.append(f"reason: {details['reason']}")
    return "\n".join(lines) + ("\n" if lines else "")


def _explain_lines(details: dict) -> str:
    from finrag_pipeline.core.analyst import explanation_lines

    return "\n".join(explanation_lines(details)) + "\n"


def _answer_timings(details: dict) -> str:
    t = details.get("timings_ms") or {}
    return (" (" + ", ".join(f"{k} {v:.1f} ms" for k, v in t.items()) + ")") if t else ""


@main.command()
@click.argument("filing_id")
@click.option("--item", "items", multiple=True, help="Line item(s) (lexicon key or words); default: every "
              "XBRL-tagged line item of the lexicon.")
@click.option("--year", "years", multiple=True, type=int, help="Fiscal year(s); default: the filing's own.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def facts(ctx, filing_id, items, years, as_json) -> None:
    """Line items of a filing as the calculator reads them (value, unit, source row or XBRL fact), and
    every disagreement between an XBRL fact and its table row."""
    from finrag_pipeline.core.analyst import FactStore, resolve_term

    store = FactStore(warehouse=_session(ctx).warehouse)
    filing = store.filing(filing_id)
    if filing is None:
        raise click.ClickException(f"filing {filing_id} is not in the warehouse (`finrag sql \"SELECT filing_id "
                                   "FROM core.filings\"` lists them)")
    concepts = [c for c in (resolve_term(i, store.lexicon, allow_formulas=False) for i in items) if c] if items \
        else [c for c in store.lexicon.concepts.values() if c.xbrl and not c.formula]
    rows = []
    for concept in concepts:
        for year in years or [filing.meta.fiscal_year]:
            fact = filing.lookup(concept, year)
            rows.append({"line_item": concept.key, "period": f"FY{year}", **(
                {"value": str(fact.value), "unit": fact.unit, "scale": fact.scale, "source": fact.source.describe(),
                 "chunk_id": fact.source.chunk_id} if fact else {"value": None, "source": "not in the filing"})})
    disagreements = [d.as_row() for d in filing.reconcile()]
    data = {"filing_id": filing_id, "lookups": rows, "disagreements": disagreements}
    lines = [f"{r['line_item']:<28} {r['period']}  {r['value'] or '-':>14} {r.get('unit') or '':<14} {r['source']}"
             for r in rows]
    lines += ["", f"fact/table disagreements: {len(disagreements)}"]
    lines += [f"  {d['line_item']} {d['period']}: XBRL {d['concept']} = {d['fact_value']:,.0f} vs row "
              f"\"{d['row_label']}\" p.{d['page']} = {d['row_value']:,.0f}" for d in disagreements]
    _emit(data, as_json, "\n".join(lines))


# ---------------------------------------------------------------------------------------------
# Evaluation and analysis


@main.command("eval")
@click.option("--config", "configs", multiple=True, help="Retriever config name(s) of the matrix to run.")
@click.option("--k", "ks", multiple=True, type=int, help="top-k value(s).")
@click.option("--scope", "scopes", multiple=True, type=click.Choice(["filing", "corpus"]))
@click.option("--chunking", "chunkings", multiple=True,
              help='Chunking variant(s) of ingest.yaml ("default" = the pipeline\'s own); partitions of a '
                   "variant not built yet are built first, through Dagster.")
@click.option("--filing", "filings", multiple=True, callback=lambda c, p, v: _valid_filing_ids(c, p, v),
              help="Filing id(s); default every filing.")
@click.option("--answers", is_flag=True, help="Also run answer evaluation.")
@click.option("--system", "systems", multiple=True,
              help="Evaluate outside RAG system(s) of systems.yaml instead of the built-in matrix (finrag systems list).")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Filings evaluated at once (default: assets_config/evaluation_workers.yaml, one per core); 1 = serial.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def eval_cmd(ctx, configs, ks, scopes, chunkings, filings, answers, systems, as_json, workers) -> None:
    """Run or re-run the evaluation matrix (narrowed by the options) and print the aggregate table.

    Each filing is one run of the code location's evaluate_filing job (tagged finrag/trigger=cli), so
    Dagster records the materializations and automation refreshes the marts after it. A chunking
    variant's missing (filing, variant) partitions are first built by the build_chunking_variants job.
    With --system, each filing is one run of the evaluate_system job instead (asset system_eval)."""
    import pandas as pd

    from finrag_pipeline.core.catalog import active_filings
    from finrag_pipeline.core.evaluation.runner import aggregate
    from finrag_pipeline.core.scoring.metric_registry import BOARD_RETRIEVAL_METRICS
    from finrag_pipeline.defs.local_runs import evaluate_filings

    if systems:
        _eval_systems(ctx, systems, ks, scopes, filings, as_json)
        return
    paths, instance, defs = _dagster(ctx)
    session = _session(ctx)
    narrowed = {k: list(v) for k, v in (("retrievers", configs), ("top_k", ks), ("scopes", scopes),
                                        ("chunking", chunkings)) if v}
    matrix = session.eval_matrix(**narrowed)  # an unknown name fails here, with the valid ones, before any run
    active = active_filings(session.warehouse)
    unknown = [f for f in filings if f not in active]
    if unknown:  # never a Dagster partition for a filing the catalog does not hold
        raise click.ClickException(f"not in the catalog: {', '.join(unknown)} (finrag sql \"SELECT filing_id "
                                   "FROM core.filings\" lists them)")
    targets = list(filings) or active
    variants = [c for c in matrix.retrieval.chunking if c is not None and c != "default"]
    if variants:
        # what the evaluation will require (every filing: the corpus scope searches them all), built by Dagster
        _build_variants(ctx, variants, active if "corpus" in matrix.retrieval.scopes else targets, defs, instance)
    from finrag_pipeline.cli_progress import terminal_progress

    with terminal_progress(enabled=not as_json):  # bars per filing and per configuration on a terminal
        results = evaluate_filings(defs, instance, targets, trigger="cli", narrowed=narrowed, answers=answers,
                                   workers=workers)
    failed = {fid: r for fid, r in results.items() if not r.success}
    if failed:
        from finrag_pipeline.defs.local_runs import first_error

        raise click.ClickException("; ".join(f"{fid}: {first_error(r)}" for fid, r in failed.items()))
    run_ids = [r.run_id for r in results.values()]
    rows = session.warehouse.query_df(
        "SELECT r.* FROM eval.retrieval_results r JOIN eval.runs u USING (run_id) "
        f"WHERE u.dagster_run_id IN ({', '.join('?' * len(run_ids))})", run_ids) if run_ids else pd.DataFrame()
    if not len(rows):
        raise click.ClickException("no questions to evaluate: run `finrag demo` or `finrag ingest` first")
    table = aggregate(rows, by=["scope", "config_name"], metrics=list(BOARD_RETRIEVAL_METRICS))
    wide = table.pivot_table(index=["scope", "config_name"], columns="metric", values="mean").reset_index()
    _emit(table.to_dict("records"), as_json,
          wide.round(3).to_markdown(index=False) + "\n\n(95% bootstrap intervals: --json, or the marts)")


def _eval_systems(ctx: click.Context, names, ks, scopes, filings, as_json: bool) -> None:
    """`finrag eval --system NAME`: the evaluate_system job per filing, then the systems' means with intervals."""
    import pandas as pd

    from finrag_pipeline.core.catalog import active_filings
    from finrag_pipeline.core.evaluation.runner import aggregate
    from finrag_pipeline.core.evaluation.systems import SystemsConfig
    from finrag_pipeline.core.scoring.metric_registry import (
        BOARD_RETRIEVAL_METRICS,
        HEADLINE_ANSWER_METRICS,
    )
    from finrag_pipeline.defs.local_runs import execute_job, first_error
    from finrag_pipeline.defs.partitions import FILINGS_PARTITIONS_NAME

    paths, instance, defs = _dagster(ctx)
    session = _session(ctx)
    with session.configured():
        config = SystemsConfig.load()
    for name in names:
        config.get(name).check_ready()   # unknown name, missing secret or file: before any run
    session.eval_matrix(top_k=list(ks), scopes=list(scopes))   # invalid values fail here
    active = active_filings(session.warehouse)
    unknown = [f for f in filings if f not in active]
    if unknown:
        raise click.ClickException(f"not in the catalog: {', '.join(unknown)}")
    targets = list(filings) or active
    if not targets:
        raise click.ClickException("no filings to evaluate: run `finrag demo` or `finrag ingest` first")
    known = set(instance.get_dynamic_partitions(FILINGS_PARTITIONS_NAME))
    instance.add_dynamic_partitions(FILINGS_PARTITIONS_NAME, [f for f in targets if f not in known])
    run_config = {"loggers": {"console": {"config": {"log_level": "WARNING"}}},
                  "ops": {"system_eval": {"config": {"systems": list(names), "top_k": list(ks),
                                                     "scopes": list(scopes)}}}}
    run_ids, failed = [], {}
    for fid in targets:
        result = execute_job(defs, "evaluate_system", instance, trigger="cli", partition_key=fid,
                             run_config=run_config)
        run_ids.append(result.run_id)
        if not result.success:
            failed[fid] = first_error(result)
    if failed:
        raise click.ClickException("; ".join(f"{fid}: {why}" for fid, why in failed.items()))
    marks = ", ".join("?" * len(run_ids))
    retrieval = session.warehouse.query_df(
        f"SELECT r.* FROM eval.retrieval_results r JOIN eval.runs u USING (run_id) WHERE u.dagster_run_id IN ({marks})",
        run_ids)
    answers = session.warehouse.query_df(
        f"SELECT a.* FROM eval.answer_results a JOIN eval.runs u USING (run_id) WHERE u.dagster_run_id IN ({marks})",
        run_ids)
    if not len(retrieval) and not len(answers):
        raise click.ClickException("no questions to evaluate: run `finrag demo` or `finrag ingest` first")
    table = pd.concat([
        aggregate(retrieval, by=["scope", "config_name"], metrics=list(BOARD_RETRIEVAL_METRICS)),
        aggregate(answers, by=["config_name"], metrics=[*HEADLINE_ANSWER_METRICS, "latency_ms", "cost_usd"])
        .assign(scope="answers")], ignore_index=True)
    states = answers.groupby(["config_name", "response_state"]).size().rename("n").reset_index()
    text = table[["scope", "config_name", "metric", "mean", "ci_low", "ci_high", "n_scored", "n_total"]].round(3)
    _emit({"metrics": table.to_dict("records"), "response_states": states.to_dict("records")}, as_json,
          text.to_markdown(index=False) + "\n\nresponse states:\n" + states.to_markdown(index=False)
          + "\n\n(95% bootstrap intervals; compare with `finrag gate --baseline ... --candidate ...`)")


@main.group("systems")
def systems_group() -> None:
    """Outside RAG systems under test (assets_config/systems.yaml)."""


@systems_group.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def systems_list(ctx, as_json) -> None:
    """Every system of systems.yaml with its kind and where it answers, and the regression gates."""
    import pandas as pd

    from finrag_pipeline.core.evaluation.systems import SystemsConfig

    session = _session(ctx)
    with session.configured():
        config = SystemsConfig.load()
    rows = [{"name": name, "kind": spec.kind,
             "endpoint": getattr(spec, "url", None) or getattr(spec, "target", None) or getattr(spec, "path", None),
             "k": spec.k, "description": spec.description} for name, spec in config.systems.items()]
    gates = [g.model_dump() for g in config.gates]
    text = (pd.DataFrame(rows).to_markdown(index=False) if rows
            else "no systems in systems.yaml (docs/SYSTEMS.md shows how to add one)")
    if gates:
        text += "\n\ngates:\n" + pd.DataFrame(gates).to_markdown(index=False)
    _emit({"systems": rows, "gates": gates}, as_json, text)


class _GateInputError(click.ClickException):
    exit_code = 2   # 1 is reserved for "the candidate regressed"


@main.command()
@click.option("--baseline", required=True, help="A configuration name (e.g. hybrid_rrf@5) or a run id of eval.runs.")
@click.option("--candidate", required=True, help="A configuration name (e.g. my_rag@5) or a run id.")
@click.option("--metric", default="hit_page", show_default=True, help="Any retrieval or answer metric.")
@click.option("--max-drop", default=0.0, show_default=True, type=click.FloatRange(min=0.0),
              help="The drop tolerated: fail only when the whole interval lies below -max-drop.")
@click.option("--scope", type=click.Choice(["filing", "corpus"]), default=None, help="Default: both, paired per scope.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def gate(ctx, baseline, candidate, metric, max_drop, scope, as_json) -> None:
    """Paired comparison of the candidate with the baseline on the same questions. Exit 1 when the candidate
    is significantly worse by more than --max-drop (interval and sign-flip test), 2 when a side has no
    results, 0 otherwise. Prints the questions that flipped."""
    from finrag_pipeline.core.evaluation.gate import GateInputError, run_gate

    session = _session(ctx)
    stats = session.eval_matrix().stats
    try:
        result = run_gate(session.warehouse, baseline, candidate, metric, max_drop=max_drop, scope=scope,
                          confidence=stats.confidence, n_boot=stats.n_boot, n_perm=stats.n_perm, seed=stats.seed)
    except GateInputError as exc:
        raise _GateInputError(str(exc)) from exc
    _emit(result.as_dict(), as_json, result.text())
    if result.failed:
        ctx.exit(1)


def _build_variants(ctx: click.Context, variants, filing_ids, defs=None, instance=None, *,
                    rebuild: bool = False) -> list[tuple[str, str]]:
    """Run the build_chunking_variants job for each (filing, variant) not built (``rebuild``: every one)."""
    from finrag_pipeline.core.config import ConfigError
    from finrag_pipeline.core.variants import missing_builds
    from finrag_pipeline.defs.local_runs import build_variant_partitions, first_error

    if defs is None:
        _paths_, instance, defs = _dagster(ctx)
    session = _session(ctx)
    with session.configured():
        try:
            missing = missing_builds(session.paths, session.warehouse, variants, filing_ids)
        except (ConfigError, ValueError) as exc:
            raise click.ClickException(str(exc)) from exc
    pairs = [(f, v) for v in variants for f in filing_ids] if rebuild else sorted(missing)
    for (fid, variant), why in sorted(missing.items()):
        click.echo(f"building chunking variant {variant} of {fid} ({why})", err=True)
    try:
        results = build_variant_partitions(defs, instance, pairs, trigger="cli")
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    failed = {pair: r for pair, r in results.items() if not r.success}
    if failed:
        raise click.ClickException("; ".join(f"{f} x {v}: {first_error(r)}" for (f, v), r in failed.items()))
    return pairs


def _dagster(ctx: click.Context):
    """(paths, the home's Dagster instance, the code location's definitions) for a command that writes
    through Dagster. The code location's resources read FINRAG_HOME, so it is exported first."""
    from finrag_pipeline.defs.local_runs import get_instance

    paths = _paths(ctx.obj["home"])
    os.environ["FINRAG_HOME"] = str(paths.home)
    os.environ.setdefault("DAGSTER_HOME", str(paths.dagster_home))
    from finrag_pipeline.definitions import defs

    return paths, get_instance(paths), defs


def _report_qa_change(ctx: click.Context, filing_ids, change: str) -> None:
    """A CLI write to qa.items, reported to Dagster as runless qa_set materializations (see
    local_runs.report_qa_sets_changed) so automation re-evaluates those filings."""
    from finrag_pipeline.defs.local_runs import get_instance, report_qa_sets_changed

    filing_ids = sorted(set(filing_ids))
    if not filing_ids:
        return
    paths = _paths(ctx.obj["home"])
    reported = report_qa_sets_changed(get_instance(paths), filing_ids, change=change, trigger="cli")
    if reported:
        click.echo(f"QA sets changed: {', '.join(reported)} (reported to Dagster; automation re-evaluates them)")
    missing = [f for f in filing_ids if f not in reported]
    if missing:
        click.echo(f"not Dagster partitions (ingest them to evaluate): {', '.join(missing)}")


@main.command()
@click.argument("query")
@click.option("--live", is_flag=True, help="Query warehouse.duckdb itself instead of the analysts' snapshot.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def sql(ctx, query, live, as_json) -> None:
    """Run a SQL query and print a table. --live reads a private copy of warehouse.duckdb taken at that
    moment, so the query never holds a lock the pipeline would wait for."""
    import duckdb

    from finrag_pipeline.core.warehouse import live_copy

    paths = _paths(ctx.obj["home"])
    if live or not paths.warehouse_snapshot.exists():
        if not paths.warehouse.exists():
            raise click.ClickException(f"no warehouse yet at {paths.warehouse} (run `finrag ingest` first)")
        with live_copy(paths.warehouse, paths.cache_dir / "sql-live") as con:
            df = con.execute(query).df()
    else:
        with duckdb.connect(str(paths.warehouse_snapshot), read_only=True) as con:
            df = con.execute(query).df()
    _emit(json.loads(df.to_json(orient="records", date_format="iso")), as_json, df.to_markdown(index=False))


@main.command()
@click.option("--serve", is_flag=True, help="Then serve the reports folder over http until Ctrl-C (the Dagster "
              "UI links the report there).")
@click.option("--port", type=int, default=None, help="Port for --serve (default FINRAG_REPORT_PORT or 8765).")
@click.pass_context
def report(ctx, serve: bool, port: int | None) -> None:
    """Rebuild the HTML report from the analysts' snapshot (and serve it with --serve). Evaluation results
    whose dbt marts were never built get them first (the build_marts job, as after `finrag ingest`): the
    report shows the marts' numbers and never recomputes them."""
    import duckdb

    from finrag_pipeline.core.reporting.report import build_report, marts_needed
    from finrag_pipeline.core.reporting.serve import REPORT_FILE, make_server

    paths = _paths(ctx.obj["home"])
    source = paths.warehouse_snapshot if paths.warehouse_snapshot.exists() else paths.warehouse
    if not source.exists():
        raise click.ClickException(f"no warehouse yet at {paths.warehouse} (run `finrag ingest` first)")
    with duckdb.connect(str(source), read_only=True) as con:
        needs_marts = marts_needed(con)
    if needs_marts:
        from finrag_pipeline.defs.local_runs import get_instance, run_marts_build

        os.environ["FINRAG_HOME"] = str(paths.home)  # the code location's resources read it
        os.environ.setdefault("DAGSTER_HOME", str(paths.dagster_home))
        from finrag_pipeline.definitions import defs

        click.echo("the evaluation results have no dbt marts yet: building them first")
        built = run_marts_build(defs, get_instance(paths), paths, progress=click.echo)
        if built.failed:
            raise click.ClickException(f"building the marts failed ({built.failed['marts']}); the report needs "
                                       f"them (dbt log: {paths.logs_dir / 'build_marts.log'})")
        source = paths.warehouse_snapshot
    out = build_report(source, paths.reports_dir / REPORT_FILE)
    click.echo(out)
    if serve:
        server = make_server(paths.reports_dir, port=port)
        host, bound = server.server_address[:2]
        click.echo(f"serving {paths.reports_dir} at http://{host}:{bound}/{out.name} (Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()


@main.command()
@click.option("--port", default=8765, show_default=True, type=int)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.pass_context
def serve(ctx, port, host) -> None:
    """Web explorer: leaderboard, question view with the filing page, failures, ask, corpus."""
    from finrag_pipeline.web.app import serve as run_server

    paths = _paths(ctx.obj["home"])
    click.echo(f"finrag explorer: http://{host}:{port}  (snapshot {paths.warehouse_snapshot})")
    run_server(str(paths.home), host=host, port=port)


# ---------------------------------------------------------------------------------------------
# Ingest diagnostics


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
@click.option("--tables", "tables_page", type=click.IntRange(min=1), default=None, metavar="PAGE",
              help="Also print every table row read on PAGE: table title, unit, row path, cells.")
def inspect(file, as_json, tables_page) -> None:
    """Parse FILE without registering it and print what was read: metadata with sources and confidence,
    pages, sections, statements with their periods, rows, units, XBRL facts, warnings, seconds per stage.
    A refused file: every candidate considered per field and why it was passed over, the cover as read,
    and the sidecar that would register it."""
    from finrag_pipeline.core.ingest.inspect import format_inspection, inspect_filing

    report = inspect_filing(file, tables_page=tables_page)
    _emit(report, as_json, format_inspection(report))
    if report.get("status") != "ok":
        sys.exit(2)


@main.group("company-map")
def company_map() -> None:
    """The SEC company map (CIK, tickers, former names) used to cross-check cover metadata."""


@company_map.command("refresh")
@click.option("--online", is_flag=True, help="Fetch SEC's ticker table and the catalog's former names "
              "(needs edgar.user_agent in automation.yaml); default: the table an installed edgartools ships.")
@click.pass_context
def company_map_refresh(ctx, online) -> None:
    """Rebuild FINRAG_HOME/reference/company_map.csv.gz."""
    from finrag_pipeline.core.company_map import refresh_company_map

    _paths(ctx.obj["home"])
    try:
        if online:
            from finrag_pipeline.core.edgar import EdgarClient, load_automation_config
            from finrag_pipeline.core.query_understanding import CorpusCatalog
            from finrag_pipeline.core.warehouse import Warehouse

            cfg = load_automation_config().edgar
            catalog = CorpusCatalog.from_warehouse(Warehouse(_paths(ctx.obj["home"]).warehouse))
            ciks = sorted({f.cik for f in catalog.filings if f.cik})
            path, n = refresh_company_map("edgar", client=EdgarClient(cfg.user_agent), ciks_with_history=ciks)
        else:
            path, n = refresh_company_map("edgartools")
    except (RuntimeError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"{n} companies -> {path}")


# ---------------------------------------------------------------------------------------------
# QA sets


@main.group()
def variants() -> None:
    """Chunking variants of assets_config/ingest.yaml: partitions filing x chunking of variant_chunks,
    variant_bm25_index and variant_vector_index."""


@variants.command("status")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def variants_status(ctx, as_json) -> None:
    """Per (filing, variant): built, or why not (no chunks, other settings, an index short of chunks)."""
    from finrag_pipeline.core.catalog import active_filings
    from finrag_pipeline.core.variants import missing_builds, variant_names

    session = _session(ctx)
    with session.configured():
        names = variant_names()
        active = active_filings(session.warehouse)
        missing = missing_builds(session.paths, session.warehouse, names, active)
    rows = [{"filing_id": f, "chunking": v, "built": (f, v) not in missing, "why": missing.get((f, v), "")}
            for v in names for f in active]
    _emit(rows, as_json, "\n".join(f"{r['chunking']:<14} {r['filing_id']:<22} "
                                   f"{'built' if r['built'] else 'missing: ' + r['why']}" for r in rows)
          or "no chunking variant besides the default in ingest.yaml")


@variants.command("build")
@click.option("--variant", "names", multiple=True, help="Variant name(s); default every non-default variant.")
@click.option("--filing", "filings", multiple=True, callback=lambda c, p, v: _valid_filing_ids(c, p, v),
              help="Filing id(s); default every filing.")
@click.option("--rebuild", is_flag=True, help="Also re-materialize partitions that are built.")
@click.pass_context
def variants_build(ctx, names, filings, rebuild) -> None:
    """Materialize the (filing, variant) partitions that are missing, one build_chunking_variants run each."""
    from finrag_pipeline.core.catalog import active_filings
    from finrag_pipeline.core.variants import variant_names

    session = _session(ctx)
    with session.configured():
        known = variant_names()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise click.ClickException(f"unknown chunking variant(s) {', '.join(unknown)}; valid: {', '.join(known)}")
    active = active_filings(session.warehouse)
    outside = [f for f in filings if f not in active]
    if outside:
        raise click.ClickException(f"not in the catalog: {', '.join(outside)}")
    built = _build_variants(ctx, list(names) or known, list(filings) or active, rebuild=rebuild)
    click.echo(f"{len(built)} partition(s) materialized" if built else "every partition is built")


@main.group()
def qa() -> None:
    """QA sets: LLM generation, external sets and human review."""


@qa.command("import")
@click.argument("file", type=click.Path(exists=True))
@click.option("--format", "fmt", type=click.Choice(["financebench", "jsonl", "csv"]), required=True)
@click.option("--filings-dir", type=click.Path(exists=True, file_okay=False),
              help="Folder with the referenced documents; they are ingested first.")
@click.option("--set-name", default=None, help="Name of this external set (default: the file's stem).")
@click.pass_context
def qa_import(ctx, file, fmt, filings_dir, set_name) -> None:
    """Import FinanceBench-format JSONL or a plain JSONL/CSV QA set into qa.items."""
    from finrag_pipeline.core.qa.importers import import_external_set

    if filings_dir:
        _run(ctx, [filings_dir], evaluate=False, marts=False)
    try:
        result = import_external_set(_session(ctx).warehouse, file, fmt, set_name=set_name)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"imported {len(result.items)} questions")
    for entry in result.log:
        click.echo(f"  {entry}")
    _report_qa_change(ctx, result.changed_filings, f"finrag qa import {os.path.basename(file)}")


@qa.command("generate")
@click.argument("filing_id", callback=lambda c, p, v: _valid_filing_ids(c, p, v))
@click.option("--model", required=True,
              help="A name in assets_config/models.yaml (local-0.5b, local-1.5b, gpt-4o-mini, ...) or any litellm "
                   "model string (openai/gpt-4o, anthropic/..., ollama/...).")
@click.option("--n", "n", type=click.IntRange(1, 1000), default=None,
              help="Chunks to sample, one model call each (default: qa.yaml llm.n_chunks).")
@click.option("--dry-run", is_flag=True, help="Print the kept questions without writing them.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def qa_generate(ctx, filing_id, model, n, dry_run, as_json) -> None:
    """LLM-written questions for one ingested filing, through the model-free set's filters (figures and
    quote in the evidence, passage-dependent, answer in the question, duplicates of the filing's
    stored questions), with phrasing leakage measured. Written to qa.items (generator "llm:<model>",
    replacing that model's earlier questions on the filing)."""
    from finrag_pipeline.core.catalog import load_filing
    from finrag_pipeline.core.llm.client import LLMClient
    from finrag_pipeline.core.qa.config import load_qa_config
    from finrag_pipeline.core.qa.generate import generate_llm_set
    from finrag_pipeline.core.records import load_chunks, load_pages, load_qa_items
    from finrag_pipeline.core.warehouse import Warehouse, rows_of

    paths = _paths(ctx.obj["home"])
    wh = Warehouse(paths.warehouse)
    try:
        client = LLMClient.from_registry(model, cache_dir=paths.llm_cache_dir)
        if reason := client.unavailable_reason():  # before anything is read: one line, the install command
            raise click.ClickException(reason)
        meta = load_filing(wh, filing_id)
    except (KeyError, ValueError) as exc:
        raise click.ClickException(str(exc).strip("'\"")) from None
    pages, chunks = load_pages(wh, filing_id), load_chunks(wh, filing_id)
    if not chunks:
        raise click.ClickException(f"{filing_id} has no chunks yet (finrag ingest it first)")
    result = generate_llm_set(meta, pages, chunks, client, load_qa_config(), n=n,
                              existing=load_qa_items(wh, filing_id, accepted_only=False))
    generator = f"llm:{client.name}"
    if not dry_run:
        wh.replace_rows("qa.items", rows_of(result.items), where={"filing_id": filing_id, "generator": generator})
        wh.replace_rows("qa.generation_log", result.log_rows(filing_id),
                        where={"filing_id": filing_id, "generator": generator})
    calls = sum(e["count"] for e in result.log if e["reason"].startswith("call:"))
    failed = sum(e["count"] for e in result.log if e["reason"].startswith("call:") and e["reason"] != "call:ok")
    if as_json:
        _emit({"filing_id": filing_id, "generator": generator, "written": not dry_run, "calls": calls,
               "kept": [{"qa_id": i.qa_id, "question": i.question, "answer": i.reference_answer,
                         "question_type": i.question_type,
                         "evidence": [[{"chunk_id": p.chunk_id, "page": p.page} for p in g] for g in i.evidence],
                         "leakage": (i.metadata.get("leakage") or {}).get("score")} for i in result.items],
               "log": result.log}, True)
    else:
        click.echo(f"{generator} on {filing_id}: {calls} calls, {len(result.items)} questions kept"
                   f"{' (dry run: nothing written)' if dry_run else ' -> qa.items'}")
        for e in result.log:
            if e["stage"] != "final":
                click.echo(f"  {e['stage']}: {e['reason']} = {e['count']}")
        for i in result.items:
            click.echo(f"  [{i.question_type}] {i.question} -> {i.reference_answer} (p.{i.evidence[0][0].page})")
    if calls and failed == calls:
        raise click.ClickException(f"every call to {model} failed (see the log above): check the model name, "
                                   "its API key or `make install-local-llm`")


@qa.command("export")
@click.argument("filing_id", callback=lambda c, p, v: _valid_filing_ids(c, p, v))
@click.option("--out", type=click.Path(dir_okay=False), required=True)
@click.pass_context
def qa_export(ctx, filing_id, out) -> None:
    """Export a filing's QA set to CSV for review (decision column: accept / reject / edit)."""
    from finrag_pipeline.core.qa.review import export_review_csv
    from finrag_pipeline.core.records import load_qa_items

    items = load_qa_items(_session(ctx).warehouse, filing_id, accepted_only=False)
    click.echo(f"{len(items)} questions -> {export_review_csv(items, out)}")


@qa.command("review")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--reviewer", default=lambda: os.environ.get("USER", ""), show_default="$USER")
@click.pass_context
def qa_review(ctx, file, reviewer) -> None:
    """Apply a reviewed CSV: accepted, rejected and edited questions, with the review recorded."""
    from finrag_pipeline.core.qa.review import import_review_csv
    from finrag_pipeline.core.records import load_qa_items
    from finrag_pipeline.core.warehouse import rows_of

    wh = _session(ctx).warehouse
    items = load_qa_items(wh, accepted_only=False)
    updated, reviews = import_review_csv(file, items, default_reviewer=reviewer)
    # import_review_csv returns every item; write back only the reviewed ones, in one transaction
    reviewed = {r["qa_id"] for r in reviews}
    changed = [item for item in updated if item.qa_id in reviewed]
    if changed:
        wh.replace_rows("qa.items", rows_of(changed), where={"qa_id": sorted(reviewed)})
    if reviews:
        with wh.connect() as con:
            con.executemany("INSERT INTO qa.reviews (qa_id, decision, reviewer, note, before, after) "
                            "VALUES (?, ?, ?, ?, ?, ?)",
                            [[r["qa_id"], r["decision"], r["reviewer"], r.get("note"), r.get("before"),
                              r.get("after")] for r in reviews])
    click.echo(f"{len(changed)} questions updated, {len(reviews)} reviews recorded")
    _report_qa_change(ctx, [item.filing_id for item in changed], f"finrag qa review {os.path.basename(file)}")


@main.group()
def score() -> None:
    """How far the answer scores can be trusted: agreement with answers people graded."""


@score.command("agreement")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--set-name", default=None, help="Name of the set in eval.answer_agreement (default: the file's stem).")
@click.option("--judge", "judge_model", default=None,
              help="Also grade with the rubric judge on this models.yaml model (cached, seeded, cost metered).")
@click.option("--seed", default=0, show_default=True, help="Decoding seed of the judge.")
@click.option("--no-write", is_flag=True, help="Print the figures only; leave eval.answer_agreement as it is.")
@click.option("--disagreements", default=0, show_default=True, help="Print this many answers where the scorer and "
              "the label disagree.")
@click.option("--build-marts", is_flag=True, help="Then run the build_marts job (mart_answer_agreement, the "
              "analysts' snapshot, the report), as `finrag ingest` does after evaluating.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def score_agreement(ctx, file, set_name, judge_model, seed, no_write, disagreements, build_marts, as_json) -> None:
    """Score every answer of a labelled answer set (JSONL/CSV: question or qa_id, reference, answer, label
    Correct/Incorrect/Refusal, optional system, split, kind) with the project's scorer, and report
    coverage, agreement, Cohen's kappa, false accepts/rejects, the confusion and system-level Kendall tau,
    per split. Verdicts go to eval.answer_agreement (mart_answer_agreement, the report)."""
    from finrag_pipeline.core.evaluation import human_agreement as ha
    from finrag_pipeline.core.warehouse import Warehouse

    paths = _paths(ctx.obj["home"])
    judge = None
    if judge_model:
        from finrag_pipeline.core.evaluation.judge import RubricJudge

        judge = RubricJudge.from_model(judge_model, seed=seed)
    try:
        name, verdicts, summ = ha.score_labelled_set(Warehouse(paths.warehouse), file, set_name=set_name, judge=judge,
                                                     write=not no_write)
    except ha.LabelledSetError as exc:
        raise click.ClickException(str(exc)) from exc
    if build_marts and not no_write:
        from finrag_pipeline.defs.local_runs import get_instance, run_marts_build

        os.environ["FINRAG_HOME"] = str(paths.home)  # the code location's resources read it
        os.environ.setdefault("DAGSTER_HOME", str(paths.dagster_home))
        from finrag_pipeline.definitions import defs

        built = run_marts_build(defs, get_instance(paths), paths, progress=lambda m: click.echo(m, err=True))
        if built.failed:
            raise click.ClickException(f"building the marts failed ({built.failed['marts']}); dbt log: "
                                       f"{paths.logs_dir / 'build_marts.log'}")
    if as_json:
        _emit({"set_name": name, "summaries": summ, "judge": judge.meter() if judge else None}, True)
        return
    click.echo(f"{len(verdicts)} answers of {name!r}" + ("" if no_write else " -> eval.answer_agreement")
               + ("" if no_write or build_marts else " (mart_answer_agreement and the report follow the next marts "
                                                     "build: --build-marts runs it now)"))
    click.echo(ha.summary_markdown(summ))
    overall = summ[0]
    click.echo("\nlabel x scorer (all answers):\n" + ha.confusion_markdown(overall))
    if overall["system_kendall_tau_b"] is not None or overall["system_note"]:
        click.echo("\nsystems (people: share Correct; scorer: mean over decided answers):")
        for srow in overall["systems"]:
            mean = "n/a" if srow["scorer_mean"] is None else f"{srow['scorer_mean']:.2f}"
            click.echo(f"  {srow['system']:<22} people {srow['human_correct']:.2f}  scorer {mean}  "
                       f"({srow['n_decided']}/{srow['n']} decided)")
    if judge is not None:
        click.echo("\n" + ha.judge_markdown(overall))
        click.echo(f"judge meter: {judge.meter()}")
    shown = [v for v in verdicts if v["agrees"] is False][:disagreements]
    for v in shown:
        click.echo(f"\n[{v['answer_id']}] {v['label']} vs scorer {v['scorer_decision']}: {v['scorer_reason']}\n"
                   f"  Q: {v['question']}\n  R: {v['reference']}\n  A: {_snippet(v['answer'], 300)}")


def run() -> None:
    """Console entry point: a warehouse lock held too long is one line on stderr, not a traceback."""
    from finrag_pipeline.core.warehouse import WarehouseBusy
    from finrag_pipeline.defs.marts.project import prepare_manifest

    prepare_manifest()  # the code location reads dbt's manifest and never parses on import: dbt parse here
    try:
        main(standalone_mode=True)
    except WarehouseBusy as exc:
        click.echo(f"finrag: {exc}", err=True)
        sys.exit(75)  # EX_TEMPFAIL: try again later


if __name__ == "__main__":
    run()
