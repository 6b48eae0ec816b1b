"""Exact arithmetic over line items: "operating_income / revenue", "365 * avg(inventory) / cost_of_revenue".

A formula is parsed once into a small tree (Python's own expression grammar, restricted to
+ - * / unary minus, numbers, names and the functions below); ``evaluate`` computes it with
``decimal.Decimal`` from values a resolver supplies, and records every input it used. At fiscal year Y:

* ``avg(x)`` = (x at Y + x at Y-1) / 2: the average of two balance-sheet dates;
* ``change(x)`` = x at Y - x at Y-1 ("change in inventory");
* ``lag(x, n)`` = x at Y-n ("FY2016 accounts payable" in a FY2017 question);
* ``mean(x, n)`` = the mean of x at Y, Y-1 .. Y-n+1 ("3 year average of capex as a % of revenue");
* ``cagr(x, n)`` = (x at Y / x at Y-n) ** (1/n) - 1: the compound annual growth rate over n years;
* ``abs(x)``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, DivisionByZero, InvalidOperation, localcontext

FUNCTIONS = ("avg", "abs", "change", "lag", "mean", "cagr")
_ARITY = {"avg": 1, "abs": 1, "change": 1, "lag": 2, "mean": 2, "cagr": 2}  # lag/mean: the 2nd argument is a whole number


class FormulaError(ValueError):
    """A formula that cannot be parsed or computed (unknown function, division by zero)."""


class MissingInput(LookupError):
    """An input of the formula is not in the filing: ``name`` for ``fiscal_year``."""

    def __init__(self, name: str, fiscal_year: int):
        super().__init__(f"{name} for FY{fiscal_year}")
        self.name = name
        self.fiscal_year = fiscal_year


@dataclass(frozen=True)
class Formula:
    text: str
    tree: ast.expr

    @property
    def names(self) -> list[str]:
        seen: dict[str, None] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id not in FUNCTIONS:
                seen.setdefault(node.id, None)
        return list(seen)

    def uses_average(self) -> bool:
        return any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "avg" for n in ast.walk(self.tree))


def parse_formula(text: str) -> Formula:
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise FormulaError(f"cannot parse formula {text!r}: {exc.msg}") from exc
    for node in ast.walk(tree):
        ok = isinstance(node, ast.BinOp | ast.UnaryOp | ast.Name | ast.Constant | ast.Call | ast.Load
                        | ast.Add | ast.Sub | ast.Mult | ast.Div | ast.USub | ast.UAdd)
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS
                                               and len(node.args) == _ARITY[node.func.id] and not node.keywords
                                               and all(_whole(a) for a in node.args[1:])):
            ok = False
        if isinstance(node, ast.Constant) and not isinstance(node.value, int | float):
            ok = False
        if not ok:
            raise FormulaError(f"formula {text!r}: {type(node).__name__} is not allowed "
                               f"(only + - * /, numbers, line items, {', '.join(FUNCTIONS)})")
    return Formula(text.strip(), tree)


def _whole(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and 0 <= node.value <= 20


Resolver = Callable[[str, int], Decimal]  # (line item, fiscal year) -> value in base units; raises MissingInput


def evaluate(formula: Formula, fiscal_year: int, resolve: Resolver) -> Decimal:
    """The formula's value at ``fiscal_year`` with exact decimals (28 significant digits)."""
    with localcontext() as ctx:
        ctx.prec = 28
        try:
            return _eval(formula.tree, fiscal_year, resolve)
        except (DivisionByZero, InvalidOperation, ZeroDivisionError) as exc:
            raise FormulaError(f"{formula.text}: division by zero") from exc


def _eval(node: ast.expr, year: int, resolve: Resolver) -> Decimal:
    if isinstance(node, ast.Constant):
        return Decimal(str(node.value))
    if isinstance(node, ast.Name):
        return resolve(node.id, year)
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, year, resolve)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Call):
        fn = node.func.id  # type: ignore[attr-defined]
        if fn == "abs":
            return abs(_eval(node.args[0], year, resolve))
        if fn == "change":
            return _eval(node.args[0], year, resolve) - _eval(node.args[0], year - 1, resolve)
        if fn == "lag":
            return _eval(node.args[0], year - node.args[1].value, resolve)  # type: ignore[attr-defined]
        if fn == "cagr":
            n = node.args[1].value  # type: ignore[attr-defined]
            end, start = _eval(node.args[0], year, resolve), _eval(node.args[0], year - n, resolve)
            if n < 1 or start <= 0 or end < 0:
                raise FormulaError("a compound growth rate needs n >= 1 and positive values")
            return (end / start) ** (Decimal(1) / Decimal(n)) - 1
        if fn == "mean":
            n = node.args[1].value  # type: ignore[attr-defined]
            if n < 1:
                raise FormulaError("mean over zero years")
            return sum((_eval(node.args[0], year - i, resolve) for i in range(n)), Decimal(0)) / n
        return (_eval(node.args[0], year, resolve) + _eval(node.args[0], year - 1, resolve)) / 2
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, year, resolve), _eval(node.right, year, resolve)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if b == 0:
            raise FormulaError("division by zero")
        return a / b
    raise FormulaError(f"unsupported node {type(node).__name__}")


def calculate(expression: str) -> Decimal:
    """A pure-number expression ("(12248 - 24879) / 24879 * 100") computed exactly: the LLM tool."""
    formula = parse_formula(expression)
    if formula.names:
        raise FormulaError(f"calculate takes numbers only, got names {formula.names}")
    return evaluate(formula, 0, lambda name, year: Decimal(0))
