"""How analyst_questions_heldout6_outside.jsonl was written (README.md here, "Seventh set").

THIS FILE HOLDS HELD-OUT QUESTIONS: whoever builds, tunes or debugs an answerer, a retriever, a router, a
vocabulary or a scorer must not read it (nor analyst_questions_heldout6_outside.jsonl).

Four 10-Ks from /work/shared/corpus/robustness2/ that no earlier question set used (the companies appear elsewhere
in other years): eBay FY2015 and FY2017 (calendar years; PayPal and Enterprise are discontinued operations from
2015 on, so every eBay question names continuing operations or a line that is continuing only), Apple FY2015 (52
weeks ended September 26, 2015) and Oracle FY2015 (ended May 31, 2015). Every operand was read by hand on its page
(`page` = the project's 1-based page, i.e. the PDF's physical page, as `core.ingest.parse.parse_filing` numbers it)
and every derived figure computed by hand; this script only checks what was written, with the fourth set's checks
(build_analyst_questions_heldout3.py, imported; its questions are not read):
- every "arithmetic = value" step of `checked` is right and a metric/lookup answer is one figure equal to the last
  step to the decimals it shows (`check_records`);
- every operand's row label and printed figure are on its page in the project's parser text (a row label the parser
  wrapped onto the line before its figures counts) and the figure is on the same physical page of pypdfium2's own
  text (`--verify`; needs the corpus).

    PYTHONPATH=$PWD python finrag_pipeline_tests/data/external/build_analyst_questions_heldout6.py [--verify]
"""
from __future__ import annotations

import functools
import importlib.util
import json
import pickle
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "analyst_questions_heldout6_outside.jsonl"
CORPUS = Path("/work/shared/corpus")
CACHE = Path("/tmp/q6_pages")        # parsed pages ({page_number: text}), pickled once per filing

QUESTIONS: list[dict] = []


def q(filing: str, kind: str, question: str, answer: str, steps: str, sources: list[tuple[int, str, str, str]]):
    """sources: (page, row label as printed, figure as printed, period) for every operand."""
    tag = Path(filing).stem.split("_")[0]
    where = "; ".join(f"{tag} p.{page} {label} {figure} ({period})" for page, label, figure, period in sources)
    QUESTIONS.append({"id": f"h6_{len(QUESTIONS) + 1:02d}", "filing": filing, "kind": kind, "question": question,
                      "answer": answer, "checked": f"{steps} | {where}", "_sources": sources})


# ---------------- eBay FY2015 (calendar year; USD millions; continuing operations): balance sheet p.58,
# income statement p.59, cash flows p.62
EBAY15 = "robustness2/EBAY_2015_10K.pdf"
q(EBAY15, "metric",
  "What is eBay's FY2015 operating margin from continuing operations? Define operating margin as income from "
  "operations divided by net revenues, both as shown in the income statement (PayPal and Enterprise are reported as "
  "discontinued operations and excluded). Answer as a percentage rounded to two decimal places.",
  "25.57%", "2,197 / 8,592 = 25.57%",
  [(59, "Income from operations", "2,197", "FY2015"), (59, "Net revenues", "8,592", "FY2015")])
q(EBAY15, "metric",
  "Using the cash flow statement, what was eBay's FY2015 free cash flow from continuing operations, defined as net "
  "cash provided by continuing operating activities less purchases of property and equipment? Answer in USD "
  "millions.",
  "$2,209 million", "2,877 - 668 = 2,209",
  [(62, "Net cash provided by continuing operating activities", "2,877", "FY2015"),
   (62, "Purchases of property and equipment", "668", "FY2015")])
q(EBAY15, "metric",
  "What share of its FY2015 net revenues did eBay spend on product development (its R&D line)? Use the income "
  "statement for continuing operations and answer as a percentage with one decimal.",
  "10.7%", "923 / 8,592 = 10.7%",
  [(59, "Product development", "923", "FY2015"), (59, "Net revenues", "8,592", "FY2015")])
q(EBAY15, "metric",
  "What is the 2 year average of capex as a % of revenue for eBay over FY2014 and FY2015? Capex is purchases of "
  "property and equipment from the cash flow statement and revenue is net revenues from the income statement, both "
  "for continuing operations. Round to two decimal places.",
  "7.43%", "FY2014 622 / 8,790 = 7.08%; FY2015 668 / 8,592 = 7.77%; (622 / 8,790 + 668 / 8,592) / 2 = 7.43%",
  [(62, "Purchases of property and equipment", "622", "FY2014"), (59, "Net revenues", "8,790", "FY2014"),
   (62, "Purchases of property and equipment", "668", "FY2015"), (59, "Net revenues", "8,592", "FY2015")])
