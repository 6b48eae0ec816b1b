"""The calculator's tools for LLMs: line-item lookups and exact arithmetic.

* :class:`AnalystTools` runs the two tools (``lookup_line_item``, ``calculate``) over the fact layer
  and remembers every figure it handed out under a reference ("F1", "F2", ...): the model cites
  those references, and each maps back to its table-row chunk / XBRL fact and page.
* :class:`ToolCallingAnswerer` gives the tools to a model that supports function calling (litellm
  ``tools=``) and loops until the model answers ``{"answer", "refs", "abstain"}``.
* :class:`StructuredPromptAnswerer` is for models without function calling (the local GGUF): the
  calculator plans and runs the same lookups and arithmetic, and the model gets them as a numbered
  fact sheet in one prompt and answers the same JSON.

Both return an ``AnswerResult`` scored like any answer: an answer citing no reference, or a
reference that was never handed out, is ``invalid_output``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from finrag_pipeline.core.analyst.calculator import CalculatorAnswerer
from finrag_pipeline.core.analyst.formula import FormulaError, calculate
from finrag_pipeline.core.analyst.model import FactValue
from finrag_pipeline.core.analyst.plan import resolve_term
from finrag_pipeline.core.answering import AnswerResult, Citation, read_answer_json
from finrag_pipeline.core.models import Hit
from finrag_pipeline.core.scoring.response_states import from_client_state

TOOL_SPECS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "lookup_line_item",
        "description": "Look up one financial statement line item (e.g. 'revenue', 'operating income', "
                       "'total assets', 'inventories') of a company for a fiscal year, as filed in its 10-K. "
                       "Returns the value with unit and scale, and a reference (ref) to cite.",
        "parameters": {"type": "object", "properties": {
            "company": {"type": "string", "description": "company name or ticker, e.g. 'Microsoft' or 'MSFT'"},
            "fiscal_year": {"type": "integer", "description": "the issuer's fiscal year label, e.g. 2022"},
            "line_item": {"type": "string", "description": "the line item in words"}},
            "required": ["company", "fiscal_year", "line_item"]}}},
    {"type": "function", "function": {
        "name": "calculate",
        "description": "Evaluate an arithmetic expression exactly (numbers, + - * / and parentheses), "
                       "e.g. '(12248 - 24879) / 24879 * 100'.",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                       "required": ["expression"]}}},
]

ANSWER_CONTRACT = ('When you have the figure, reply with JSON only: {"answer": "<one figure with its unit and '
                   'period>", "refs": ["F1", ...], "abstain": false}, citing the refs of every looked-up '
                   'value you used. If a needed value is not found, reply {"answer": "", "refs": [], '
                   '"abstain": true}.')
TOOL_SYSTEM = ("You are a financial analyst answering questions about 10-K filings. Use lookup_line_item for "
               "every figure and calculate for every computation; never use a number you did not look up. "
               + ANSWER_CONTRACT)


class AnalystTools:
    """The tools over one calculator's fact store; ``facts`` holds every value handed out, by ref."""

    def __init__(self, calculator: CalculatorAnswerer, hits: Sequence[Hit] = ()) -> None:
        self.calculator = calculator
        self.hits = list(hits)
        self.facts: dict[str, FactValue] = {}
        self.calls: list[dict[str, Any]] = []

    def add(self, fact: FactValue) -> str:
        for ref, f in self.facts.items():
            if f is fact or (f.source == fact.source and f.period == fact.period):
                return ref
        ref = f"F{len(self.facts) + 1}"
        self.facts[ref] = fact
        return ref

    def lookup_line_item(self, company: str, fiscal_year: int, line_item: str) -> dict[str, Any]:
        concept = resolve_term(line_item, self.calculator.lexicon)
        if concept is None:
            return {"error": f"unknown line item {line_item!r}"}
        companies = self.calculator.parser.companies_in(company or "")
        filings = self.calculator._candidate_filings(companies, [int(fiscal_year)], self.hits)
        if not filings:
            return {"error": f"no filing of {company!r} in the corpus"}
        for filing in filings:
            fact = filing.lookup(concept, int(fiscal_year))
            if fact is not None:
                ref = self.add(fact)
                return {"ref": ref, "line_item": fact.label, "fiscal_year": fact.period, "value": str(fact.value),
                        "unit": fact.unit, "scale": fact.scale, "page": fact.source.page,
                        "filing_id": fact.filing_id}
        return {"error": f"{concept.key} for FY{fiscal_year} is not in the filing"}

    def calculate(self, expression: str) -> dict[str, Any]:
        try:
            return {"expression": expression, "result": str(calculate(expression))}
        except FormulaError as exc:
            return {"error": str(exc)}

    def run(self, name: str, arguments: str | dict[str, Any]) -> dict[str, Any]:
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
        except json.JSONDecodeError as exc:
            out: dict[str, Any] = {"error": f"arguments are not JSON: {exc}"}
        else:
            if name == "lookup_line_item":
                try:
                    out = self.lookup_line_item(str(args.get("company", "")), int(args["fiscal_year"]),
                                                str(args["line_item"]))
                except (KeyError, TypeError, ValueError) as exc:
                    out = {"error": f"bad arguments: {exc}"}
            elif name == "calculate":
                out = self.calculate(str(args.get("expression", "")))
            else:
                out = {"error": f"unknown tool {name!r}"}
        self.calls.append({"tool": name, "arguments": arguments, "result": out})
        return out

    def result(self, data: Any, raw: str, base: dict[str, Any]) -> AnswerResult:
        """The model's final JSON -> AnswerResult with the cited refs resolved to (filing, page, chunk)."""
        details = {"tool_calls": self.calls, "facts": {r: f.as_dict() for r, f in self.facts.items()}}
        checked = read_answer_json(data, raw, "refs", base, details)
        if isinstance(checked, AnswerResult):
            return checked
        answer, refs = checked
        citations: list[Citation] = []
        for ref in refs:
            fact = self.facts.get(str(ref).strip())
            if fact is None:
                return AnswerResult(answer, [], "invalid_output", error=f"ref {ref!r} was never looked up",
                                    details=details, **base)
            cit = (fact.filing_id, int(fact.source.page or 0), fact.source.chunk_id)
            if cit not in citations:
                citations.append(cit)
        return AnswerResult(answer, citations, "answered", details={**details, "refs": refs}, **base)


