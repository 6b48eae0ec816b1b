"""Definitions and formulas written in a question, read into an expression over line items.

Analysts spell the metric out: "DPO is defined as 365 * (average accounts payable between FY2016 and
FY2017) / (FY2017 COGS + change in inventory)", "Define FCF as operating cash flow minus capex",
"capex as a % of revenue", "Unadjusted EBITDA less capex", "3 year average of capex as a % of revenue".
This module reads such text with a small recursive-descent parser (tokens: numbers, operator words,
parentheses, and operand phrases) into a formula tree over lexicon concept keys, rendered as a
``core/analyst/formula.py`` formula (which parses it again into Python's AST and evaluates it exactly):

    expression := term (("+" | "-") term)*          plus, minus, less, "+", "-"
    term       := factor (("*" | "/") factor)*      times, x, multiplied by, divided by, over, "as a % of"
    factor     := number | "(" expression ")" | "N year average of" factor | operand phrase

An operand phrase is a line item with what the analyst says about its period: "average X between
FY2016 and FY2017" / "average of X at the end of FY2021 and FY2022" -> ``avg(x)``, "change in X" ->
``change(x)``, "FY2016 X" in a FY2017 question -> ``lag(x, 1)``, "prior year X" -> ``lag(x, 1)``. The
line item is read through the lexicon (assets_config/lexicon.yaml: aliases, and the metrics' formula
table, so "EBITDA" inside a definition is ``(operating_income + depreciation_amortization)``); an outflow
(capex, dividends) is the amount paid, ``abs(x)``. An operand that is no line item raises ``PlanError``
naming it, so the answer abstains with the operand that is missing.

Statement hints ("primarily using the balance sheet", "based on the cash flow statement") and the
units asked ("in USD millions", "as a percentage", "times") are read here too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from finrag_pipeline.core.analyst.formula import FormulaError, parse_formula
from finrag_pipeline.core.analyst.labels import normalize_label
from finrag_pipeline.core.analyst.lexicon import Concept, Lexicon


class DefinitionError(ValueError):
    """Text that cannot be read as a formula over line items (names the part it could not read).
    ``operand``: the phrase that is no line item of the lexicon, when that is the reason."""

    def __init__(self, message: str, operand: str | None = None):
        super().__init__(message)
        self.operand = operand


# ---- statement hints and units ----------------------------------------------------------------

_STATEMENT_WORDS = (
    ("balance_sheet", r"balance\s+sheets?|statements?\s+of\s+financial\s+position"),
    ("income_statement", r"income\s+statements?|statements?\s+of\s+(?:consolidated\s+)?(?:operations|income|earnings)"
                         r"|p\s*&\s*l|profit\s+and\s+loss(?:\s+statement)?"),
    ("cash_flow", r"cash[\s-]+flows?\s+statements?|statements?\s+of\s+(?:consolidated\s+)?cash\s+flows?"
                  r"|cash[\s-]+flow\s+statement"),
)
_HINT_LEAD = (r"(?:using|use|based\s+on|from|per|according\s+to|in|on|within|inside|off(?:\s+of)?|as\s+(?:reported|shown|stated)\s+(?:in|on)"
              r"|look(?:ing)?\s+at|relying\s+on|via)")
STATEMENT_HINT_RE = re.compile(
    rf"\b(?:(?:primarily|mainly|only|solely|mostly|just)\s+)?{_HINT_LEAD}\s+(?:(?:the|its|their|a)\s+)?"
    r"(?:(?:company'?s?|firm'?s?)\s+)?(?:consolidated\s+)?(?:audited\s+)?"
    rf"(?P<what>{'|'.join(f'(?P<{k}>{p})' for k, p in _STATEMENT_WORDS)})",
    re.IGNORECASE)


def statement_hints(question: str) -> list[str]:
    """The statements a question points at, in order: "primarily using the balance sheet" ->
    ["balance_sheet"]; "from the P&L and the cash flow statement" -> both."""
    out: list[str] = []
    for m in STATEMENT_HINT_RE.finditer(question):
        key = next(k for k, _ in _STATEMENT_WORDS if m.group(k))
        if key not in out:
            out.append(key)
    # "the P&L and the cash flow statement": a second statement joined by "and"
    for m in re.finditer(r"\band\s+(?:the\s+)?(?P<what>" + "|".join(f"(?P<{k}>{p})" for k, p in _STATEMENT_WORDS)
                         + ")", question, re.IGNORECASE):
        if out:
            key = next(k for k, _ in _STATEMENT_WORDS if m.group(k))
            if key not in out:
                out.append(key)
    return out


def strip_statement_hints(text: str) -> str:
    return re.sub(r"\s+", " ", STATEMENT_HINT_RE.sub(" ", text)).strip()


_UNIT_WORDS = [
    ("percent", re.compile(r"\b(?:as|in|expressed\s+as|expressed\s+in)\s+(?:a\s+)?(?:percent(?:age)?s?|%)(?!\w)(?!\s+of)"
                           # "Answer as a percentage of total net sales": the instruction names the unit and its base
                           r"|\b(?:answer|express|give|report|state|show|present)(?:ed|ing)?\s+(?:it\s+|this\s+|the\s+(?:answer|result"
                           r"|figure)\s+)?as\s+(?:a\s+)?(?:percent(?:age)?|%)"
                           r"|\bin\s+(?:units\s+of\s+)?percents?\b|\bpercentage\s+terms\b"
                           r"|\bnearest\s+(?:whole\s+|tenth\s+of\s+a\s+)?percent(?:age\s+point)?\b", re.I)),
    ("ratio", re.compile(r"\b(?:in\s+)?times\b(?!\s+(?:the|its|average|\d))|\bas\s+a\s+(?:multiple|ratio)\b"
                         r"|\bexpressed\s+as\s+x\b", re.I)),
    ("days", re.compile(r"\bin\s+days\b|\bnumber\s+of\s+days\b", re.I)),
]


def unit_asked(question: str) -> str | None:
    """A result unit the question asks for in words ("as a percentage", "in times", "in days")."""
    for unit, pattern in _UNIT_WORDS:
        if pattern.search(question):
            return unit
    return None


# ---- the definition in the question ------------------------------------------------------------

# a full stop ends the definition, an abbreviation's does not ("net income attributable to Foot Locker, Inc. divided by")
_END = r"(?=\s*(?:[?;]|(?<!\bInc)(?<!\bCorp)(?<!\bCo)(?<!\bLtd)(?<!\bplc)(?<!\bS\.A)(?<!\bN\.V)\.(?:\s|$)|$|,\s*(?:in|rounded|round|expressed|reported|using|based|from|per|to|and\s+round"
_END += r"|give|answer|show|please|as\s+a\s+(?:percent|percentage|%|ratio|multiple)"
# "Taking its quick ratio as cash divided by current liabilities, does it have ...": the question that follows
_END += r"|(?:does|do|did|is|was|were|are|has|have|had|what|how|which|can|could|would|will|should)(?=\s)"
# "..., and a value above 1.0 as healthy": the threshold that follows is no part of the formula
_END += r"|and\s+(?:a|an|any)\s+(?:value|ratio|reading|figure|result)\s+(?:of\s+)?(?:above|over|below|under|at|more|less|greater|>|<))\b))"
# "Days inventory outstanding (DIO) = ...": an abbreviation in parentheses after the name defined
_ABBREVIATION = r"(?:\s*\(\s*[A-Za-z][A-Za-z&.\-]{1,9}\s*\))?"
_DEF_PATTERNS = [
    # "X is defined as D", "X are calculated as D", "X should be computed as D"
    re.compile(r"(?P<target>\b[\w&'()\-/ ]{2,80}?)\s+(?:is|are|be|was|were|being|gets|get)\s+(?:defined|calculated|computed"
               r"|measured|derived|determined|taken)\s+(?:as|by)\s*:?\s+(?P<body>.+?)" + _END, re.I),
    # "Define X as D", "defining X as D", "if you define it as D", "counting SG&A as D", "taking EBIT as D"
    re.compile(r"\b(?:define|defines|defining|defined|treat|treats|treating|count|counts|counting|take|taking|consider"
               r"|considers|considering)\s+"
               r"(?P<target>[\w&'()\-/ ]{1,80}?)\s+as\s*:?\s+(?P<body>.+?)" + _END, re.I),
    # "calculate X using D", "compute X as D", "calculate X by taking D"
    re.compile(r"\b(?:calculate|compute|calculated|computed|measure|derive)\s+(?P<target>[\w&'()\-/ ]{2,80}?)\s+"
               r"(?:using|as|by\s+(?:taking|using)|by(?=\s+(?:dividing|subtracting|adding|multiplying|deducting)\b)|with|from)\s+"
               r"(?P<body>.+?)" + _END, re.I),
    # "defined as D", "computed as D" (the target is the quantity asked)
    re.compile(r"\b(?:defined|calculated|computed|measured|derived)\s+(?:as|by)\s*:?\s+(?P<body>.+?)" + _END, re.I),
    # "i.e. D", "that is, D", "namely D"
    re.compile(r"(?:\bi\.e\.|\bie\b|\bthat\s+is|\bnamely)\s*,?\s+(?P<body>.+?)" + _END, re.I),
    # "where X = D", "X = D"
    re.compile(r"(?:\bwhere\s+)?(?P<target>\b[\w&'\-]{2,40}(?:\s+[\w&'\-]+){0,3}?)" + _ABBREVIATION
               + r"\s*=\s*(?P<body>[^=]+?)" + _END, re.I),
    # a sentence that states the metric: "Return on equity is net income divided by average equity.", "Capex means
    # additions to property and equipment" ("is" needs arithmetic in the body: find_definitions checks it)
    re.compile(r"(?:^|(?<=[.;:!?]\s))(?P<target>[A-Za-z][\w&'\-]*(?:\s+[\w&'\-]+){0,5}?)" + _ABBREVIATION
               + r"\s+(?P<verb>is|are|equals|means|refers\s+to)\s+(?P<body>.+?)" + _END, re.I),
]
_THRESHOLD_RE = re.compile(r"\b(?:above|below|over|under|more\s+than|less\s+than|at\s+least|at\s+most|greater\s+than"
                           r"|exceed(?:s|ing)?)\s+\$?\d", re.I)
_PAREN_RE = re.compile(r"\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
_OPERATOR_HINT = re.compile(r"/|÷|\*|×|\+|\s-\s|\bdivided\s+by\b|\bover\b|\bminus\b|\bless\b(?!\s+than)|\bplus\b"
                            r"|\btimes\b|\bmultiplied\s+by\b|\bx\b|\bas\s+an?\s+(?:%|percent(?:age)?|share|proportion"
                            r"|fraction|multiple)\s+of\b|\bas\s+%\s+of\b|\bchange\s+in\b|\baverage\b"
                            r"|\bsum\s+of\b|\bratio\s+of\b", re.I)


@dataclass
class Definition:
    target: str | None      # "DPO", "capex", None ("defined as D" of the asked quantity)
    body: str               # the words of the formula
    start: int              # where it starts in the question
    source: str             # which pattern: is_defined_as | define_as | calculate_using | defined_as | ie | equals | paren


_INSTRUCTION_RE = re.compile(
    r"^\s*(?:answer\s+(?:in|with|using|the|to|as|based|by)|round|give\s+(?:a|your|the)?\s*(?:response|answer|result)"
    r"|(?:calculate|compute|extract|derive)\s+(?:\(or\s+\w+\)\s+)?(?:the|your)\s+answer"
    r"|base|address|assume|please|provide\s+(?:a|your|the)?\s*(?:response|answer)|respond|express\s+(?:the|your)"
    r"|report\s+(?:the|your)\s+answer|note|utili[sz]e|rely|calculate\s+what\s+was\s+asked|use\s+(?:the|only)"
    r"|using\s+(?:the|only)\b[^,?]*$|show\s+your|state\b|if\b|you\s+(?:may|can|should))",
    re.I)
_LEAD_IN_RE = re.compile(r"^.*?\b(?:the\s+following\s+question|this\s+question)\b[^:?]*:\s*", re.I)
_UNIT_PAREN_RE = re.compile(r"\(\s*(?:in\s+)?(?:usd|us\$|\$)?\s*(?:thousands|millions|billions|mm|bn)\s*\)", re.I)
_PERCENT_MARGIN_RE = re.compile(r"\s*%\s*margin\b", re.I)


_CASH_PAID_FOR_RE = re.compile(r"\bhow\s+much\s+cash\s+(?P<verb>did|does|do|has|have|had)\s+(?P<who>.+?)\s+"
                               r"(?:pay|paid)\s+(?:for|on)\s+(?P<what>[^?;]+)", re.I)
_CASH_AS_AMOUNT_RE = re.compile(r"\bhow\s+much\s+cash\s+(?=(?:did|does|do|has|have|had|was|were)\b)", re.I)


def plain_wording(question: str) -> str:
    """Analysts' wording of a cash amount, in the words statements print: "How much cash did Apple pay for
    interest in FY2021?" -> "How much cash paid for interest in FY2021 did Apple?" (the supplemental row "Cash
    paid for interest"); "How much cash did Apple return to shareholders" -> "How much did Apple return to
    shareholders" ("cash" there is the amount's word, not the balance-sheet line); so is "How much cash did
    Oracle spend on repurchases of its common stock" (what is spent on is a line of its own: capex, buybacks)."""
    m = _CASH_PAID_FOR_RE.search(question)
    if m:
        what = m.group("what").rstrip(" ?.")
        question = question[:m.start()] + f"how much cash paid for {what} {m.group('verb')} {m.group('who')}" + \
            question[m.end():]
        return question
    return _CASH_AS_AMOUNT_RE.sub("how much ", question)