q(EBAY15, "metric",
  "Based on eBay's FY2015 income statement, what was its gross margin, i.e. gross profit as a percentage of net "
  "revenues, for continuing operations? Round to one decimal place.",
  "79.4%", "6,821 / 8,592 = 79.4%",
  [(59, "Gross profit", "6,821", "FY2015"), (59, "Net revenues", "8,592", "FY2015")])
q(EBAY15, "judgement",
  "Does eBay have a healthy liquidity profile at the end of FY2015 based on its quick ratio? Define the quick ratio "
  "as (cash and cash equivalents + short-term investments + accounts receivable, net) / total current liabilities, "
  "using the balance sheet.",
  "Yes. At December 31, 2015 eBay's quick ratio was 2.98: cash and cash equivalents, short-term investments and "
  "receivables of $6,750 million against total current liabilities of $2,263 million.",
  "1,832 + 4,299 + 619 = 6,750; 6,750 / 2,263 = 2.98",
  [(58, "Cash and cash equivalents", "1,832", "2015-12-31"), (58, "Short-term investments", "4,299", "2015-12-31"),
   (58, "Accounts receivable, net", "619", "2015-12-31"), (58, "Total current liabilities", "2,263", "2015-12-31")])
q(EBAY15, "judgement",
  "Is eBay a high-growth company based on the growth of its net revenues from continuing operations in FY2014 and "
  "FY2015?",
  "No. Net revenues from continuing operations fell 2.3% in FY2015, from $8,790 million to $8,592 million, after "
  "growing 6.5% in FY2014 (from $8,257 million).",
  "(8,592 - 8,790) / 8,790 = -2.25%; (8,790 - 8,257) / 8,257 = 6.46%",
  [(59, "Net revenues", "8,592", "FY2015"), (59, "Net revenues", "8,790", "FY2014"),
   (59, "Net revenues", "8,257", "FY2013")])
q(EBAY15, "lookup",
  "What was eBay's year-end FY2015 balance of cash and cash equivalents, as reported on its balance sheet? Answer "
  "in USD millions.",
  "$1,832 million", "1,832 from the balance sheet (no arithmetic)",
  [(58, "Cash and cash equivalents", "1,832", "2015-12-31")])


# ---------------- eBay FY2017 (calendar year; USD millions): balance sheet p.62, income statement p.63,
# cash flows p.66, MD&A interest and other, net table p.44
EBAY17 = "robustness2/EBAY_2017_10K.pdf"
q(EBAY17, "metric",
  "What was eBay's effective tax rate on continuing operations in FY2017? Define it as the income tax provision "
  "divided by income from continuing operations before income taxes, both from the income statement. Express it as "
  "a percentage with one decimal.",
  "144.5%", "3,288 / 2,276 = 144.5%",
  [(63, "Income tax benefit (provision)", "3,288", "FY2017"),
   (63, "Income from continuing operations before income taxes", "2,276", "FY2017")])
q(EBAY17, "metric",
  "What is eBay's FY2017 days sales outstanding (DSO)? DSO is defined as 365 * (average accounts receivable, net "
  "between FY2016 and FY2017) / FY2017 net revenues. Use the balance sheet and the income statement and round to "
  "two decimal places.",
  "24.55", "(695 + 592) / 2 = 643.5; 365 * 643.5 / 9,567 = 24.55",
  [(62, "Accounts receivable, net", "695", "2017-12-31"), (62, "Accounts receivable, net", "592", "2016-12-31"),
   (63, "Net revenues", "9,567", "FY2017")])
q(EBAY17, "metric",
  "What was eBay's net working capital at the end of FY2017, defined as total current assets minus total current "
  "liabilities? Answer in USD millions using the balance sheet.",
  "$4,204 million", "7,743 - 3,539 = 4,204",
  [(62, "Total current assets", "7,743", "2017-12-31"), (62, "Total current liabilities", "3,539", "2017-12-31")])