def _usage(resp: Any) -> tuple[int, int]:
    usage = getattr(resp, "usage", None)
    return int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)


class ToolCallingAnswerer:
    """An LLM with function calling answers through the calculator's tools (litellm ``tools=``)."""

    def __init__(self, model: str, calculator: CalculatorAnswerer, *, max_rounds: int = 6,
                 name: str | None = None, **params: Any) -> None:
        self.model = model
        self.calculator = calculator
        self.max_rounds = max_rounds
        self.params = params
        self.name = name or f"{model}:tools"

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        from finrag_pipeline.core.llm.client import import_litellm, local_unavailable_reason

        if reason := local_unavailable_reason(self.model):  # one line naming the install command
            return AnswerResult("", [], "backend_error", error=reason)
        litellm = import_litellm()
        tools = AnalystTools(self.calculator, hits)
        period = f" (asked period: {', '.join(periods)})" if periods else ""
        messages: list[dict[str, Any]] = [{"role": "system", "content": TOOL_SYSTEM},
                                          {"role": "user", "content": f"QUESTION: {question}{period}"}]
        t0 = time.perf_counter()
        p_tok = c_tok = 0
        for _ in range(self.max_rounds):
            try:
                resp = litellm.completion(model=self.model, messages=messages, tools=TOOL_SPECS,
                                          tool_choice="auto", num_retries=0, **self.params)
            except Exception as exc:  # noqa: BLE001 - a backend failure is a state, scored 0
                return AnswerResult("", [], "backend_error", p_tok, c_tok, _ms(t0), error=f"{type(exc).__name__}: {exc}"[:500],
                                    details={"tool_calls": tools.calls})
            p, c = _usage(resp)
            p_tok, c_tok = p_tok + p, c_tok + c
            msg = resp.choices[0].message
            calls = getattr(msg, "tool_calls", None) or []
            if not calls:
                from finrag_pipeline.core.llm.json_extract import extract_json

                text = msg.content or ""
                base = {"prompt_tokens": p_tok, "completion_tokens": c_tok, "latency_ms": _ms(t0)}
                return tools.result(extract_json(text), text, base)
            messages.append({"role": "assistant", "content": msg.content,
                             "tool_calls": [{"id": tc.id, "type": "function",
                                             "function": {"name": tc.function.name,
                                                          "arguments": tc.function.arguments}} for tc in calls]})
            for tc in calls:
                out = tools.run(tc.function.name, tc.function.arguments)
                messages.append({"role": "tool", "tool_call_id": tc.id, "name": tc.function.name,
                                 "content": json.dumps(out)})
        return AnswerResult("", [], "invalid_output", p_tok, c_tok, _ms(t0),
                            error=f"no final answer after {self.max_rounds} rounds", details={"tool_calls": tools.calls})


