"""Judgement questions: "Does Adobe have an improving operating margin profile as of FY2022?", "Is 3M a
capital-intensive business?", "high growth", "liquidity profile", "customer concentration".

An analyst answers them with a yes/no AND the figures it rests on. Here a question is read into a
``Judgement`` (which rule, which metric, which direction); the calculator computes the series the rule
names on the fact layer and ``decide`` commits to yes/no by the thresholds of
``assets_config/judgements.yaml`` (documented in docs/CALCULATOR.md "Judgement questions").

A question that says a metric may not suit the company ("if gross margin is not a useful metric for a
company like this, state that and explain why") is read by ``unsuitable_metric``: when the filing
prints no line the metric needs, the answer says so instead of forcing a number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal

from pydantic import BaseModel, ConfigDict

from finrag_pipeline.core.analyst.definitions import STATEMENT_HINT_RE
from finrag_pipeline.core.analyst.lexicon import Concept, Lexicon
from finrag_pipeline.core.config import load_model


class TrendRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    years: int = 3
    min_change_percent_points: float = 0.5
    min_change_relative: float = 0.02
    # "improving as of FY2022": the asked year's move against the year before decides when it reaches the margin
    # (Adobe: operating margin 32.9% -> 36.8% -> 34.6% is not improving); a smaller one leaves it to the series
    latest_year_decides: bool = True


class CapitalIntensiveRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    capex_to_revenue_min: float = 0.10
    ppe_to_assets_min: float = 0.40


class HighGrowthRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    revenue_growth_min: float = 0.15


class LiquidityRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    current_ratio_min: float = 1.0
    quick_ratio_min: float = 1.0


class ConcentrationRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    share_min: float = 0.10


class JudgementConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trend: TrendRule = TrendRule()
    capital_intensive: CapitalIntensiveRule = CapitalIntensiveRule()
    high_growth: HighGrowthRule = HighGrowthRule()
    liquidity: LiquidityRule = LiquidityRule()
    customer_concentration: ConcentrationRule = ConcentrationRule()


def load_judgement_config(overrides: dict | None = None) -> JudgementConfig:
    return load_model(JudgementConfig, "judgements.yaml", overrides)


# metrics where a lower figure is the better one ("improving DSO" = fewer days)
LOWER_IS_BETTER = frozenset(["days_inventory_outstanding", "days_sales_outstanding", "cash_conversion_cycle",
                             "debt_to_equity", "effective_tax_rate", "cost_of_revenue", "total_operating_expenses",
                             "sga"])

# a yes/no question, after a lead clause that sets its terms ("Treating growth above 15% as high growth, was ...",
# "Assuming a quick ratio of 1.0 is healthy, does ...") or after a sentence that does ("Use the balance sheet. Is ...")
_YES_NO_RE = re.compile(r"(?:^|[.!]\s+)\s*(?:(?:based\s+on|using|according\s+to|from|treating|taking|assuming|given|considering"
                        r"|defining|counting|judging\s+by|judged\s+by|measured\s+by|in\s+terms\s+of|on\s+the\s+basis\s+of)\b"
                        r"(?:[^,?.]|\.(?=\d))*,\s*)?(?:does|do|did|is|are|was|were|has"
                        r"|have|had|can|could|would|will|should)\b|\bwhether\b|\b(?:yes|no)\s*(?:/|or)\s*(?:no|yes)\b",
                        re.I)
_PROFILE_RE = re.compile(r"\b(?:profile|trend|trajectory|position)\b", re.I)
_UP_RE = re.compile(r"\b(?:improv\w*|expand\w*|increas\w*|ris(?:e|es|ing|en)|grow(?:s|ing|n)?|strengthen\w*"
                    r"|widen\w*|better)\b", re.I)
_DOWN_RE = re.compile(r"\b(?:declin\w*|deteriorat\w*|worsen\w*|contract\w*|shrink\w*|decreas\w*|fall(?:s|ing|en)?"
                      r"|weaken\w*|compress\w*|narrow\w*|eroding|erod\w*)\b", re.I)
_CAPITAL_RE = re.compile(r"\bcapital[\s-]+intens\w*", re.I)
_CAPITAL_LIGHT_RE = re.compile(r"\b(?:capital|asset)[\s-]+light\b", re.I)  # the same rule, the answer inverted
_GROWTH_RE = re.compile(r"\bhigh[\s-]+growth\b|\bfast[\s-]+growing\b|\bgrowing\s+(?:fast|quickly|rapidly|strongly)\b"
                        r"|\bgrowth\s+(?:company|stock|business)\b", re.I)
_GROWTH_THRESHOLD_RE = re.compile(r"\bgrowth\s+(?:rate\s+)?(?P<cmp>above|over|exceeding|of\s+more\s+than|more\s+than|greater\s+than"
                                  r"|higher\s+than|at\s+least|of\s+at\s+least|of)\s+(?P<n>\d+(?:\.\d+)?)\s*(?:%|percent)", re.I)
_RATIO_FLOOR_RE = re.compile(r"\bratio\s+(?:of\s+)?(?:at\s+least|above|over|of\s+more\s+than|more\s+than|greater\s+than|>=?)?\s*"
                             r"(?P<n>\d+(?:\.\d+)?)(?:x)?\s+(?:or\s+(?:more|higher|above|greater)\s+)?as\s+(?:healthy|adequate|sufficient"
                             r"|strong|good)\b|\b(?:treat|treating|consider|considering|take|taking)\s+(?:a\s+ratio\s+of\s+)?"
                             r"(?P<m>\d+(?:\.\d+)?)(?:x)?\s+or\s+(?:more|higher|above|greater)\s+as\s+(?:healthy|adequate|sufficient"
                             r"|strong|good)\b"
                             # "a value above 1.0 as healthy", "above 1.0 is healthy", "a ratio over 1.2 counts as adequate"
                             r"|\b(?:(?:a|any)\s+(?:value|ratio|reading|figure)\s+(?:of\s+)?)?(?:at\s+least|above|over|more\s+than"
                             r"|greater\s+than|>=?)\s*(?P<v>\d+(?:\.\d+)?)(?:x)?\s+(?:or\s+(?:more|higher|above|greater)\s+)?"
                             r"(?:as|is|counts\s+as|being|=)\s+(?:healthy|adequate|sufficient|strong|good)\b", re.I)
_LIQUIDITY_RE = re.compile(r"\bliquidity\b|\bliquid\b|\bshort[\s-]+term\s+solvency\b", re.I)
_CONCENTRATION_RE = re.compile(r"\bcustomer\s+concentration\b|\bconcentrat\w*\b.{0,40}\bcustomers?\b"
                               r"|\b(?:major|significant|largest|key)\s+customers?\b|\brel(?:y|ies|iant)\s+on\s+(?:a\s+few|"
                               r"few|one|a\s+small\s+number\s+of)\s+customers?\b", re.I)
_THAN_RE = re.compile(r"\b(higher|greater|larger|bigger|more|lower|less|smaller|fewer)\b(?:\s+[\w&'$]+){0,5}?\s+than\b"
                      r"|\b(exceed(?:ed|s)?|surpass(?:ed|es)?|above|below|under)\b", re.I)
_SCALE = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "k": 10**3, "m": 10**6, "mm": 10**6, "bn": 10**9, "b": 10**9}
_SIGN_RE = re.compile(r"\b(?:positive|negative)\b", re.I)
# "Did Amazon's International segment become profitable?", "Is the company loss-making?": the sign of the profit line
_PROFITABLE_RE = re.compile(r"\b(?P<no>unprofitable|loss[\s-]making|in\s+the\s+red|(?:make|made|post(?:ed)?|report(?:ed)?)"
                            r"\s+an?\s+(?:operating\s+|net\s+)?loss)\b|\b(?:profitable|in\s+the\s+black|turn(?:ed)?\s+(?:a\s+)?"
                            r"profit)\b", re.I)
_SEGMENT_NAMED_RE = re.compile(r"\b(?P<name>[A-Z][\w&'\u2019.-]*(?:\s+(?:&\s+)?[A-Z][\w&'\u2019.-]*)*)\s+(?:segment|business"
                               r"|division|reportable\s+segment)\b")
_UNSUITABLE_RE = re.compile(r"\bif\s+(?P<metric>[\w&'\- ]{2,60}?)\s+(?:is|are)\s+not\s+(?:an?\s+)?(?:useful|relevant"
                            r"|meaningful|applicable|appropriate|suitable|good|helpful|sensible)\b", re.I)


@dataclass
class Judgement:
    kind: str                           # trend | compare | threshold | sign | capital_intensive | high_growth | liquidity | customer_concentration
    metric: Concept | None = None       # trend: the metric whose series is judged
    direction: str = "up"               # trend: up | down | better (improving) | worse (deteriorating)
    other: Concept | None = None        # compare: the figure the metric is compared with
    threshold: Decimal | None = None    # threshold: the number it is compared with (a fraction for percent)
    either: bool = False                # "higher or lower", "rise or fall": answered with the word, not Yes/No
    profile: bool = True                # trend: a profile over years with a materiality margin; False for a plain
                                        # "did revenue increase in FY2022" (vs the prior year, any change counts)
    notes: list[str] = field(default_factory=list)   # said in the answer's reason, never read as a rule
    segment: str | None = None          # the segment the figure is read for ("Amazon's International"), as asked
    strict: bool = False                # a stated threshold passed only strictly ("above 15%", "more than 1.0");
                                        # False: reached at it ("at least 15%", "1.0 or more", the configured rules)
    threshold_scale: int | None = None  # threshold: the scale the question states ("$15 billion": 10**9); None: the
                                        # statements' own unit


# a stated threshold passed only strictly: "above", "over", "more than", "greater than", "exceeding", ">" (not ">=");
# "at least", "or more", "of" reach it at the number
_STRICT_RE = re.compile(r"\b(?:above|over|exceed\w*|more\s+than|greater\s+than|higher\s+than)\b|>(?!=)", re.I)
_AT_LEAST_RE = re.compile(r"\bat\s+least\b|\bor\s+(?:more|higher|above|greater)\b|>=", re.I)


def stated_strictly(comparison: str) -> bool:
    """Whether the words that state a threshold ("revenue growth above 15%", "a ratio of at least 1.2") pass it
    only strictly."""
    return bool(_STRICT_RE.search(comparison)) and not _AT_LEAST_RE.search(comparison)


_EITHER_RE = re.compile(r"\b(?:higher|greater|larger|more|lower|less|smaller|rise|rose|increase|grow|fall|fell"
                        r"|decrease|decline)\w*\s+or\s+(?:higher|greater|larger|more|lower|less|smaller|rise|rose"
                        r"|increase|grow|fall|fell|decrease|decline)\w*\b", re.I)


# "Did net income grow more in FY2018 or FY2019?": two years offered, one is the answer (a choice, not yes/no)
_YEAR_CHOICE_RE = re.compile(r"\b(?:fy|fiscal(?:\s+year)?\s*)?'?(?:19|20)\d\d\s*,?\s+or\s+(?:in\s+)?"
                             r"(?:fy|fiscal(?:\s+year)?\s*)?'?(?:19|20)\d\d\b", re.I)


def read_judgement(question: str, lexicon: Lexicon) -> Judgement | None:
    """The judgement a yes/no (or "profile") question asks for, or None for a question that asks a figure."""
    if _YEAR_CHOICE_RE.search(question):
        return None
    judgement = _read_judgement(question, lexicon)
    if judgement is not None and _EITHER_RE.search(question):
        judgement.either = True
    return judgement


def threshold_judgement(question: str, metric: Concept) -> Judgement | None:
    """"Was the liquidity ratio higher or lower than 1.0? Take it as current assets / current liabilities":
    a comparison with a number of a quantity the question defines itself (``metric``: its formula)."""
    than = _THAN_RE.search(question)
    number = _number_after(question, than)
    if not (than and number and _YES_NO_RE.search(question)):
        return None
    return _threshold(than, number, metric, bool(_EITHER_RE.search(question)))


def _number_after(question: str, than):
    return re.match(r"\s*(?:of\s+)?(?:usd\s*|\$\s*)?(?P<n>-?\d[\d,]*(?:\.\d+)?)\s*(?P<pct>%|percent)?\s*"
                    r"(?P<scale>thousand|million|billion|bn|mm|m|k|b)?\b", question[than.end():], re.I) if than else None


def _threshold(than, number, metric: Concept, either: bool = False) -> Judgement:
    n = Decimal(number.group("n").replace(",", ""))
    n = n / 100 if (number.group("pct") or metric.unit == "percent") else n
    scale = _SCALE.get((number.group("scale") or "").lower())
    low = (than.group(1) or than.group(2)).lower() in ("lower", "less", "smaller", "fewer", "below", "under")
    return Judgement("threshold", metric, "down" if low else "up", threshold=n, threshold_scale=scale, either=either)


def _read_judgement(question: str, lexicon: Lexicon) -> Judgement | None:
    yes_no = bool(_YES_NO_RE.search(question))
    profile = bool(_PROFILE_RE.search(question))
    if not (yes_no or profile):
        return None
    if _CONCENTRATION_RE.search(question):
        return Judgement("customer_concentration")
    if _CAPITAL_RE.search(question):
        return Judgement("capital_intensive")
    if _CAPITAL_LIGHT_RE.search(question):
        return Judgement("capital_intensive", direction="down")
    if _GROWTH_RE.search(question):
        # "Treating annual revenue growth above 15% as high growth, ...": the question's own threshold wins
        stated = _GROWTH_THRESHOLD_RE.search(question)
        if stated:
            return Judgement("high_growth", threshold=Decimal(stated.group("n")) / 100,
                             strict=stated_strictly(stated.group("cmp")), notes=["the question's threshold"])
        return Judgement("high_growth")
    covered = _coverage(question, lexicon) if yes_no else None
    if covered is not None:
        return covered
    matches = lexicon.match(question)
    metric = next((m.concept for m in matches if m.concept.formula or m.concept.statement), None)
    up, down = _UP_RE.search(question), _DOWN_RE.search(question)
    than = _THAN_RE.search(question)
    number = _number_after(question, than)
    if _LIQUIDITY_RE.search(question) and any(m.concept.key in ("quick_ratio", "current_ratio") for m in matches):
        # "a healthy liquidity profile based on its quick ratio? Take the quick ratio as (cash + receivables) / total
        # current liabilities, and a value above 1.0 as healthy": the liquidity rule on the ratio named, never a
        # threshold on an operand of its definition
        return _liquidity(question, matches, lexicon)
    if than and yes_no and number:
        # "Is Apple's current ratio less than 1?", "Was the operating margin above 30%?"
        compared = _compared_quantity(question, than, lexicon)
        before = [m.concept for m in matches if m.end <= than.end() - 4]
        if compared is not None or before:
            return _threshold(than, number, compared or before[-1])
    if than and yes_no:
        before = [m.concept for m in matches if m.end <= than.end() - 4]
        after = [m.concept for m in matches if m.start >= than.end()]
        if before and after and before[-1].key != after[0].key:
            # "Was Amazon's capex in 2022 higher than its operating cash flow?"
            low = (than.group(1) or than.group(2)).lower() in ("lower", "less", "smaller", "fewer", "below", "under")
            return Judgement("compare", before[-1], "down" if low else "up", other=after[0])
    profitable = _PROFITABLE_RE.search(question)
    if profitable and yes_no and not _THAN_RE.search(question):
        # a segment's profit is its operating income; the company's, its net income (unless a line is named)
        segment = _SEGMENT_NAMED_RE.search(question)
        line = metric if metric is not None and not metric.formula and metric.statement == "income_statement" else (
            lexicon.concepts.get("operating_income") if segment else lexicon.concepts.get("net_income"))
        if line is not None:
            name = re.sub(r"^(?:(?:did|does|do|is|was|were|are|has|have|had|will|can|could|would|should)\s+)+", "",
                          segment.group("name"), flags=re.I) if segment else None
            return Judgement("sign", line, "down" if profitable.group("no") else "up", segment=name or None)
    sign = _SIGN_RE.search(question)
    if metric is not None and sign and yes_no:
        # "Does PayPal have positive working capital?": the sign of the figure decides
        return Judgement("sign", metric, "up" if sign.group(0).lower().startswith("pos") else "down")
    if metric is not None and (up or down):
        word = (up or down).group(0).lower()
        if word.startswith("improv") or word.startswith(("strengthen", "better")):
            direction = "better"
        elif word.startswith(("deteriorat", "worsen", "weaken")):
            direction = "worse"
        else:
            direction = "up" if up and (not down or up.start() < down.start()) else "down"
        profile_words = re.search(r"\b(?:profile|trend|trajectory|improv\w*|deteriorat\w*|worsen\w*|consistent\w*"
                                  r"|over\s+(?:the\s+)?(?:last|past)|steady|steadily)\b", question, re.I)
        return Judgement("trend", metric, direction, profile=bool(profile_words))
    if _LIQUIDITY_RE.search(question):
        return _liquidity(question, matches, lexicon)
    return None


def _compared_quantity(question: str, than, lexicon: Lexicon) -> Concept | None:
    """The quantity a comparison with a number is about: the last one named in the comparison's own clause, a
    definition in parentheses aside ("Taking its quick ratio as cash divided by total current liabilities, does it
    have a quick ratio above 1.0?": the quick ratio, not the definition's last operand; "Was the operating margin
    (operating income / revenue) above 30%?": the margin). None when the clause names none ("Was the current
    ratio, as of FY2022, above 1.0?": the caller takes the last one named before the comparison)."""
    head = re.sub(r"\([^()]*\)", lambda m: " " * len(m.group(0)), question[:than.start()])
    start = max(head.rfind(c) for c in ",;:.?") + 1
    named = lexicon.match(head[start:])
    return named[-1].concept if named else None


# "Did free cash flow cover both its dividends and its treasury stock purchases?", "Was operating cash flow enough to
# fund capex and dividends?": the source against the sum of the uses
_COVER_RE = re.compile(r"\b(?:cover(?:ed|s)?|(?:enough|sufficient|adequate)\s+to\s+(?:cover|fund|pay\s+for|finance))\b", re.I)


def _coverage(question: str, lexicon: Lexicon) -> Judgement | None:
    cover = _COVER_RE.search(question)
    if cover is None:
        return None
    # a definition in parentheses ("free cash flow (cash from operations minus capex)") names no source or use
    flat = re.sub(r"\([^()]*\)", lambda m: " " * len(m.group(0)), question)
    flat = STATEMENT_HINT_RE.sub(lambda m: " " * len(m.group(0)), flat)  # "using the cash flow statement": no use
    end = flat.find("?", cover.end())
    before = [m.concept for m in lexicon.match(flat[:cover.start()]) if m.concept.unit in (None, "USD")]
    after = [m.concept for m in lexicon.match(flat[cover.end():end if end > 0 else None])
             if m.concept.unit in (None, "USD")]
    uses = list(dict.fromkeys(c.key for c in after))
    if not before or not uses or before[-1].key in uses:
        return None
    parts = {c.key: c for c in after}
    formula = " + ".join(f"abs({k})" if (parts[k].outflow or parts[k].expense) else k for k in uses)
    other = Concept(key="uses", aliases=[" and ".join(metric_name(parts[k]).lower() for k in uses)], formula=formula)
    return Judgement("compare", before[-1], "up", other=other, notes=["coverage"])


def _liquidity(question: str, matches, lexicon: Lexicon) -> Judgement:
    quick = next((m.concept for m in matches if m.concept.key == "quick_ratio"), None)
    # "Treating a current ratio of at least 1.2 as healthy", "treat 1.0 or more as healthy": the question's floor
    stated = _RATIO_FLOOR_RE.search(question)
    return Judgement("liquidity", quick or lexicon.concepts.get("current_ratio"),
                     threshold=Decimal(stated.group("n") or stated.group("m") or stated.group("v")) if stated else None,
                     strict=bool(stated) and stated_strictly(stated.group(0)))


# from the clause that says it ("...for the FY2020; if conventional inventory management is not meaningful ..."): the
# instruction before a ";" stays ("Calculate inventory turnover ratio for the FY2020")
_UNSUITABLE_SENTENCE_RE = re.compile(r"[^.?!;]*\bif\s+[^.?!]*?\bnot\s+(?:an?\s+)?(?:useful|relevant|meaningful|applicable"
                                     r"|appropriate|suitable|good|helpful|sensible)\b[^.?!]*[.?!]?", re.I)


def strip_unsuitable_clause(question: str) -> str:
    """The question without its "if X is not a useful metric ..., state that" sentence."""
    return _UNSUITABLE_SENTENCE_RE.sub(" ", question).strip()


def unsuitable_metric(question: str) -> str | None:
    """The metric a question allows to be unsuitable ("if gross margin is not a useful metric ...")."""
    m = _UNSUITABLE_RE.search(question)
    return m.group("metric").strip() if m else None


@dataclass
class Decision:
    answer: str                 # "Yes" | "No"
    reason: str                 # the figures it rests on, in words
    rule: str                   # the rule as configured
    word: str | None = None     # the answer to an either/or question ("Higher", "Rose"), when it has one


def decide_trend(series: list[tuple[int, Decimal]], metric: Concept, direction: str, unit: str,
                 rule: TrendRule, fmt, material: bool = True) -> Decision:
    """``series``: (fiscal year, value) oldest first, at least two points. Yes when the last year beats the
    first by the configured margin in the asked direction (for "improving", the metric's better direction);
    ``material=False`` (a plain "did it increase"): any change in the asked direction."""
    (y0, v0), (y1, v1) = series[0], series[-1]
    delta = v1 - v0
    if not material:
        rule = TrendRule(years=rule.years, min_change_percent_points=0.0, min_change_relative=0.0)
    if unit == "percent":
        big = delta != 0 and _material(delta, v0, unit, rule)
        size = f"{delta * 100:+.1f} percentage points"
        threshold = f"{rule.min_change_percent_points} percentage points or {rule.min_change_relative:.0%} of FY{y0}"
    else:
        big = v0 != 0 and abs(delta) / abs(v0) >= Decimal(str(rule.min_change_relative)) and delta != 0
        size = f"{(delta / abs(v0) * 100) if v0 else 0:+.1f}%"
        threshold = f"{rule.min_change_relative:.0%} of FY{y0}"
    lower_better = metric.key in LOWER_IS_BETTER
    want_up = direction == "up" or (direction == "better" and not lower_better) or (direction == "worse" and lower_better)
    moved_up = delta > 0
    yes = big and moved_up == want_up
    path = ", ".join(f"FY{y}: {fmt(v)}" for y, v in series)
    word = "rose" if delta > 0 else ("fell" if delta < 0 else "was unchanged")
    reason = f"{metric_name(metric)} {word} from {fmt(v0)} in FY{y0} to {fmt(v1)} in FY{y1} ({size}; {path})"
    rule_text = (f"{'improving' if direction == 'better' else direction}: FY{y1} vs FY{y0} moves by >= "
                 f"{threshold} in that direction")
    if material and rule.latest_year_decides and len(series) >= 3:
        # "as of" the asked year: its move against the year before decides when it reaches the margin
        (yp, vp) = series[-2]
        step = v1 - vp
        rule_text = (f"{'improving' if direction == 'better' else direction} as of FY{y1}: FY{y1} vs FY{yp} moves by "
                     f">= {threshold.replace(f'FY{y0}', f'FY{yp}')} in that direction; a smaller move: FY{y1} vs FY{y0}")
        if step != 0 and _material(step, vp, unit, rule):
            latest = (step > 0) == want_up
            if latest != yes:
                reason += (f"; in the latest year it {'rose' if step > 0 else 'fell'} from {fmt(vp)} in FY{yp} to "
                           f"{fmt(v1)} in FY{y1}")
            yes = latest
    return Decision("Yes" if yes else "No", reason, rule_text, "Rose" if delta > 0 else ("Fell" if delta < 0 else "Unchanged"))


def _material(delta: Decimal, base: Decimal, unit: str, rule: TrendRule) -> bool:
    """A move of ``delta`` from ``base`` is at least the rule's margin: a share of ``base``, or for a percent
    metric the percentage points, whichever is smaller (a 3% retail margin moving to 3.3% has moved)."""
    relative = base != 0 and abs(delta) / abs(base) >= Decimal(str(rule.min_change_relative))
    if unit == "percent":
        return relative or abs(delta) * 100 >= Decimal(str(rule.min_change_percent_points))
    return relative


def metric_name(concept: Concept) -> str:
    name = (concept.aliases or [concept.key.replace("_", " ")])[0]
    return name[:1].upper() + name[1:]


# ---- a choice among named options: "Which of iPad, Mac or iPhone brought Apple the most top line?" ------

_OPTIONS_RES = [
    re.compile(r"\bwhich\s+of\s+(?P<opts>.+?)\s+(?:brought|generated|contributed|had|made|earned|produced|accounted"
               r"|saw|reported|posted|delivered|was|were|is|are|did|recorded|grew|represented)\b", re.I),
    re.compile(r"\bamong\s+(?P<opts>.+?),\s*which\b", re.I),
    re.compile(r"\bwhich\s+(?:segment|region|product|geograph\w*|category|line|business)\w*\s*(?:,|-|:)?\s*"
               r"(?P<opts>[^?]+?\s+or\s+[^?,]+?)\s*,?\s+(?:brought|generated|contributed|had|made|earned|was|were)\b",
               re.I),
]
_MOST_RE = re.compile(r"\b(most|largest|highest|biggest|greatest|top|best|strongest|least|smallest|lowest|fewest"
                      r"|weakest|worst)\b", re.I)


@dataclass
class OptionChoice:
    options: list[str]
    pick: str                  # max | min
    rest: str                  # the question without the options (the metric is named there)


def option_choice(question: str) -> OptionChoice | None:
    """The options a question asks to choose among, and whether the most or the least is asked."""
    for pattern in _OPTIONS_RES:
        m = pattern.search(question)
        if not m:
            continue
        text = m.group("opts").strip()
        parts = re.split(r"\s*;\s*", text) if ";" in text else re.split(r"\s*,\s*", text)
        options: list[str] = []
        for part in parts:
            options += [p for p in re.split(r"\s+(?:or|and)\s+", part) if p] if ";" not in text or part == parts[-1] \
                else [part]
        options = [re.sub(r"^(?:or|and|the|its)\s+", "", o.strip(" .,")).strip() for o in options]
        options = [o for o in options if o]
        if len(options) < 2:
            continue
        after = question[m.end():]
        most = _MOST_RE.search(after) or _MOST_RE.search(question)
        if not most:
            continue
        low = most.group(1).lower() in ("least", "smallest", "lowest", "fewest", "weakest", "worst")
        return OptionChoice(options, "min" if low else "max", question[:m.start("opts")] + " " + after)
    return None


# ---- which of two grew faster: "Did Apple's Services business grow faster than its Products business?" --------

_FASTER_RE = re.compile(r"\b(?:grow|grew|grown|growing|increase[sd]?|rise|rose|risen|expand(?:ed)?)\s+"
                        r"(?P<how>faster|quicker|more\s+quickly|more\s+rapidly|more|slower|more\s+slowly|less)\s+than\s+",
                        re.I)
_SUBJECT_RE = re.compile(r"\b(?:did|does|do|has|have|had|was|were|is|are)\s+(?P<s>.+?)\s*$", re.I)
_OPTION_END_RE = re.compile(r"\s+(?:in|during|for|over|between|from|on|as|based|when|year[\s-]+over)\b|[?.,;:(]", re.I)
_OPTION_OWNER_RE = re.compile(r"^(?:(?:the|its|their|that\s+of|those\s+of)\s+|[\w.&-]+(?:\s+[\w.&-]+)?'s\s+)+", re.I)
_OPTION_LINE_RE = re.compile(r"(?:\s+(?:business|businesses|segment|segments|division|unit|category|line|net\s+sales"
                             r"|sales|net\s+revenues?|revenues?|did|does|do|has|had|have))+$", re.I)


def _option_name(text: str) -> str:
    """"Apple's Services business" -> "Services"; "its net sales" stays "net sales" (the line is the option)."""
    trivial = ("", "net", "total", "gross", "operating")
    owned = _OPTION_OWNER_RE.sub("", text.strip()).strip()
    if owned.lower() in ("revenue", "revenues", "sales", "business", "segment", "results"):
        # "the Gaming segment's revenue": the possessive names the option, not an owner
        owned = re.sub(r"^(?:the|its|their)\s+", "", text.strip(), flags=re.I)
    short = _OPTION_LINE_RE.sub("", owned).strip()
    short = _OPTION_LINE_RE.sub("", re.sub(r"['’]s$", "", short)).strip()  # "the Data Center segment's revenue"
    if re.search(r"\b(?:of|and|for|from|to|in|on)$", short, re.I):
        return owned  # "cost of sales" is a line, not "cost of"
    return owned if short.lower() in trivial else short


@dataclass
class GrowthComparison:
    first: str                 # "Services"
    second: str                # "Products"
    slower: bool               # "grow more slowly than"


def growth_comparison(question: str) -> GrowthComparison | None:
    """Two things whose year-over-year growth a yes/no question compares ("Did AWS grow faster than North
    America in 2022?", "Did iPhone net sales increase more slowly than Mac net sales?"), or None."""
    m = _FASTER_RE.search(question)
    if not m or not _YES_NO_RE.search(question):
        return None
    subject = _SUBJECT_RE.search(question[:m.start()])
    first = subject.group("s") if subject else question[:m.start()]
    second = _OPTION_END_RE.split(question[m.end():], maxsplit=1)[0]
    first, second = _option_name(first), _option_name(second)
    if not first or not second:
        return None
    return GrowthComparison(first, second, m.group("how").lower() in ("slower", "more slowly", "less"))


# ---- a part's share of a whole: "What percentage of Apple's total net sales came from iPhone in FY2022?" ------

_SHARE_RE = re.compile(
    r"\b(?:what|which)\s+(?:share|percentage|percent|proportion|portion|fraction|part|%)\s+of\s+(?P<whole>.+?)\s+"
    r"(?:came|come|comes|was|were|is|are|did)\s+(?:from|in|generated\s+by|contributed\s+by|attributable\s+to|"
    r"accounted\s+for\s+by|derived\s+from|made\s+by|earned\s+(?:by|from|in))\s+(?P<part>.+?)"
    r"(?=\s+(?:in|during|for|at|as\s+of|over)\s+(?:the\s+)?(?:fy|fiscal|\d{4}|end|year)|[?;]|\.(?:\s|$)"
    r"|,\s*(?:answer|round|express|give|state|as\s+a|in\s+percent|using|based)|$)", re.I)


@dataclass
class ShareOfWhole:
    whole: str                 # "Apple's total net sales"
    part: str                  # "iPhone"


# "What was NVIDIA's Data Center revenue as a share of total revenue?": a part of a line over the line's total
_PART_OF_TOTAL_RE = re.compile(
    r"\b(?:what|how\s+much)\s+(?:was|were|is|are|did)\s+(?P<part>.+?)\s+(?P<line>net\s+sales|sales|net\s+revenues?"
    r"|revenues?|operating\s+income|backlog)\s+(?:as\s+an?|represent\s+as\s+an?|in)\s+(?:share|percentage|percent|%"
    r"|proportion|portion|fraction)\s+of\s+(?P<whole>(?:the\s+)?(?:company'?s\s+)?(?:total|consolidated|overall|all)\s+"
    r"[^?.,;]+?)(?=\s+(?:in|during|for|at|as\s+of|over)\s+(?:the\s+)?(?:fy|fiscal|\d{4}|end|year)|[?;,]|\.(?:\s|$)|$)", re.I)


# "What percentage of Apple's FY2022 net sales did Services represent?"; "How much of Amazon's 2022 net sales came
# from AWS, in percent?" (a percent asked: without it "how much of" asks the part's amount)
_SHARE_DID_RE = re.compile(
    r"\b(?:what|which)\s+(?:share|percentage|percent|proportion|portion|fraction|part|%)\s+of\s+(?P<whole>.+?)\s+"
    r"(?:did|does|do)\s+(?P<part>.+?)\s+(?:represent|account\s+for|make\s+up|contribute|generate|comprise)\b", re.I)
_HOW_MUCH_OF_RE = re.compile(
    r"\bhow\s+much\s+of\s+(?P<whole>.+?)\s+(?:came|come|comes|was|were)\s+(?:from|in|generated\s+by|attributable\s+to)"
    r"\s+(?P<part>.+?)(?=\s+(?:in|during|for|at|as\s+of|over)\s+(?:the\s+)?(?:fy|fiscal|\d{4}|end|year)|[?;,]|\.(?:\s|$)|$)",
    re.I)
_PERCENT_ASKED_RE = re.compile(r"\b(?:in\s+percent(?:age)?(?:\s+terms)?|as\s+an?\s+(?:percent(?:age)?|share|%))\b|%", re.I)


def share_of_whole(question: str) -> ShareOfWhole | None:
    """The part and the whole of "what share / percentage / proportion of X came from (was in) Y" and "what was
    Y revenue as a share of total revenue", or None."""
    m = _SHARE_RE.search(question) or _SHARE_DID_RE.search(question)
    if not m and _PERCENT_ASKED_RE.search(question):
        m = _HOW_MUCH_OF_RE.search(question)
    if not m:
        p = _PART_OF_TOTAL_RE.search(question)
        part = _option_name(p.group("part")) if p else ""
        part = re.sub(r"\s+(?:segment|segments|business|division|unit|category)$", "", part, flags=re.I).strip()
        if not p or not part or re.search(r"\b(?:of|and|for|from|to|in|on)$", part, re.I):
            return None  # "cost of sales as a % of total net sales": one line, no part of the total
        return ShareOfWhole(p.group("whole").strip(), part)
    part = re.sub(r"\s+(?:segment|segments|business|division|unit|category)$", "", _option_name(m.group("part")), flags=re.I)
    return ShareOfWhole(m.group("whole").strip(), part.strip()) if part.strip() else None