q(EBAY17, "metric",
  "What is eBay's FY2017 unadjusted EBITDA margin? Define unadjusted EBITDA as income from operations (income "
  "statement) plus depreciation and amortization (cash flow statement), divided by net revenues. Give a percentage "
  "rounded to one decimal.",
  "30.7%", "2,265 + 676 = 2,941; 2,941 / 9,567 = 30.7%",
  [(63, "Income from operations", "2,265", "FY2017"), (66, "Depreciation and amortization", "676", "FY2017"),
   (63, "Net revenues", "9,567", "FY2017")])
q(EBAY17, "metric",
  "By what percentage did eBay's net revenues grow in FY2017 compared with FY2016? Round to two decimal places.",
  "6.55%", "(9,567 - 8,979) / 8,979 = 6.55%",
  [(63, "Net revenues", "9,567", "FY2017"), (63, "Net revenues", "8,979", "FY2016")])
q(EBAY17, "judgement",
  "Does eBay have an improving operating margin profile as of FY2017? Take operating margin as income from "
  "operations divided by net revenues and compare FY2015, FY2016 and FY2017.",
  "No. Operating margin edged up from 25.6% in FY2015 to 25.9% in FY2016 but fell to 23.7% in FY2017 (income from "
  "operations of $2,265 million on net revenues of $9,567 million).",
  "FY2015 2,197 / 8,592 = 25.57%; FY2016 2,325 / 8,979 = 25.89%; FY2017 2,265 / 9,567 = 23.68%",
  [(63, "Income from operations", "2,197", "FY2015"), (63, "Net revenues", "8,592", "FY2015"),
   (63, "Income from operations", "2,325", "FY2016"), (63, "Net revenues", "8,979", "FY2016"),
   (63, "Income from operations", "2,265", "FY2017"), (63, "Net revenues", "9,567", "FY2017")])
q(EBAY17, "judgement",
  "Based on FY2017 data, can eBay comfortably cover its interest expense from operating profit? Use interest "
  "coverage = income from operations / interest expense, with interest expense from the interest and other, net "
  "table in MD&A.",
  "Yes. Income from operations of $2,265 million covered interest expense of $292 million 7.76 times in FY2017 "
  "(10.33 times in FY2016).",
  "2,265 / 292 = 7.76; 2,325 / 225 = 10.33",
  [(63, "Income from operations", "2,265", "FY2017"), (44, "Interest expense", "292", "FY2017"),
   (63, "Income from operations", "2,325", "FY2016"), (44, "Interest expense", "225", "FY2016")])
q(EBAY17, "lookup",
  "How much cash did eBay put into its equity investment in Flipkart in FY2017, according to the cash flow "
  "statement? Answer in USD millions.",
  "$514 million", "514 from the cash flow statement (no arithmetic)",
  [(66, "Equity investment in Flipkart", "514", "FY2017")])


# ---------------- Apple FY2015 (52 weeks ended September 26, 2015; USD millions): statement of operations p.41,
# balance sheet p.43, cash flows p.45
AAPL15 = "robustness2/APPLE_2015_10K.pdf"
q(AAPL15, "metric",
  "What is Apple's FY2015 gross margin as a percentage of net sales? Use the statement of operations for the fiscal "
  "year ended September 26, 2015 and round to two decimal places.",
  "40.06%", "93,626 / 233,715 = 40.06%",
  [(41, "Gross margin", "93,626", "FY2015"), (41, "Net sales", "233,715", "FY2015")])
q(AAPL15, "metric",
  "What was Apple's effective tax rate for fiscal 2015? Compute it as the provision for income taxes divided by "
  "income before provision for income taxes, from the statement of operations, as a percentage with one decimal.",
  "26.4%", "19,121 / 72,515 = 26.4%",
  [(41, "Provision for income taxes", "19,121", "FY2015"),
   (41, "Income before provision for income taxes", "72,515", "FY2015")])
q(AAPL15, "metric",
  "What is Apple's FY2015 days payable outstanding (DPO)? DPO is defined as: 365 * (average accounts payable "
  "between FY2014 and FY2015) / (FY2015 COGS + change in inventory between FY2014 and FY2015). Round your answer to "
  "two decimal places. Address the question by using the line items and information shown within the balance "
  "sheet and the P&L statement.",
  "85.43", "(35,490 + 30,196) / 2 = 32,843; 140,089 + (2,349 - 2,111) = 140,327; 365 * 32,843 / 140,327 = 85.43",
  [(43, "Accounts payable", "35,490", "2015-09-26"), (43, "Accounts payable", "30,196", "2014-09-27"),
   (41, "Cost of sales", "140,089", "FY2015"), (43, "Inventories", "2,349", "2015-09-26"),
   (43, "Inventories", "2,111", "2014-09-27")])