def clean_question(question: str) -> str:
    """The question without what only instructs the answerer: sentences that say how to answer ("Answer in
    USD millions.", "Base your judgement on the balance sheet.", "Calculate what was asked by utilizing the
    line items ..."), a lead-in before the question ("Answer the following question ...: what is ..."),
    unit parentheses ("(in USD millions)"), statement hints, and parentheses that hold no formula. A
    FinanceBench-style "X % margin" reads "X as a % of revenue". Definitions stay (they are the plan)."""
    text = _LEAD_IN_RE.sub("", question.strip())
    # "what would Apple's effective tax rate have been": the figure asked, as "what was ..."
    text = re.sub(r"\bwhat\s+would\s+(?P<x>[^?]+?)\s+have\s+been\b", r"what was \g<x>", text, flags=re.I)
    sentences = re.split(r"(?<=[.?!])\s+(?=[A-Z(])", text)
    keep = [s for s in sentences if not (_INSTRUCTION_RE.match(s) and "?" not in s
                                         and not re.search(r"\bdefine|\bdefined\b|=", s, re.I))]
    text = " ".join(keep) or text
    text = _UNIT_PAREN_RE.sub(" ", text)
    # a parenthesis without arithmetic goes, with the slash that joins it to a label ("income/(loss)")
    text = re.sub(r"/?\(([^()]*)\)/?", lambda m: m.group(0) if _OPERATOR_HINT.search(m.group(1)) else " ", text)
    text = strip_statement_hints(text)
    text = _PERCENT_MARGIN_RE.sub(" as a % of revenue", text)
    # "repurchases of its common stock", "spent on their own shares": the owner's pronoun inside a line's name
    text = re.sub(r"\b(of|on|for|in)\s+(?:its|their)\s+(?:own\s+)?(?=[a-z])", r"\1 ", text, flags=re.I)
    # "net income attributable to shareholders": the parent's owners, the line the statement prints as the net income
    text = re.sub(r"\s+attributable\s+to\s+(?:the\s+)?(?:company'?s?\s+)?(?:common\s+)?(?:share|stock)holders\b", " ", text,
                  flags=re.I)
    return re.sub(r"\s+", " ", text).strip()


