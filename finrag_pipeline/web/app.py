"""`finrag serve`: a Starlette app, Jinja2 templates rendered on the server, htmx for partial updates.

Pages: leaderboard (/), a configuration's questions (/questions), question view (/question/<qa_id>),
failure browser (/failures), ask (/ask), corpus (/corpus); page images at /page/<filing>/<n>.png.
Everything shown from filings and questions goes through Jinja's autoescape (no ``|safe`` anywhere):
a filing is untrusted input. Charts travel as JSON in an escaped data attribute and are drawn by
plotly.js (served from the plotly package); htmx is vendored in static/ (no build step).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.reporting import report
from finrag_pipeline.core.reporting.serve import REPORT_FILE
from finrag_pipeline.core.scoring.metric_registry import HEADLINE_RETRIEVAL_METRICS
from finrag_pipeline.web import queries as q
from finrag_pipeline.web.explorer import Explorer

HERE = Path(__file__).parent
DEFAULT_PORT = 8765
ASK_DEFAULTS = {"retriever": "hybrid_rrf", "k": 5, "model": "extractive"}


# ---------------------------------------------------------------------------------------------
# Formatting helpers for templates


def _calc_explanation(details: Any) -> Any:
    """The calculator's plan and operands of an answer (core.analyst.calculator.explanation), or None."""
    from finrag_pipeline.core.analyst import explanation

    return explanation(details) if isinstance(details, dict) else None


def _num(v: Any, digits: int = 3) -> str:
    if _is_missing(v) or v is pd.NA:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _ci(row: Any, metric: str) -> str:
    return report._fmt_ci(row, metric) or "–"


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def build_templates() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["num"] = _num
    env.filters["ms"] = lambda v: "–" if _is_missing(v) else f"{float(v):.1f}"
    env.filters["pct"] = lambda v: "–" if _is_missing(v) else f"{float(v):.0%}"
    env.filters["calc_explanation"] = _calc_explanation
    env.globals["ci"] = _ci
    env.globals["vs_best"] = report._fmt_vs_best
    env.globals["missing"] = _is_missing
    return env


# ---------------------------------------------------------------------------------------------
# Charts (figure JSON, drawn client-side)


def leaderboard_figures(board: pd.DataFrame) -> list[str]:
    """One grouped bar chart per scope and k: page metrics with their intervals (the report's bars)."""
    figs = []
    if board.empty:
        return figs
    metrics = [m for m in HEADLINE_RETRIEVAL_METRICS if f"{m}_mean" in board]
    for (scope, k), g in board.groupby(["scope", "k"], sort=True):
        x = [report._config_label(r) for _, r in g.iterrows()]
        fig = go.Figure([report._bar_with_ci(g, x, m, m) for m in metrics])
        fig.update_layout(title=f"scope={scope}, k={k} (95% intervals)", barmode="group", height=340,
                          template="plotly_white", margin=dict(l=40, r=10, t=40, b=90),
                          yaxis=dict(range=[0, 1.05]))
        figs.append(pio.to_json(fig, validate=False))
    return figs


# ---------------------------------------------------------------------------------------------
# App