q(AAPL15, "metric",
  "What is Apple's FY2015 free cash flow, defined as cash generated by operating activities minus payments for "
  "acquisition of property, plant and equipment? Answer in USD billions rounded to two decimals, using the cash "
  "flow statement.",
  "$70.02 billion", "81,266 - 11,247 = 70,019; 70,019 / 1,000 = 70.02",
  [(45, "Cash generated by operating activities", "81,266", "FY2015"),
   (45, "Payments for acquisition of property, plant and equipment", "11,247", "FY2015")])
q(AAPL15, "judgement",
  "Is Apple a high-growth company based on its net sales growth in fiscal 2015?",
  "Yes. Net sales grew 27.9% in fiscal 2015, from $182,795 million to $233,715 million, after 7.0% growth in fiscal "
  "2014.",
  "(233,715 - 182,795) / 182,795 = 27.86%; (182,795 - 170,910) / 170,910 = 6.95%",
  [(41, "Net sales", "233,715", "FY2015"), (41, "Net sales", "182,795", "FY2014"),
   (41, "Net sales", "170,910", "FY2013")])
q(AAPL15, "judgement",
  "Is Apple a capital-intensive business based on FY2015 data? Consider capex as a % of net sales and net PP&E as a "
  "share of total assets.",
  "No. Capex (payments for acquisition of property, plant and equipment of $11,247 million) was 4.8% of net sales "
  "of $233,715 million, and net PP&E of $22,471 million was 7.7% of total assets of $290,479 million.",
  "11,247 / 233,715 = 4.81%; 22,471 / 290,479 = 7.74%",
  [(45, "Payments for acquisition of property, plant and equipment", "11,247", "FY2015"),
   (41, "Net sales", "233,715", "FY2015"), (43, "Property, plant and equipment, net", "22,471", "2015-09-26"),
   (43, "Total assets", "290,479", "2015-09-26")])
q(AAPL15, "lookup",
  "How much did Apple spend on R&D in fiscal 2015? Answer in USD millions.",
  "$8,067 million", "8,067 from the statement of operations (no arithmetic)",
  [(41, "Research and development", "8,067", "FY2015")])


# ---------------- Oracle FY2015 (ended May 31, 2015; USD millions): balance sheet p.90, statement of operations
# p.91, cash flows p.94
ORCL15 = "robustness2/ORACLE_2015_10K.pdf"
q(ORCL15, "metric",
  "What was Oracle's FY2015 dividend payout ratio, defined as payments of dividends to stockholders (cash flow "
  "statement) divided by net income? Oracle's fiscal 2015 ended May 31, 2015. Answer as a percentage with two "
  "decimals.",
  "22.69%", "2,255 / 9,938 = 22.69%",
  [(94, "Payments of dividends to stockholders", "2,255", "FY2015"), (91, "Net income", "9,938", "FY2015")])
q(ORCL15, "metric",
  "What is Oracle's FY2015 interest coverage ratio, defined as operating income divided by interest expense? Use "
  "the statement of operations and round to two decimal places.",
  "12.14", "13,871 / 1,143 = 12.14",
  [(91, "Operating income", "13,871", "FY2015"), (91, "Interest expense", "1,143", "FY2015")])
q(ORCL15, "metric",
  "By what percentage did Oracle's total cloud revenues (cloud software as a service and platform as a service plus "
  "cloud infrastructure as a service) grow in FY2015 compared with FY2014? Answer as a percentage with one decimal.",
  "32.7%", "1,485 + 608 = 2,093; 1,121 + 456 = 1,577; (2,093 - 1,577) / 1,577 = 32.7%",
  [(91, "Cloud software as a service and platform as a service", "1,485", "FY2015"),
   (91, "Cloud infrastructure as a service", "608", "FY2015"),
   (91, "Cloud software as a service and platform as a service", "1,121", "FY2014"),
   (91, "Cloud infrastructure as a service", "456", "FY2014")])
q(ORCL15, "metric",
  "What was Oracle's R&D expense as a % of total revenues in FY2015? Round to one decimal place.",
  "14.5%", "5,524 / 38,226 = 14.5%",
  [(91, "Research and development", "5,524", "FY2015"), (91, "Total revenues", "38,226", "FY2015")])