_HINT_IN_PAREN_RE = re.compile(r",\s*" + STATEMENT_HINT_RE.pattern + r"\s*\)", re.I)


def find_definitions(question: str) -> list[Definition]:
    """Every definition written in a question, in order (a whole-metric one and term ones: "capex as a
    percentage of revenue (capex = cash paid for PP&E)" has one, of the term "capex")."""
    names = ["is_defined_as", "define_as", "calculate_using", "defined_as", "ie", "equals", "states"]
    out: list[Definition] = []
    taken: list[tuple[int, int]] = []
    # "total debt (debt maturing within one year plus long-term debt, from the balance sheet) divided by ...": a
    # statement hint closing a parenthesis ends no definition (blanked to keep every position of the question)
    written = question
    question = _HINT_IN_PAREN_RE.sub(lambda m: " " * (len(m.group(0)) - 1) + ")", question)
    for name, pattern in zip(names, _DEF_PATTERNS, strict=True):
        for m in pattern.finditer(question):
            span = (m.start("body"), m.end("body"))
            if any(s < span[1] and span[0] < e for s, e in taken):
                continue
            target = m.groupdict().get("target")
            target = _clean_target(target) if target else None
            if name in ("is_defined_as", "define_as", "calculate_using", "equals") and not target:
                continue
            body = _balanced(written[m.start("body"):m.end("body")].strip().rstrip(".,"))  # the words as written
            body = re.sub(r"^(?:the\s+)?(?:following\s+)?(?:formula|equation|calculation)\s*:?\s*", "", body, flags=re.I)
            if name in ("ie", "equals") and not _OPERATOR_HINT.search(body) and not target:
                continue
            if name == "states" and (re.match(r"(?:what|how|which|who|why|when|where|is|was|does|did|there|it|this|that)\b",
                                              target or "", re.I)
                                     or (m.group("verb").lower() in ("is", "are", "equals")
                                         and not _OPERATOR_HINT.search(body))):
                continue  # a question, or "X is large": no arithmetic stated
            if _THRESHOLD_RE.search(target or "") and not _OPERATOR_HINT.search(body):
                continue  # "Treating revenue growth above 15% as high growth": a judgement's threshold, no formula
            if _only_statements(body) or (target and re.fullmatch(r"(?:the\s+)?answer|what\s+(?:was|is)\s+asked",
                                                                   target, re.I)):
                continue  # "Calculate (or extract) the answer from the statement of income and the cash flow statement"
            taken.append(span)
            out.append(Definition(target, body, m.start(), name))
    # a parenthesis that holds a formula: "(operating income / revenue)", "(current assets / current liabilities)"
    for m in _PAREN_RE.finditer(question):
        inner = m.group(1).strip()
        if any(s <= m.start(1) < e for s, e in taken) or not _OPERATOR_HINT.search(inner):
            continue
        if re.search(r"=|\bdefined\b|\bcalculated\b|\bcomputed\b", inner, re.I):
            continue  # read by the patterns above
        out.append(Definition(None, inner, m.start(), "paren"))
    return sorted(out, key=lambda d: d.start)