def create_app(home: str | None = None) -> Starlette:
    paths = FinragPaths.from_env(home)
    explorer = Explorer(paths)
    templates = build_templates()

    def render(request: Request, name: str, status_code: int = 200, **ctx: Any) -> HTMLResponse:
        snap = explorer.snapshot
        try:
            state = q.corpus_state(snap)
        except q.SnapshotMissing:
            state = None
        html = templates.get_template(name).render(request=request, state=state, snapshot_path=str(snap.path),
                                                   generation=snap.generation, **ctx)
        return HTMLResponse(html, status_code=status_code)

    def missing(request: Request, exc: Exception) -> HTMLResponse:
        return render(request, "missing.html", status_code=503, message=str(exc))

    def index(request: Request) -> Response:
        return RedirectResponse("/leaderboard")

    def leaderboard(request: Request) -> Response:
        p = request.query_params
        filters = {"scope": p.get("scope") or None, "k": _int(p.get("k")),
                   "question_type": p.get("question_type") or None, "company": p.get("company") or None,
                   "fiscal_year": _int(p.get("fiscal_year"))}
        snap = explorer.snapshot
        try:
            # the snapshot is immutable until replaced: a filtered board and its charts are built once
            def build() -> tuple[pd.DataFrame, str, list[str]]:
                board, source = q.leaderboard(snap, **filters)
                return board, source, leaderboard_figures(board)

            board, source, figures = snap.cached(("leaderboard", tuple(filters.items())), build)
            options = q.filter_options(snap)
            answers = q.answer_quality(snap)
        except q.NOT_READY as exc:
            return missing(request, exc)
        metrics = [m for m in q.BOARD_METRICS if f"{m}_mean" in board.columns]
        answer_metrics = [m for m in q.ANSWER_BOARD_METRICS if f"{m}_mean" in answers.columns]
        template = "_leaderboard_table.html" if request.headers.get("HX-Request") else "leaderboard.html"
        return render(request, template, board=board.to_dict("records"), metrics=metrics, source=source,
                      options=options, filters=filters, figures=figures, answers=answers.to_dict("records"),
                      answer_metrics=answer_metrics)

    def questions(request: Request) -> Response:
        config, scope = request.query_params.get("config", ""), request.query_params.get("scope") or None
        try:
            rows = q.config_questions(explorer.snapshot, config, scope)
        except q.NOT_READY as exc:
            return missing(request, exc)
        return render(request, "questions.html", config=config, scope=scope, rows=rows.to_dict("records"))

    def question(request: Request) -> Response:
        qa_id = request.path_params["qa_id"]
        p = request.query_params
        snap = explorer.snapshot
        try:
            item = q.qa_item(snap, qa_id)
        except q.NOT_READY as exc:
            return missing(request, exc)
        if item is None:
            return render(request, "missing.html", status_code=404, message=f"no question {qa_id!r} in the snapshot")
        results = q.question_results(snap, qa_id)
        scopes = sorted(results["scope"].dropna().unique().tolist()) if not results.empty else []
        scope = p.get("scope") or ("filing" if "filing" in scopes else (scopes[0] if scopes else "filing"))
        in_scope = results[results["scope"] == scope] if not results.empty else results
        available = sorted(in_scope["config_name"].unique().tolist()) if not in_scope.empty else []
        chosen = [c for c in p.getlist("config") if c in available]
        if not chosen and available:  # the configuration that scored best and the one that scored worst
            order = in_scope.sort_values(["ndcg_page", "config_name"], ascending=[False, True], na_position="last")
            chosen = list(dict.fromkeys([order["config_name"].iloc[0], order["config_name"].iloc[-1]]))
        config_rows = [in_scope[in_scope["config_name"] == c].iloc[0].to_dict() for c in chosen]
        runs = explorer.config_runs(item, config_rows, scope)
        answers = q.question_answers(snap, qa_id)
        answer = next((a for a in answers if a.get("config_name") == p.get("answer")), answers[0] if answers else None)
        # the page: asked for, else the first evidence page, else the first hit's
        evidence = [(pl.filing_id, pl.page, pl.chunk_id) for g in item.evidence for pl in g]
        first_hit = next((hv.hit for r in runs for hv in r.hits), None)
        filing_id = p.get("filing") or (evidence[0][0] if evidence else (first_hit.filing_id if first_hit
                                                                         else item.filing_id))
        page_no = _int(p.get("page")) or (evidence[0][1] if evidence else (first_hit.page_start if first_hit else 1))
        marks = [("evidence", cid, f"evidence p.{pg}") for fid, pg, cid in evidence if fid == filing_id and pg == page_no]
        if answer:
            marks += [("cited", cid, f"cited p.{pg}") for fid, pg, cid in answer["citations"]
                      if fid == filing_id and pg == page_no]
        if runs:
            marks += [("hit", hv.hit.chunk_id, f"{runs[0].config_name} #{hv.hit.rank}") for hv in runs[0].hits
                      if hv.hit.filing_id == filing_id and hv.hit.page_start <= page_no <= hv.hit.page_end]
        page = explorer.page_view(filing_id, page_no, marks)
        pages_of_interest = sorted({(fid, pg) for fid, pg, _ in evidence}
                                   | {(hv.hit.filing_id, hv.hit.page_start) for r in runs for hv in r.hits}
                                   | ({(c[0], c[1]) for c in answer["citations"]} if answer else set()))
        return render(request, "question.html", item=item, scope=scope, scopes=scopes, available=available,
                      chosen=chosen, runs=runs, answers=answers, answer=answer, page=page,
                      pages_of_interest=pages_of_interest, evidence=evidence,
                      evidence_pages=list(dict.fromkeys((fid, pg) for fid, pg, _ in evidence)),
                      results=in_scope.to_dict("records"))

    def failures(request: Request) -> Response:
        scope = request.query_params.get("scope") or None
        try:
            missed = q.all_missed(explorer.snapshot, scope)
            split = q.disagreements(explorer.snapshot, scope=scope)
            worst = q.hardest(explorer.snapshot, scope)
            options = q.filter_options(explorer.snapshot)
        except q.NOT_READY as exc:
            return missing(request, exc)
        return render(request, "failures.html", missed=missed.to_dict("records"), split=split.to_dict("records"),
                      worst=worst.to_dict("records"),
                      scope=scope, options=options)

    def corpus(request: Request) -> Response:
        try:
            filings = q.corpus_filings(explorer.snapshot)
            log = q.ingest_log(explorer.snapshot)
            runs = q.last_runs(explorer.snapshot)
        except q.NOT_READY as exc:
            return missing(request, exc)
        return render(request, "corpus.html", filings=filings.to_dict("records"), log=log.to_dict("records"),
                      runs=runs.to_dict("records"))

    def _ask_side(p: Any, side: str) -> dict[str, Any]:
        return {"retriever": p.get(f"{side}_retriever") or ASK_DEFAULTS["retriever"],
                "k": _int(p.get(f"{side}_k")) or ASK_DEFAULTS["k"],
                "model": p.get(f"{side}_model") or ASK_DEFAULTS["model"],
                "overrides": [line.strip() for line in (p.get(f"{side}_overrides") or "").splitlines()
                              if line.strip()]}

    def ask(request: Request) -> Response:
        p = request.query_params
        question_text = (p.get("q") or "").strip()
        scope = p.get("scope") or "corpus"
        sides = {"a": _ask_side(p, "a"), "b": _ask_side(p, "b")}
        compare = p.get("compare") == "1"
        runs = []
        if question_text:
            for side in ("a", "b") if compare else ("a",):
                s = sides[side]
                runs.append(explorer.ask(question_text, s["retriever"], s["k"], scope, s["model"], s["overrides"]))
        try:
            filings = q.corpus_filings(explorer.snapshot)["filing_id"].tolist()
        except q.NOT_READY as exc:
            return missing(request, exc)
        template = "_ask_results.html" if request.headers.get("HX-Request") else "ask.html"
        return render(request, template, question=question_text, scope=scope, sides=sides, compare=compare,
                      runs=runs, retrievers=_retriever_names(), models=_model_names(), filings=filings)

    def filing_page(request: Request) -> Response:
        """One filing page with any chunks marked: ?evidence=ID&cited=ID&hit=ID (each repeatable)."""
        filing_id, page_no = request.path_params["filing_id"], request.path_params["page"]
        p = request.query_params
        marks = [(kind, cid, kind) for kind in ("evidence", "cited", "hit") for cid in p.getlist(kind) if cid]
        try:
            page = explorer.page_view(filing_id, page_no, marks)
        except q.NOT_READY as exc:
            return missing(request, exc)
        return render(request, "filing_page.html", page=page, query=str(request.url.query))

    def page_png(request: Request) -> Response:
        try:
            png = explorer.page_png(request.path_params["filing_id"], int(request.path_params["page"]))
        except (KeyError, ValueError) as exc:
            return Response(str(exc), status_code=404, media_type="text/plain")
        return Response(png, media_type="image/png", headers={"Cache-Control": "max-age=3600"})

    def state(request: Request) -> Response:
        """The corpus-state badge, polled by htmx: says when a newer snapshot than the page's exists."""
        shown = _int(request.query_params.get("shown"))
        return render(request, "_state.html", shown=shown)

    def plotly_js(request: Request) -> Response:
        from plotly.offline import get_plotlyjs

        return Response(_PLOTLY_JS.setdefault("js", get_plotlyjs()), media_type="application/javascript",
                        headers={"Cache-Control": "max-age=86400"})

    def html_report(request: Request) -> Response:
        """The HTML report at the path the Dagster UI links (eval_report), so that link works whether this
        explorer or `finrag report --serve` listens on the report port."""
        path = paths.reports_dir / REPORT_FILE
        if not path.is_file():
            return HTMLResponse("<p>No report yet: it is built with the marts (<code>finrag report</code>).</p>",
                                status_code=404)
        return FileResponse(path, media_type="text/html")

    class Refresh(BaseHTTPMiddleware):
        """Pick up a newly published snapshot before every request; time every response."""

        async def dispatch(self, request, call_next):
            t0 = time.perf_counter()
            explorer.refresh()
            response = await call_next(request)
            response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - t0) * 1000:.1f}"
            return response

    routes = [
        Route("/", index), Route("/leaderboard", leaderboard), Route("/questions", questions),
        Route("/question/{qa_id:path}", question), Route("/failures", failures), Route("/corpus", corpus),
        Route("/ask", ask), Route("/state", state), Route("/page/{filing_id}/{page:int}.png", page_png),
        Route("/filing/{filing_id}/{page:int}", filing_page),
        Route("/static/plotly.min.js", plotly_js), Route(f"/{REPORT_FILE}", html_report),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(Refresh)])
    app.state.explorer = explorer
    return app


