"""Narrative questions from MD&A prose: sentences that explain a change.

"Operating income increased $13.5 billion or 19% driven by growth across each of our segments."
-> Q "What drove the increase in Microsoft's operating income in fiscal 2022?"
   reference "growth across each of our segments" (the stated cause, offsets included).

Evidence is the sentence's leaf chunk on the page that prints it. There is no figure to commit to:
these items carry no answer_values and are scored by the judge when one is configured (claim
overlap), and by retrieval metrics always. Only sentences about the filing's own fiscal year (no
other year named) and with a short, figure-free subject are used.
"""

from __future__ import annotations

import random
import re
from typing import Any

from finrag_pipeline.core.models import Chunk, EvidencePlace, FilingMeta, Page, QAItem, stable_id

GENERATOR = "model_free"
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])|\s*[\u2022\u25cf\u25aa]\s*")
_CAUSE_RE = re.compile(
    r"^(?P<subject>[A-Z][A-Za-z&,'\- ]{2,70}?)\s+(?P<verb>increased|decreased|grew|declined|rose|fell)\b"
    r"(?P<amount>(?:[^.;]|\.(?=\d)){0,90}?),?\s+(?:primarily|mainly|largely|principally|partly|partially)?\s*"
    r"(?P<link>due(?:\s+(?:primarily|mainly|largely|principally))?\s+to|driven by|as a result of|reflecting|"
    r"because of)\s+(?P<cause>[^;]{12,400}?)\.?$")
# "The increase in cost of sales in absolute dollars in 2022, compared to the prior year, is primarily due to ..."
_THE_CHANGE_RE = re.compile(
    r"^The (?P<dir>increase|decrease) in (?P<subject>[A-Za-z&,'\- ]{2,70}?)(?: in absolute dollars)?"
    r"(?: (?:in|during) (?:fiscal )?(?:19|20)\d\d)?(?:,? compared (?:to|with) the prior (?:fiscal )?year,?)?\s+"
    r"(?:is|was) (?:primarily |mainly |largely |principally )?(?P<link>due to|driven by|attributable to|"
    r"the result of)\s+(?P<cause>[^;]{12,400}?)\.?$")
_YEAR_RE = re.compile(r"\b(?:19|20)\d\d\b")
_LEADING_RE = re.compile(r"^(?:In|During|For) (?:fiscal )?(?:year )?[^,]{0,30},\s*", re.IGNORECASE)
_UP = {"increased", "grew", "rose"}
# first words of a line-item subject written lowercase in a question ("Operating income" ->
# "operating income"); anything else is a name ("Mac", "Europe", "BGS") and keeps its capital
_COMMON_FIRST = frozenset(["operating", "net", "total", "revenue", "revenues", "interest", "research", "general", "gross", "cost", "costs", "income", "deferred", "sales", "selling", "other", "loss", "marketing", "product", "products", "services", "server", "enterprise", "commercial", "search", "advertising", "depreciation", "cash", "capital", "segment", "effective"])
TEMPLATES = ["What drove the {dir} in {co}'s {subject} in fiscal {year}?",
             "Why did {co}'s {subject} {verb} in fiscal {year}?",
             "What explains the {dir} in {subject} at {co} in fiscal {year}?"]