_STATEMENT_NAMES_RE = re.compile("|".join(p for _, p in _STATEMENT_WORDS), re.I)
_FILLER_RE = re.compile(r"\b(?:the|and|a|an|its|their|company'?s|consolidated|information|details|data|line\s+items?|shown"
                        r"|in|on|within|of|only|primarily|clearly|as|reported|shown|presented|stated|printed|disclosed)\b", re.I)


def _only_statements(body: str) -> bool:
    """A "definition" that only names statements ("from the statement of income and the cash flow statement")."""
    rest = _FILLER_RE.sub(" ", _STATEMENT_NAMES_RE.sub(" ", body))
    return _STATEMENT_NAMES_RE.search(body) is not None and not re.sub(r"[\s,.;&]+", "", rest)


def _balanced(body: str) -> str:
    """The body without a closing parenthesis it does not open ("capex = cash paid for PP&E)")."""
    while body.count(")") > body.count("(") and body.endswith(")"):
        body = body[:-1].rstrip()
    return body


def _clean_target(text: str) -> str | None:
    t = re.sub(r"^.*\b(?:what|how|calculate|compute|give|find|is|was|the|if|and|where|when|with)\s+", "",
               text.strip(), flags=re.I)
    t = re.sub(r"^(?:the|its|their|a|an|you|we)\s+", "", t.strip(), flags=re.I)
    t = re.sub(r"\s*\(\s*[A-Za-z][A-Za-z&.\-]{1,9}\s*\)$", "", t)  # "Return on equity (ROE)"
    return t.strip(" ,:") or None


# ---- the expression parser ----------------------------------------------------------------------

# operator words, longest first; "as a % of" is division (the unit becomes percent)
_OPERATORS = [
    (r"as\s+an?\s+(?:%|percent(?:age)?|share|proportion|fraction)\s+of(?:\s+the|\s+its)?", "/%"),
    (r"as\s+%\s+of", "/%"), (r"as\s+a\s+multiple\s+of", "/"), (r"divided\s+by", "/"),
    # "R&D relative to net sales" is a ratio; "relative to the prior year" / "to 2021" is a comparison of years
    (r"relative\s+to(?:\s+the|\s+its)?(?!\s+(?:fy|fiscal|prior|previous|last|year|(?:19|20)\d\d|the\s+(?:prior|previous|last|year)"
     r"|its\s+(?:prior|previous|last)))", "/"), (r"multiplied\s+by", "*"),
    (r"(?:and\s+)?divid(?:e|ed|ing)\s+(?:it\s+|that\s+|this\s+)?by", "/"), (r"over", "/"), (r"per", "/"), (r"÷", "/"), (r"/", "/"), (r"times", "*"), (r"×", "*"), (r"\*", "*"),
    (r"x", "*"), (r"plus", "+"), (r"\+", "+"), (r"added\s+to", "+"), (r"minus", "-"), (r"less", "-"),
    (r"net\s+of", "n-"), (r"subtract(?:ing)?", "-"), (r"-", "-"), (r"–", "-"), (r"−", "-"),
]
_TOKEN_RE = re.compile(
    r"(?P<lp>\()|(?P<rp>\))|(?P<num>(?<![\w.])\d[\d,]*(?:\.\d+)?%?(?![\w]))|"
    + "|".join(f"(?P<op{i}>(?<![\\w&]){p}(?![\\w&]))" if p[0].isalpha() else f"(?P<op{i}>{p})"
               for i, (p, _) in enumerate(_OPERATORS)),
    re.IGNORECASE)
_YEAR_RE = re.compile(r"\b(?:fy|fiscal(?:\s+year)?|calendar\s+year|year)?\s*'?((?:19|20)\d\d)\b", re.I)
_N_YEAR_AVG_RE = re.compile(r"^(?:the\s+)?(?P<n>\d|two|three|four|five|ten)[\s-]+year\s+(?:average|avg|mean)\s+"
                            r"(?:of\s+)?(?:the\s+|its\s+)?", re.I)
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "ten": 10}
# words around a line item that do not change which line it is ("gross capex", "year-end receivables")
_HARMLESS = frozenset(["a", "an", "the", "its", "their", "company", "company's", "companys", "total", "net", "reported", "unadjusted", "gross", "annual", "full", "year", "years", "yearly", "fiscal", "fy", "end", "ending", "year-end", "yearend", "period", "closing", "balance", "amount", "figure", "value", "level", "sum", "consolidated", "cash", "basis", "gaap", "line", "item", "items", "expense", "expenses", "cost", "costs", "spend", "spending", "spent", "statement", "the", "of", "for", "in", "at", "on", "as", "from", "and", "value", "reported", "book", "booked", "recorded",
                       "to", "attributable", "shareholders", "stockholders", "common", "parent", "owners", "its"])
# words that DO change which line it is: an operand phrase with one of them must be read whole
_MEANING = frozenset(["non", "paid", "payments", "purchases", "purchase", "additions", "acquisitions", "proceeds", "change", "increase", "decrease", "growth", "ratio", "margin", "turnover", "per", "days", "rate", "return", "average", "avg", "mean", "prior", "previous", "last", "current", "noncurrent", "non-current", "long-term", "short-term", "deferred", "other", "interest", "amortization", "depreciation", "impairment",
                      "tax", "taxes", "accumulated", "restricted", "marketable", "unearned", "accrued", "employee",
                      "employees", "headcount", "share", "shares", "unit", "units", "segment", "goodwill",
                      "pretax", "pre-tax", "pre", "before", "after", "operating", "comprehensive", "noncontrolling",
                      "non-controlling", "minority", "discontinued", "continuing", "diluted", "basic", "per"])


@dataclass
class ParseContext:
    lexicon: Lexicon
    year: int | None                    # the fiscal year the formula is evaluated at (the latest asked)
    terms: dict[str, str] = field(default_factory=dict)   # target phrase (normalised) -> formula (term definitions)
    percent: bool = False               # "as a % of" was read
    used: list[str] = field(default_factory=list)          # concept keys read