q(ORCL15, "judgement",
  "Does Oracle have an improving operating margin profile as of FY2015? Take operating margin as operating income "
  "divided by total revenues and look at FY2013 to FY2015.",
  "No. Operating margin declined from 39.5% in FY2013 to 38.6% in FY2014 and 36.3% in FY2015 (operating income of "
  "$13,871 million on total revenues of $38,226 million).",
  "FY2013 14,684 / 37,180 = 39.49%; FY2014 14,759 / 38,275 = 38.56%; FY2015 13,871 / 38,226 = 36.29%",
  [(91, "Operating income", "14,684", "FY2013"), (91, "Total revenues", "37,180", "FY2013"),
   (91, "Operating income", "14,759", "FY2014"), (91, "Total revenues", "38,275", "FY2014"),
   (91, "Operating income", "13,871", "FY2015"), (91, "Total revenues", "38,226", "FY2015")])
q(ORCL15, "judgement",
  "Does Oracle have a healthy liquidity profile based on its quick ratio at May 31, 2015? Define the quick ratio as "
  "(cash and cash equivalents + marketable securities + trade receivables, net) / total current liabilities.",
  "Yes. The quick ratio was 3.92: $59,986 million of cash and cash equivalents, marketable securities and trade "
  "receivables against $15,291 million of total current liabilities.",
  "21,716 + 32,652 + 5,618 = 59,986; 59,986 / 15,291 = 3.92",
  [(90, "Cash and cash equivalents", "21,716", "2015-05-31"), (90, "Marketable securities", "32,652", "2015-05-31"),
   (90, "Trade receivables, net", "5,618", "2015-05-31"), (90, "Total current liabilities", "15,291", "2015-05-31")])
q(ORCL15, "lookup",
  "What were Oracle's new software licenses revenues in fiscal 2015 (the year ended May 31, 2015)? Answer in USD "
  "millions.",
  "$8,535 million", "8,535 from the statement of operations (no arithmetic)",
  [(91, "New software licenses", "8,535", "FY2015")])


# ---------------- checks and output (the fourth set's, imported)

@functools.cache
def _heldout3():
    spec = importlib.util.spec_from_file_location("build_h3", HERE / "build_analyst_questions_heldout3.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_records() -> list[str]:
    """The fourth set's arithmetic and answer checks, run on this set's QUESTIONS."""
    h3 = _heldout3()
    h3.QUESTIONS = QUESTIONS
    return h3.check_records()


def _parsed_pages(filing: str) -> dict[int, str]:
    cache = CACHE / f"{Path(filing).stem}.pkl"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    from finrag_pipeline.core.ingest.parse import parse_filing

    pages = {p.page_number: p.text for p in parse_filing(CORPUS / filing).pages}
    CACHE.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps(pages))
    return pages


def verify_pages() -> list[str]:
    """Every operand's label and printed figure on one line of its page in the parser text (or the label on the
    line before, where the parser wrapped a long row label), and the figure on the same physical page of
    pypdfium2's text."""
    import pypdfium2 as pdfium

    norm, problems, parsed, pdfs = _heldout3()._norm, [], {}, {}
    for row in QUESTIONS:
        filing = row["filing"]
        if filing not in parsed:
            parsed[filing] = _parsed_pages(filing)
            pdfs[filing] = pdfium.PdfDocument(CORPUS / filing)
        for page, label, figure, _period in row["_sources"]:
            lines = [norm(line) for line in parsed[filing].get(page, "").splitlines()]
            windows = [(f"{before} {line}", line) for before, line in zip([""] + lines, lines, strict=False)]
            if not any(norm(figure) in line and (norm(label) in line or norm(label) in window)
                       for window, line in windows):
                problems.append(f"{row['id']}: parser p.{page} has no line with {label!r} and {figure!r}")
            pdf_text = norm(pdfs[filing][page - 1].get_textpage().get_text_range())
            for token in norm(figure).split():
                if token.strip("()") not in pdf_text:
                    problems.append(f"{row['id']}: pypdfium2 p.{page} lacks {token!r}")
    return problems


def records() -> list[dict]:
    return [{k: v for k, v in row.items() if not k.startswith("_")} for row in QUESTIONS]


def main() -> None:
    problems = check_records() + (verify_pages() if "--verify" in sys.argv else [])
    if problems:
        sys.exit("\n".join(problems))
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records()), encoding="utf-8")
    print(f"wrote {len(QUESTIONS)} questions to {OUT}")


if __name__ == "__main__":
    main()