_PLOTLY_JS: dict[str, str] = {}


def _int(v: Any) -> int | None:
    try:
        return int(v) if v not in (None, "") else None
    except (TypeError, ValueError):
        return None


def _retriever_names() -> list[str]:
    from finrag_pipeline.core.retrieval.config import load_retrievers

    try:
        return list(load_retrievers())
    except Exception:  # noqa: BLE001 - a broken retrievers.yaml: the ask form still offers the default
        return [ASK_DEFAULTS["retriever"]]


def _model_names() -> list[str]:
    from finrag_pipeline.core.llm.registry import load_model_registry

    try:
        return ["extractive", *load_model_registry().models]
    except Exception:  # noqa: BLE001
        return ["extractive"]


def warm_up(app: Starlette) -> None:
    """Load what the first requests would wait for (snapshot tables, the leaderboard, the indexes and
    the query embedder); `finrag serve` runs it in a background thread while the server starts."""
    explorer: Explorer = app.state.explorer
    try:
        explorer.refresh()
        q.leaderboard(explorer.snapshot)
        q.filter_options(explorer.snapshot)
        q.question_difficulty(explorer.snapshot)
        explorer.retriever(ASK_DEFAULTS["retriever"]).retrieve("total net sales", 1, None)
    except Exception:  # noqa: BLE001 - warming is best effort: the pages report real errors themselves
        pass


def serve(home: str | None = None, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    import threading

    import uvicorn

    app = create_app(home)
    threading.Thread(target=warm_up, args=(app,), daemon=True, name="finrag-warm-up").start()
    uvicorn.run(app, host=host, port=port, log_level="info")