# "term debt (current and non-current)": the qualifier in parentheses reads as "current and non-current term debt"
_BOTH_SIDES_PAREN_RE = re.compile(r"(?P<x>[A-Za-z][A-Za-z&' ]*?)\s*\(\s*(?:both\s+)?current\s+and\s+(?:non[\s-]?current"
                                  r"|long[\s-]term)(?:\s+portions?)?\s*\)", re.I)


# arithmetic said as a verb or a noun phrase, rewritten into operator words the tokenizer reads:
# "dividing operating profit by revenue", "subtracting capex from operating cash flow", "the ratio of A to B",
# "the difference between A and B", "adding D&A to operating income", "multiplying A by B"
_VERBAL_OPERATIONS = [
    (re.compile(r"^\s*(?:the\s+)?(?:result\s+of\s+)?divid(?:e|ing)\s+(?P<a>.+?)\s+by\s+(?P<b>.+)$", re.I), "{a} divided by {b}"),
    (re.compile(r"^\s*(?:the\s+)?multiply(?:ing)?\s+(?P<a>.+?)\s+by\s+(?P<b>.+)$", re.I), "{a} multiplied by {b}"),
    (re.compile(r"^\s*(?:the\s+)?subtract(?:ing)?\s+(?P<b>.+?)\s+from\s+(?P<a>.+)$", re.I), "{a} minus {b}"),
    (re.compile(r"^\s*(?:the\s+)?add(?:ing)?\s+(?P<b>.+?)\s+(?:to|and)\s+(?P<a>.+)$", re.I), "{a} plus {b}"),
    (re.compile(r"^\s*(?:the\s+)?ratio\s+(?:of|between)\s+(?P<a>.+?)\s+(?:to|and)\s+(?P<b>.+)$", re.I), "{a} divided by {b}"),
    (re.compile(r"^\s*(?:the\s+)?difference\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+)$", re.I), "{a} minus {b}"),
]


def _verbal_operations(text: str) -> str:
    for pattern, template in _VERBAL_OPERATIONS:
        m = pattern.match(text)
        if m:
            return template.format(a=m.group("a").strip(), b=m.group("b").strip())
    return text


def parse_expression(text: str, ctx: ParseContext) -> str:
    """Words -> a formula over concept keys ("365 * avg(accounts_payable) / (cost_of_revenue + change(inventory))").
    Raises DefinitionError naming the phrase it could not read."""
    text = _STATEMENT_PAREN_RE.sub(" ", text)
    text = _SIGN_PAREN_RE.sub(" ", text)
    text = _named_arithmetic(text)
    text = _verbal_operations(text)
    text = _BOTH_SIDES_PAREN_RE.sub(lambda m: _both_sides(m.group("x")), text)
    text = _PERIOD_PAREN_RE.sub(_period_words, text)
    tokens = _tokenize(text)
    if not tokens:
        raise DefinitionError(f"nothing to read in {text!r}")
    parser = _Parser(tokens, ctx)
    out = parser.expression()
    if parser.i != len(tokens):
        raise DefinitionError(f"cannot read {' '.join(t[1] for t in tokens[parser.i:])!r} in {text!r}")
    try:
        parse_formula(out)
    except FormulaError as exc:
        raise DefinitionError(f"cannot read {text!r}: {exc}") from exc
    return out


# a parenthesis that only names the statement an operand is read from: "dividends paid (cash flow statement)",
# "total assets (from the balance sheet)"; the operand's own statement is its concept's
_STATEMENT_PAREN_RE = re.compile(r"\(\s*(?:(?:from|per|on|in|see|as\s+reported\s+(?:in|on))\s+)?(?:the\s+)?(?:consolidated\s+)?(?:"
                                 + "|".join(p for _, p in _STATEMENT_WORDS) + r")\s*\)(?=\s*\S)", re.I)  # (one at the end: the hint reader's)

_ARITHMETIC_WORDS_RE = re.compile(r"\b(?:plus|minus|less|divided|times|multiplied|over)\b|[+*/]|\s-\s", re.I)
_OPERATOR_WORDS = frozenset(["plus", "minus", "less", "divided", "by", "over", "times", "multiplied", "+", "-", "/", "*",
                             "of", "to", "as", "and"])


def _named_arithmetic(text: str) -> str:
    """"total debt (debt maturing within one year plus long-term debt) divided by unadjusted EBITDA (operating income
    plus depreciation and amortization)": a name followed by the arithmetic that defines it is that arithmetic."""
    out, last = [], 0
    for m in re.finditer(r"\(([^()]+)\)", text):
        if not _ARITHMETIC_WORDS_RE.search(m.group(1)):
            continue
        before = text[last:m.start()]
        words = before.rstrip().split(" ")
        keep = len(words)
        while keep > 0 and words[keep - 1] and words[keep - 1].lower() not in _OPERATOR_WORDS \
                and words[keep - 1] not in ("(", "("):
            keep -= 1
        if keep == len(words):
            continue  # nothing named before it: a plain parenthesis
        out.append(" ".join(words[:keep]) + (" " if keep else "") + "(" + m.group(1) + ")")
        last = m.end()
    out.append(text[last:])
    return "".join(out) if last else text


# sign words a printed label carries: "net cash provided by (used in) operating activities", "net income (loss)"
_SIGN_PAREN_RE = re.compile(r"\(\s*(?:used\s+(?:in|for|by)|loss(?:es)?|deficit)\s*\)", re.I)

# a parenthesis that only says which balances an operand takes: "average inventory (FY2021 and FY2022 year-end
# balances)", "average equity (beginning and end of year)", "(FY2024 and FY2025 year-ends)"
_PERIOD_PAREN_RE = re.compile(
    r"\(\s*((?:(?:fy|fiscal|years?|year[\s-]+ends?|ends?|year[\s-]+end|balances?|beginning|opening|closing|ending|end"
    r"|of|the|and|&|to|at|as|both|'?(?:19|20)\d\d)[\s,\-]*)+)\)", re.I)