def cause_sentences(text: str) -> list[dict[str, str]]:
    """The explained changes of a text: {sentence, subject, direction, cause}."""
    out = []
    for sentence in _SENTENCE_SPLIT.split(re.sub(r"\s+", " ", text)):
        sentence = re.sub(r"^.*\|\s*", "", sentence.strip())  # the chunk's context header ("Amazon ... | ")
        s = _LEADING_RE.sub("", sentence)
        s = s[:1].upper() + s[1:]
        m = _CAUSE_RE.match(s) or _THE_CHANGE_RE.match(s)
        if not m:
            continue
        direction = m.group("dir") if "dir" in m.groupdict() else (
            "increase" if m.group("verb") in _UP else "decrease")
        subject = _dedupe_heading(m.group("subject").strip(" ,"))
        if len(subject.split()) > 7 or re.search(r"\d|\b(?:we|our|it|this|these|they|company|primarily|reflects?)\b",
                                                  subject, re.IGNORECASE):
            continue
        cause = re.split(r"(?<![A-Z])\.\s", m.group("cause").strip())[0].rstrip(".")  # a missed sentence break
        if re.search(r"\(\d\)|\s\d+$", cause) or len(cause.split()) < 3 or _YEAR_RE.search(cause):
            continue  # a footnote marker or a page number run into the sentence: not a clean cause
        out.append({"sentence": sentence.strip(), "subject": subject,
                    "direction": direction,
                    "cause": cause})
    return out


def _dedupe_heading(subject: str) -> str:
    """A heading run into its sentence: "Greater China Greater China net sales" -> "Greater China net sales"."""
    words = subject.split()
    for k in range(1, len(words) // 2 + 1):
        if [w.lower() for w in words[:k]] == [w.lower() for w in words[k:2 * k]]:
            return " ".join(words[k:])
    return subject


def _page_of(chunk: Chunk, sentence: str, pages: dict[int, str]) -> int | None:
    probe = re.sub(r"\s+", " ", sentence[:60]).lower()
    for n in chunk.pages:
        if probe in re.sub(r"\s+", " ", pages.get(n, "")).lower():
            return n
    return None


def narrative_items(meta: FilingMeta, company: str, pages: list[Page], chunks: list[Chunk],
                    rng: random.Random, count: Any) -> list[QAItem]:
    """One question per explained line (subject) of the MD&A, in a seeded order."""
    page_text = {p.page_number: p.text for p in pages}
    seen: set[str] = set()
    out: list[QAItem] = []
    for chunk in chunks:
        # MD&A (Item 7); a chunk whose section is unknown too (the sentence pattern is specific enough)
        if not chunk.is_leaf or chunk.chunk_type != "prose" or (chunk.section and
                                                                not chunk.section.lower().startswith("item 7")):
            continue
        for found in cause_sentences(chunk.text):
            years = {int(y) for y in _YEAR_RE.findall(found["sentence"])}
            # the filing's own year, or its year against the prior one ("in 2022 compared to 2021")
            if years - {meta.fiscal_year, meta.fiscal_year - 1} or (years and meta.fiscal_year not in years):
                count("narrative_skipped:other_year")
                continue
            key = found["subject"].lower()
            if key in seen:
                continue
            page = _page_of(chunk, found["sentence"], page_text)
            if page is None:
                count("narrative_skipped:sentence_not_on_page")
                continue
            seen.add(key)
            n = rng.randrange(len(TEMPLATES))
            subject = found["subject"]
            if subject.split()[0].lower() in _COMMON_FIRST and subject[1:2].islower():
                subject = subject[:1].lower() + subject[1:]
            verb = "rise" if found["direction"] == "increase" else "fall"
            q = TEMPLATES[n].format(dir=found["direction"], co=company, subject=subject, year=meta.fiscal_year,
                                    verb=verb)
            out.append(QAItem(
                qa_id=stable_id(meta.filing_id, GENERATOR, "narrative_cause", key), filing_id=meta.filing_id,
                question=q[:1].upper() + q[1:], reference_answer=found["cause"][:1].upper() + found["cause"][1:] + ".",
                question_type="narrative", periods=[f"FY{meta.fiscal_year}"],
                evidence=[[EvidencePlace(chunk_id=chunk.chunk_id, page=page, filing_id=meta.filing_id)]],
                generator=GENERATOR, generator_version="1.1", difficulty="medium", source="generated",
                metadata={"template": f"narrative_cause_{n}", "sentence": found["sentence"],
                          "direction": found["direction"], "subject": found["subject"]}))
    rng.shuffle(out)
    return out