STRUCTURED_SYSTEM = ("You answer questions about 10-K filings from a FACT SHEET: looked-up statement values "
                     "(each with a ref) and a calculator result. Use only the fact sheet. " + ANSWER_CONTRACT)


def fact_sheet(tools: AnalystTools, calc_result: AnswerResult) -> str:
    lines = [f"[{ref}] {f.filing_id} {f.period} {f.label} = {f.value:,} "
             f"{f.unit or ''}{'' if f.scale == 1 else ' x ' + format(f.scale, ',')} (page {f.source.page})"
             for ref, f in tools.facts.items()]
    d = calc_result.details
    if calc_result.response_state == "answered":
        lines.append(f"CALCULATOR: {d['formula']} ({d['operation']}) = {d['figure']}")
    else:
        lines.append(f"MISSING: {d.get('reason', 'no figure found')}")
    return "\n".join(lines)


class StructuredPromptAnswerer:
    """For models without function calling: the calculator runs the lookups and the arithmetic, the
    model answers from the resulting fact sheet (one prompt, JSON out), citing refs."""

    def __init__(self, client: Any, calculator: CalculatorAnswerer, *, max_tokens: int = 160,
                 name: str | None = None) -> None:
        self.client = client
        self.calculator = calculator
        self.max_tokens = max_tokens
        self.name = name or f"{getattr(client, 'name', 'llm')}:structured"

    def messages(self, question: str, sheet: str) -> list[dict[str, str]]:
        example = ('FACT SHEET:\n[F1] X-2022-10K FY2022 Net sales = 100 USD x 1,000,000 (page 4)\n'
                   'CALCULATOR: revenue (value) = $100 million\nQUESTION: What were net sales in 2022?\n'
                   '{"answer": "$100 million in FY2022", "refs": ["F1"], "abstain": false}')
        return [{"role": "system", "content": STRUCTURED_SYSTEM + "\n\nExample:\n" + example},
                {"role": "user", "content": f"FACT SHEET:\n{sheet}\nQUESTION: {question}"}]

    def answer(self, question: str, hits: Sequence[Hit], periods: Sequence[str] | None = None) -> AnswerResult:
        t0 = time.perf_counter()
        calc = self.calculator.answer(question, hits, periods)
        if "formula" not in calc.details:
            return calc  # nothing to compute from (narrative question or no plan): the calculator's own state
        tools = AnalystTools(self.calculator, hits)
        for i in calc.details.get("inputs", []):
            tools.facts[f"F{len(tools.facts) + 1}"] = _fact_from_dict(i, calc.details["filing_id"])
        if calc.response_state != "answered":
            return calc  # a missing input: abstain, naming it, without asking the model to guess
        resp = self.client.complete(self.messages(question, fact_sheet(tools, calc)), json=True,
                                    temperature=0.0, max_tokens=self.max_tokens)
        base = {"prompt_tokens": int(resp.prompt_tokens or 0), "completion_tokens": int(resp.completion_tokens or 0),
                "latency_ms": _ms(t0)}
        if resp.state != "ok":
            return AnswerResult(resp.text or "", [], from_client_state(resp.state), error=resp.error or resp.state, **base)
        out = tools.result(resp.parsed_json, resp.text, base)
        out.details["calculator"] = {k: calc.details[k] for k in ("formula", "figure", "inputs")}
        return out


def _fact_from_dict(d: dict[str, Any], filing_id: str) -> FactValue:
    from datetime import date

    from finrag_pipeline.core.analyst.model import FactSource

    src = dict(d["source"])
    src["dimensions"] = tuple(sorted((src.get("dimensions") or {}).items()))
    return FactValue(filing_id, d["line_item"], d["label"], d["period"],
                     date.fromisoformat(d["period_end"]) if d.get("period_end") else None, Decimal(d["value"]),
                     d["unit"], d["scale"], d["value_text"], FactSource(**src))


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)