def _period_words(m: re.Match) -> str:
    """A period parenthesis as the words the operand reader takes: two years -> "between FY2021 and FY2022"; one
    year -> "FY2022"; "beginning and end of year" -> nothing (an average is of the year's two ends already)."""
    years = sorted({int(y) for y in re.findall(r"(?:19|20)\d\d", m.group(1))})
    if len(years) >= 2:
        return f" between FY{years[0]} and FY{years[-1]} "
    return f" FY{years[0]} " if years else " "


def _both_sides(words: str) -> str:
    # keep the operator word before the line ("plus term debt (current and non-current)")
    m = re.match(r"^(?P<lead>.*\b(?:plus|minus|less|and|times|over|of)\s+)?(?P<line>.+)$", words, re.I)
    return f"{m.group('lead') or ''}current and non-current {m.group('line')}"


def _tokenize(text: str) -> list[tuple[str, str]]:
    """[(kind, text)]: kind is num | op | lp | rp | phrase."""
    text = text.replace("’", "'").strip().rstrip(".")
    out: list[tuple[str, str]] = []
    pos = 0
    for m in _TOKEN_RE.finditer(text):
        kind = next(k for k, v in m.groupdict().items() if v is not None)
        if kind == "num" and (_is_year_word(text, m) or re.match(r"[\s-]+years?\b", text[m.end():], re.I)):
            continue  # "FY2017 COGS", "3 year average": the number belongs to the phrase
        if kind.startswith("op"):
            op = _OPERATORS[int(kind[2:])][1]
            if op == "-" and m.group(0) in "-–−" and not _spaced(text, m):
                continue  # "year-end", "long-term": a hyphen inside words
            if op == "*" and m.group(0).lower() == "x" and not _between_operands(text, m):
                continue
            if op == "/" and m.group(0).lower() == "per" and not re.match(r"\s+(?:the\s+)?(?:average|avg)", text[m.end():], re.I):
                continue  # "per share", "per the cash flow statement": no division
            if m.group(0) == "/" and _slash_in_label(text, m):
                continue  # "income/(loss)", "(provision)/benefit", "and/or": a label, no division
            if op == "-" and m.group(0).lower() == "less" and re.match(r"\s+than\b", text[m.end():], re.I):
                continue
        gap = text[pos:m.start()].strip()
        if gap:
            out.append(("phrase", gap))
        if kind.startswith("op"):
            out.append(("op", _OPERATORS[int(kind[2:])][1]))
        else:
            out.append((kind, m.group(0)))
        pos = m.end()
    tail = text[pos:].strip()
    if tail:
        out.append(("phrase", tail))
    # "1 - x" is fine; a phrase split by an ignored token is re-joined above by slicing from pos
    return _merge_phrases(out)


def _merge_phrases(tokens: list[tuple[str, str]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for t in tokens:
        if out and t[0] == "phrase" and out[-1][0] == "phrase":
            out[-1] = ("phrase", out[-1][1] + " " + t[1])
        else:
            out.append(t)
    return out


def _is_year_word(text: str, m: re.Match) -> bool:
    return bool(re.fullmatch(r"(?:19|20)\d\d", m.group(0)))


def _slash_in_label(text: str, m: re.Match) -> bool:
    before, after = text[:m.start()], text[m.end():]
    return (after.startswith("(") or before.endswith(")") or bool(re.search(r"\band$", before, re.I))
            or bool(re.match(r"(?:loss|gain|benefit|expense|income|deficit|or)\b", after, re.I)))


def _spaced(text: str, m: re.Match) -> bool:
    before = text[m.start() - 1:m.start()] if m.start() else " "
    after = text[m.end():m.end() + 1] or " "
    return before.isspace() or after.isspace() or before in ")" or after in "("


def _between_operands(text: str, m: re.Match) -> bool:
    # "receivables / revenue x 365": an "x" between spaces, with something on both sides
    return _spaced(text, m) and bool(text[:m.start()].strip()) and bool(text[m.end():].strip())


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], ctx: ParseContext):
        self.tokens, self.ctx, self.i = tokens, ctx, 0

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def expression(self) -> str:
        left = self.term()
        while (t := self.peek()) and t[0] == "op" and t[1] in "+-":
            self.i += 1
            left = f"{left} {t[1]} {self.term()}"
        return left

    def term(self) -> str:
        left = self.netted()
        while (t := self.peek()) and t[0] == "op" and t[1] in ("*", "/", "/%"):
            self.i += 1
            if t[1] == "/%":
                self.ctx.percent = True
            right = self.netted()
            left = f"{left} {t[1][0]} {_wrap(right)}"
        return left

    def netted(self) -> str:
        # "purchases of property and equipment net of proceeds from sales": one amount, the first less the second,
        # so "operating cash flow less purchases of PP&E net of proceeds" is CFO - (purchases - proceeds)
        left = self.factor()
        while (t := self.peek()) and t == ("op", "n-"):
            self.i += 1
            left = f"({left} - {_wrap(self.factor())})"
        return left

    def factor(self) -> str:
        t = self.peek()
        if t is None:
            raise DefinitionError("the formula ends with an operator")
        self.i += 1
        if t[0] == "num":
            value = t[1].replace(",", "")
            if value.endswith("%"):
                return str(float(value[:-1]) / 100)
            return value
        if t[0] == "op" and t[1] == "-":
            return f"-{_wrap(self.factor())}"
        if t[0] == "lp":
            inner = self.expression()
            if (r := self.peek()) is None or r[0] != "rp":
                raise DefinitionError("a parenthesis is not closed")
            self.i += 1
            return f"({inner})"
        if t[0] == "phrase":
            n_avg = _N_YEAR_AVG_RE.match(t[1])
            if n_avg:
                # "3 year average of capex as a % of revenue": the mean of the whole ratio over the years
                n = int(n_avg.group("n")) if n_avg.group("n").isdigit() else _NUMBER_WORDS[n_avg.group("n").lower()]
                rest = t[1][n_avg.end():].strip()
                self.tokens[self.i - 1] = ("phrase", rest)
                self.i -= 1
                inner = self.expression() if rest else self.factor()
                return f"mean({inner}, {n})"
            return operand(t[1], self.ctx)
        raise DefinitionError(f"unexpected {t[1]!r}")


def _wrap(expr: str) -> str:
    """Parenthesise a sum/difference used as a factor."""
    depth = 0
    for i, ch in enumerate(expr):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch in "+-" and i > 0 and expr[i - 1] == " ":
            return f"({expr})"
    return expr


# ---- operands ------------------------------------------------------------------------------------

_AVG_RE = re.compile(r"^(?:the\s+)?(?:simple\s+)?(?:average|avg\.?|mean)\s+(?:of\s+)?(?:the\s+|its\s+)?(?P<rest>.+)$", re.I)
_CHANGE_RE = re.compile(r"^(?:the\s+)?(?:(?:year[\s-]+over[\s-]+year|yoy|annual)\s+)?(?P<kind>change|increase|decrease"
                        r"|movement|delta)\s+(?:in|of)\s+(?:the\s+|its\s+)?(?P<rest>.+)$", re.I)
_CHANGE_SUFFIX_RE = re.compile(r"^(?P<rest>.+?)\s+(?:change|movement)$", re.I)
_PRIOR_RE = re.compile(r"\b(?:prior|previous|last|preceding)[\s-]+(?:fiscal\s+)?year(?:'?s)?\b|\bbeginning[\s-]+of[\s-]+"
                       r"(?:the\s+)?year\b|\bopening\b", re.I)
_BOTH_SIDES_RE = re.compile(r"^(?:both\s+)?current\s+and\s+(?:non[\s-]?current|long[\s-]term)\s+(?:portions?\s+of\s+)?"
                           r"(?:the\s+)?(?P<rest>.+)$", re.I)
_SUM_OF_RE = re.compile(r"^(?:the\s+)?(?:sum|total)\s+of\s+(?P<rest>.+)$", re.I)
_PERIOD_WORDS_RE = re.compile(
    r"\b(?:between|from|at\s+the\s+end\s+of|at\s+(?:the\s+)?(?:fiscal\s+)?year[\s-]+end(?:s)?(?:\s+of)?|as\s+of|for|in"
    r"|of|over|across|during|ending|ended)\b(?:\s+(?:the\s+)?(?:fiscal\s+)?(?:years?)?)?\s*(?:fy|fiscal\s*)?'?"
    r"(?:19|20)\d\d(?:\s*(?:and|to|through|-|–|&)\s*(?:the\s+)?(?:end\s+of\s+)?(?:fy|fiscal\s*(?:year\s*)?)?'?(?:19|20)\d\d)*",
    re.I)


def operand(phrase: str, ctx: ParseContext) -> str:
    """One operand phrase -> formula text: a concept key with its period transform."""
    text = strip_statement_hints(phrase.strip().strip(",").strip())
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"^(?:the|its|their|a|an|company'?s|firm'?s)\s+", "", text, flags=re.I)
    years = [int(y) for y in _YEAR_RE.findall(text)]
    if not text:
        raise DefinitionError("an empty operand")
    m = _SUM_OF_RE.match(text)
    if m and re.search(r"\band\b|,", m.group("rest")):
        parts = [p for p in re.split(r"\s*,\s*(?:and\s+)?|\s+and\s+", m.group("rest")) if p.strip()]
        try:
            return "(" + " + ".join(operand(p, ctx) for p in parts) + ")"
        except DefinitionError:
            pass
    m = _BOTH_SIDES_RE.match(text)
    if m:
        # "current and non-current term debt": the line printed in both sections of the balance sheet
        rest = m.group("rest")
        return f"({operand('current ' + rest, ctx)} + {operand('non-current ' + rest, ctx)})"
    m = _AVG_RE.match(text)
    if m:
        rest = m.group("rest")
        inner = _line_item(_without_period(rest), ctx)
        if len(set(years)) >= 3:
            return f"mean({inner}, {len(set(years))})" if max(years) == ctx.year or ctx.year is None \
                else f"lag(mean({inner}, {len(set(years))}), {ctx.year - max(years)})"
        n_years = re.search(r"\b(?:last|past|prior)\s+(\d|two|three|four|five)\s+(?:fiscal\s+)?years\b", rest, re.I)
        if n_years:
            n = n_years.group(1)
            return f"mean({inner}, {int(n) if n.isdigit() else _NUMBER_WORDS[n.lower()]})"
        return _at_year(f"avg({inner})", max(years) if years else None, ctx)
    m = _CHANGE_RE.match(text) or _CHANGE_SUFFIX_RE.match(text)
    if m:
        inner = _line_item(_without_period(m.group("rest")), ctx)
        expr = f"change({inner})"
        if m.groupdict().get("kind", "").lower() == "decrease":
            expr = f"-{expr}"
        return _at_year(expr, max(years) if years else None, ctx)
    prior = _PRIOR_RE.search(text)
    core = _without_period(_PRIOR_RE.sub(" ", text)) if prior else _without_period(text)
    core = re.sub(r"\s*,?\s*\b(?:all|both|each)$", "", core, flags=re.I)  # "..., all from the balance sheet"
    try:
        expr = _line_item(core, ctx)
    except DefinitionError as exc:
        # "cash and cash equivalents and marketable securities": a list of lines, their sum
        parts = _list_of_lines(core, ctx) if exc.operand else None
        if parts is None:
            unread = _unread_list_item(core, ctx) if exc.operand else None
            if unread is not None:
                # "purchases of property and equipment and change in other assets": the lines it lists, the first
                # read; the one no line item names is the operand (read as a row label by the caller, or named)
                raise DefinitionError(f"cannot read {unread!r} as a line item", operand=unread) from exc
            raise
        expr = "(" + " + ".join(parts) + ")"
    if prior:
        return f"lag({expr}, 1)"
    return _at_year(expr, max(years) if years else None, ctx)


def _list_of_lines(text: str, ctx: ParseContext, depth: int = 0) -> list[str] | None:
    """The lines a phrase lists ("A and B", "A, B and C", where a line may itself hold "and": "cash and cash
    equivalents"), each read as a line item; None unless the whole phrase splits into lines."""
    seps = list(re.finditer(r"\s*,\s*(?:and\s+)?|\s+and\s+", text))[::-1]  # the longest first line first
    if depth > 5:
        return None
    for sep in seps:
        head, tail = text[:sep.start()].strip(), text[sep.end():].strip()
        if not head or not tail:
            continue
        try:
            first = _line_item(head, ParseContext(ctx.lexicon, ctx.year, ctx.terms))
        except DefinitionError:
            continue
        try:
            rest = [_line_item(tail, ParseContext(ctx.lexicon, ctx.year, ctx.terms))]
        except DefinitionError:
            rest = _list_of_lines(tail, ctx, depth + 1)
        if rest:
            return [first, *rest]
    return None


def _unread_list_item(text: str, ctx: ParseContext) -> str | None:
    """In a list of lines ("A and B") whose first line reads as a line item, the last part no line item names;
    None when the phrase is no such list (it is named whole then)."""
    for sep in list(re.finditer(r"\s*,\s*(?:and\s+)?|\s+and\s+", text))[::-1]:
        head, tail = text[:sep.start()].strip(), text[sep.end():].strip()
        if not head or not tail:
            continue
        try:
            _line_item(head, ParseContext(ctx.lexicon, ctx.year, ctx.terms))
        except DefinitionError:
            continue
        return tail
    return None


def _without_period(text: str) -> str:
    t = _PERIOD_WORDS_RE.sub(" ", text)
    t = _YEAR_RE.sub(" ", t)
    t = re.sub(r"\b(?:at\s+)?(?:the\s+)?(?:fiscal\s+)?year[\s-]+end(?:ing)?\b|\bat\s+the\s+end\s+of\s+(?:the\s+)?"
               r"(?:fiscal\s+)?(?:year|period)\b|\bend\s+of\s+(?:the\s+)?(?:fiscal\s+)?year\b", " ", t, flags=re.I)
    return re.sub(r"\s+", " ", t).strip(" ,")


def _at_year(expr: str, year: int | None, ctx: ParseContext) -> str:
    if year is None or ctx.year is None or year == ctx.year:
        return expr
    if year > ctx.year:
        raise DefinitionError(f"{expr} is asked for FY{year}, after the question's year FY{ctx.year}")
    return f"lag({expr}, {ctx.year - year})"


def _line_item(phrase: str, ctx: ParseContext) -> str:
    """A phrase naming one line item (or a metric of the formula table) -> its formula text."""
    norm = normalize_label(phrase)
    if not norm:
        raise DefinitionError(f"cannot read {phrase!r} as a line item")
    for target, formula in ctx.terms.items():
        if norm == target or normalize_label(re.sub(r"^(?:the|its)\s+", "", phrase)) == target:
            return formula if re.fullmatch(r"[\w()]+", formula) else f"({formula})"
    concept = resolve_operand(phrase, ctx.lexicon)
    if concept is None:
        raise DefinitionError(f"cannot read {phrase!r} as a line item", operand=phrase)
    ctx.used.append(concept.key)
    if concept.formula:
        return f"({concept.formula})"
    return f"abs({concept.key})" if concept.outflow else concept.key


_NAMES_CACHE: dict[int, tuple[Lexicon, int, dict[str, list[Concept]]]] = {}


def _names_of(lexicon: Lexicon) -> dict[str, list[Concept]]:
    """Normalised alias / line item -> concepts, built once per lexicon (and again if concepts are added)."""
    size = sum(len(c.aliases) + len(c.line_items) for c in lexicon.concepts.values())
    hit = _NAMES_CACHE.get(id(lexicon))
    if hit is None or hit[0] is not lexicon or hit[1] != size:
        names: dict[str, list[Concept]] = {}
        for c in lexicon.concepts.values():
            for x in {normalize_label(x) for x in [*c.aliases, *c.line_items]}:
                names.setdefault(x, []).append(c)
        hit = _NAMES_CACHE[id(lexicon)] = (lexicon, size, names)
    return hit[2]


def resolve_operand(phrase: str, lexicon: Lexicon) -> Concept | None:
    """The concept a phrase names, read strictly: an exact alias or line item (after dropping harmless
    words like "total", "gross", "year-end"), else the one alias inside the phrase when every other word
    is harmless. "cash paid for PP&E" is not "PP&E" (paid changes the line); "gross capex" is capex."""
    norm = normalize_label(phrase)
    words = [w for w in norm.split() if w not in _HARMLESS]
    core = " ".join(words)
    names = _names_of(lexicon)
    for wanted in (norm, core):  # the phrase as written first ("cost of sales"), then without harmless words
        exact = None
        for c in names.get(wanted, []):
            if exact is None or (exact.formula and not c.formula):
                exact = c  # a statement line before a metric of the same name ("gross margin" is the line)
        if exact is not None:
            return exact
    matches = lexicon.match(phrase)
    if not matches:
        return _through_vocabulary(phrase, lexicon)
    if len(matches) != 1:
        return None
    m = matches[0]
    covered = set(normalize_label(m.alias).split())
    left = [w for w in words if w not in covered]
    joins = sum(w in ("and", "plus") for w in norm.split()) - sum(w in ("and", "plus") for w in normalize_label(m.alias).split())
    after = re.split(r"\b(?:and|plus)\b", norm)[-1].split()
    if joins > 0 and any(w not in _HARMLESS and w not in ("ends", "ended") for w in after):
        # "capex and unicorn reserves", "purchases of property and equipment and X": a list of lines (read by the
        # caller), never the one alias qualified by the rest
        return None
    if m.concept.outflow and left and left[-1] == "paid" and words[-1] == "paid":
        left = left[:-1]  # "common stock dividends paid": an outflow is an amount paid ("cash paid for PP&E" is no outflow)
    if any(w in _MEANING or not w.isalpha() for w in left) or len(left) > 2:
        return None
    if left and "attributable" in norm.split():
        # "net income attributable to Verizon": the parent's share, a row of its own beside the consolidated line
        # (read as the filing's printed row, or abstain); "attributable to shareholders" stays the line item
        return None
    return m.concept


def _through_vocabulary(phrase: str, lexicon: Lexicon) -> Concept | None:
    """An abbreviation the lexicon lacks, read through the analyst vocabulary (analyst_vocabulary.yaml,
    shared with retrieval): a term that is the whole phrase whose first expansion is a lexicon line."""
    from finrag_pipeline.core.analyst.vocabulary import default_vocabulary

    norm = normalize_label(phrase)
    for match in default_vocabulary().match(phrase):
        if normalize_label(match.term) != norm:
            continue
        for expansion in match.expansions[:1]:
            concept = resolve_operand(expansion, lexicon) if normalize_label(expansion) != norm else None
            if concept is not None:
                return concept
    return None
