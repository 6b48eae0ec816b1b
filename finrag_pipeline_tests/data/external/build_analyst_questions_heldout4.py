"""How analyst_questions_heldout4_outside.jsonl was written (README.md here, "Fifth set").

THIS FILE HOLDS HELD-OUT QUESTIONS: whoever builds, tunes or debugs an answerer, a retriever, a router, a
vocabulary or a scorer must not read it (nor analyst_questions_heldout4_outside.jsonl).

Five 10-Ks from /work/shared/corpus/robustness2/ that no question set used (eBay 2016, Apple 2019, Oracle 2017,
Foot Locker 2023, AES 2015). Every operand was read by hand on its page (`page` = the project's 1-based page, i.e.
the PDF's physical page, as `core.ingest.parse.parse_filing` numbers it) and every derived figure computed by hand.
This script only checks what was written, with the fourth set's checks (imported from
build_analyst_questions_heldout3.py, run on this list instead of that one's):
- every operand line (a row label and its printed figure) is on its page in the project's parser text and the
  figure is on the same physical page of pypdfium2's own text (`--verify`; needs the corpus);
- every "arithmetic = value" step of `checked` is right (the second set's `check_arithmetic`);
- the answer of a metric/lookup is one figure that equals the last step of `checked` to the decimals it shows.

    PYTHONPATH=$PWD python finrag_pipeline_tests/data/external/build_analyst_questions_heldout4.py [--verify]
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "analyst_questions_heldout4_outside.jsonl"
CORPUS = Path("/work/shared/corpus")
CACHE = Path("/tmp/q4")            # parsed pages, pickled once per filing (parse_filing is slow on 2 cores)

QUESTIONS: list[dict] = []


def q(filing: str, kind: str, question: str, answer: str, steps: str, sources: list[tuple[int, str, str, str]]):
    """sources: (page, row label as printed, figure as printed, period) for every operand."""
    tag = Path(filing).stem.split("_")[0]
    where = "; ".join(f"{tag} p.{page} {label} {figure} ({period})" for page, label, figure, period in sources)
    QUESTIONS.append({"id": f"h4_{len(QUESTIONS) + 1:02d}", "filing": filing, "kind": kind, "question": question,
                      "answer": answer, "checked": f"{steps} | {where}", "_sources": sources})


# ---------------- eBay FY2016 (calendar year; USD millions): balance sheet p.61, income statement p.62,
# cash flows p.65 (PayPal and Enterprise are discontinued operations, shown apart on every statement)
EBAY = "robustness2/EBAY_2016_10K.pdf"
q(EBAY, "metric",
  "What was eBay's FY2016 operating margin? Operating margin is defined as income from operations divided by net "
  "revenues. Answer as a percentage rounded to one decimal place, using the income statement.",
  "25.9%", "FY2016: 2,325 / 8,979 = 25.89%",
  [(62, "Income from operations", "2,325", "FY2016"), (62, "Net revenues", "8,979", "FY2016")])
q(EBAY, "metric",
  "By what percentage did eBay's net revenues grow in FY2016 compared with FY2015? Round to one decimal place.",
  "4.5%", "(8,979 - 8,592) / 8,592 = 4.50%",
  [(62, "Net revenues", "8,979 $ 8,592", "FY2016 FY2015")])
q(EBAY, "metric",
  "What is eBay's FY2016 free cash flow in USD millions? Define free cash flow as total net cash provided by "
  "operating activities (including discontinued operations) minus purchases of property and equipment. Answer "
  "by primarily using the cash flow statement.",
  "$2,200 million", "2,826 - 626 = 2,200",
  [(65, "Net cash provided by operating activities", "2,826", "FY2016"),
   (65, "Purchases of property and equipment", "(626)", "FY2016")])
q(EBAY, "metric",
  "What is eBay's 3 year average of capex as a % of revenue from FY2014 to FY2016? Capex is purchases of property "
  "and equipment from the cash flow statement and revenue is net revenues from the income statement; average the "
  "three yearly ratios. Answer as a percentage with one decimal.",
  "7.3%", "(622 / 8,790 + 668 / 8,592 + 626 / 8,979) / 3 = 7.27%",
  [(65, "Purchases of property and equipment", "(626) (668) (622)", "FY2016 FY2015 FY2014"),
   (62, "Net revenues", "8,979 $ 8,592 $ 8,790", "FY2016 FY2015 FY2014")])
q(EBAY, "judgement",
  "Does eBay have a healthy liquidity profile based on its quick ratio as of the end of FY2016? Take the quick ratio "
  "as (cash and cash equivalents + short-term investments + accounts receivable, net) / total current liabilities "
  "and call it healthy above 1.0.",
  "Yes. eBay's quick ratio was 2.01 at December 31, 2016: $7,741 million of cash, short-term investments and "
  "receivables against $3,847 million of current liabilities.",
  "(1,816 + 5,333 + 592) / 3,847 = 2.01",
  [(61, "Cash and cash equivalents", "1,816", "2016-12-31"), (61, "Short-term investments", "5,333", "2016-12-31"),
   (61, "Accounts receivable, net", "592", "2016-12-31"), (61, "Total current liabilities", "3,847", "2016-12-31")])
q(EBAY, "judgement",
  "Is eBay a capital-intensive business based on FY2016 data? Support the answer with capex as a % of revenue and "
  "net property and equipment as a % of total assets.",
  "No. eBay spent $626 million on property and equipment in FY2016, 7.0% of its $8,979 million of net revenues, "
  "and net property and equipment of $1,516 million was only 6.4% of total assets; a marketplace runs on little "
  "physical capital.",
  "capex / revenue: 626 / 8,979 = 6.97%; net PP&E / total assets: 1,516 / 23,847 = 6.36%",
  [(65, "Purchases of property and equipment", "(626)", "FY2016"), (62, "Net revenues", "8,979", "FY2016"),
   (61, "Property and equipment, net", "1,516", "2016-12-31"), (61, "Total assets", "23,847", "2016-12-31")])
q(EBAY, "lookup",
  "How much did eBay spend on product development, its R&D line, in FY2016? Answer in USD millions.",
  "$1,114 million", "1,114 from the income statement (no arithmetic)",
  [(62, "Product development", "1,114", "FY2016")])


# ---------------- Apple FY2019 (52 weeks ended September 28, 2019; USD millions): income statement p.32,
# balance sheet p.34, cash flows p.36
AAPL = "robustness2/APPLE_2019_10K.pdf"
q(AAPL, "metric",
  "What was Apple's gross margin percentage for fiscal year 2019 (the year ended September 28, 2019)? Use the "
  "income statement and round to one decimal place.",
  "37.8%", "FY2019: 98,392 / 260,174 = 37.82%",
  [(32, "Gross margin", "98,392", "FY2019"), (32, "Total net sales", "260,174", "FY2019")])
q(AAPL, "metric",
  "What was Apple's R&D expense as a percentage of total net sales in FY2019 (fiscal year ended September 2019)? "
  "Round to one decimal place.",
  "6.2%", "16,217 / 260,174 = 6.23%",
  [(32, "Research and development", "16,217", "FY2019"), (32, "Total net sales", "260,174", "FY2019")])
q(AAPL, "metric",
  "What is Apple's FY2019 free cash flow, defined as cash generated by operating activities minus payments for "
  "acquisition of property, plant and equipment? Answer in USD billions rounded to two decimals, relying on the "
  "cash flow statement. Fiscal 2019 ended September 28, 2019.",
  "$58.90 billion", "(69,391 - 10,495) / 1,000 = 58.896",
  [(36, "Cash generated by operating activities", "69,391", "FY2019"),
   (36, "Payments for acquisition of property, plant and equipment", "(10,495)", "FY2019")])
q(AAPL, "metric",
  "What is Apple's FY2019 days payable outstanding (DPO)? DPO is defined as: 365 * (average accounts payable "
  "between FY2018 and FY2019) / (FY2019 COGS + change in inventory between FY2018 and FY2019). Round your answer "
  "to two decimal places. Use the line items shown in the balance sheet and the P&L statement (fiscal years end "
  "in late September).",
  "115.10", "365 * ((46,236 + 55,888) / 2) / (161,782 + (4,106 - 3,956)) = 115.10",
  [(34, "Accounts payable", "46,236 $ 55,888", "2019-09-28 2018-09-29"),
   (34, "Inventories", "4,106 3,956", "2019-09-28 2018-09-29"), (32, "Total cost of sales", "161,782", "FY2019")])
q(AAPL, "metric",
  "What was Apple's dividend payout ratio in FY2019, defined as payments for dividends and dividend equivalents "
  "(cash flow statement) divided by net income? Answer as a percentage with two decimals.",
  "25.55%", "14,119 / 55,256 = 25.55%",
  [(36, "Payments for dividends and dividend equivalents", "(14,119)", "FY2019"), (32, "Net income", "55,256", "FY2019")])
q(AAPL, "judgement",
  "Does Apple have a healthy liquidity profile based on its quick ratio at the end of fiscal 2019 (September 28, "
  "2019)? Use (cash and cash equivalents + current marketable securities + accounts receivable, net) / total "
  "current liabilities; healthy means above 1.0.",
  "Yes. The quick ratio was 1.17: $123,483 million of cash, current marketable securities and receivables against "
  "$105,718 million of current liabilities at September 28, 2019.",
  "(48,844 + 51,713 + 22,926) / 105,718 = 1.17",
  [(34, "Cash and cash equivalents", "48,844", "2019-09-28"), (34, "Marketable securities", "51,713", "2019-09-28"),
   (34, "Accounts receivable, net", "22,926", "2019-09-28"), (34, "Total current liabilities", "105,718", "2019-09-28")])
q(AAPL, "judgement",
  "Does Apple have an improving gross margin profile as of FY2019? Look at fiscal 2017 to fiscal 2019 (years ended "
  "in September). If gross margin is not a useful metric for a company like this, state that and explain why.",
  "No. Gross margin slipped each year: 38.5% in FY2017, 38.3% in FY2018 and 37.8% in FY2019 (gross margin of "
  "$98,392 million on $260,174 million of net sales).",
  "FY2017: 88,186 / 229,234 = 38.47%; FY2018: 101,839 / 265,595 = 38.34%; FY2019: 98,392 / 260,174 = 37.82%",
  [(32, "Gross margin", "98,392 101,839 88,186", "FY2019 FY2018 FY2017"),
   (32, "Total net sales", "260,174 265,595 229,234", "FY2019 FY2018 FY2017")])
q(AAPL, "lookup",
  "How much cash did Apple spend buying back its own shares in fiscal 2019? Answer in USD millions.",
  "$66,897 million", "66,897 from the cash flow statement (no arithmetic)",
  [(36, "Repurchases of common stock", "(66,897)", "FY2019")])


# ---------------- Oracle FY2017 (year ended May 31, 2017; USD millions): balance sheet p.84, statement of
# operations p.85 (no gross profit line: costs are by function), cash flows p.88
ORCL = "robustness2/ORACLE_2017_10K.pdf"
q(ORCL, "metric",
  "What was Oracle's operating margin in fiscal 2017 (the year ended May 31, 2017)? Operating margin = operating "
  "income / total revenues. Answer as a percentage with one decimal.",
  "33.7%", "12,710 / 37,728 = 33.69%",
  [(85, "Operating income", "12,710", "FY2017"), (85, "Total revenues", "37,728", "FY2017")])
q(ORCL, "metric",
  "What is Oracle's FY2017 unadjusted EBITDA in USD millions? Define unadjusted EBITDA as unadjusted operating "
  "income + depreciation + amortization of intangible assets, taking depreciation from the cash flow statement. "
  "Fiscal 2017 ended May 31, 2017.",
  "$15,161 million", "12,710 + 1,000 + 1,451 = 15,161",
  [(85, "Operating income", "12,710", "FY2017"), (88, "Depreciation", "1,000", "FY2017"),
   (88, "Amortization of intangible assets", "1,451", "FY2017")])
q(ORCL, "metric",
  "What was Oracle's interest coverage ratio for the fiscal year ended May 31, 2017, defined as operating income "
  "divided by interest expense? Round to two decimal places.",
  "7.07", "12,710 / 1,798 = 7.07",
  [(85, "Operating income", "12,710", "FY2017"), (85, "Interest expense", "(1,798)", "FY2017")])
q(ORCL, "metric",
  "What was Oracle's effective tax rate in FY2017 (year ended May 31, 2017), i.e. the provision for income taxes "
  "over income before provision for income taxes? Answer as a percentage, one decimal.",
  "18.9%", "2,182 / 11,517 = 18.95%",
  [(85, "Provision for income taxes", "2,182", "FY2017"),
   (85, "Income before provision for income taxes", "11,517", "FY2017")])
q(ORCL, "metric",
  "By what percentage did Oracle's total cloud revenues grow from fiscal 2016 to fiscal 2017 (years ended May 31)? "
  "Round to one decimal place.",
  "60.2%", "(4,571 - 2,853) / 2,853 = 60.22%",
  [(85, "Total cloud revenues", "4,571 2,853", "FY2017 FY2016")])
q(ORCL, "judgement",
  "Is Oracle a high-growth company based on its total revenues in fiscal 2016 and fiscal 2017 (years ended May "
  "31)?",
  "No. Total revenues rose only 1.8% in fiscal 2017, from $37,047 million to $37,728 million, after falling 3.1% "
  "in fiscal 2016 from $38,226 million; fast cloud growth did not lift the total.",
  "FY2017: (37,728 - 37,047) / 37,047 = 1.84%; FY2016: (37,047 - 38,226) / 38,226 = -3.08%",
  [(85, "Total revenues", "37,728 37,047 38,226", "FY2017 FY2016 FY2015")])
q(ORCL, "judgement",
  "Does Oracle have a healthy liquidity profile based on its current ratio as of May 31, 2017? Treat a current "
  "ratio above 1.0 as healthy.",
  "Yes. The current ratio was 3.08: total current assets of $74,515 million against total current liabilities of "
  "$24,178 million at May 31, 2017.",
  "74,515 / 24,178 = 3.08",
  [(84, "Total current assets", "74,515", "2017-05-31"), (84, "Total current liabilities", "24,178", "2017-05-31")])
q(ORCL, "lookup",
  "What were Oracle's capital expenditures in fiscal 2017 (year ended May 31, 2017)? Answer in USD millions using "
  "the cash flow statement.",
  "$2,021 million", "2,021 from the cash flow statement (no arithmetic)",
  [(88, "Capital expenditures", "(2,021)", "FY2017")])


# ---------------- Foot Locker fiscal 2022 = 52 weeks ended January 28, 2023 (the file is labelled 2023; it is the
# 2022 Form 10-K; fiscal 2021 and 2020 were 52 weeks too, p.40): statement of operations p.35, balance sheet p.37
# (its totals of current assets and current liabilities are unlabelled rows), cash flows p.39
FL = "robustness2/FOOTLOCKER_2023_10K.pdf"
q(FL, "metric",
  "What is Foot Locker's inventory turnover ratio for fiscal 2022 (the 52 weeks ended January 28, 2023)? Inventory "
  "turnover = cost of sales / average merchandise inventories at the start and end of the year. Round to two "
  "decimals, using the P&L and the balance sheet.",
  "4.09", "5,955 / ((1,643 + 1,266) / 2) = 4.09",
  [(35, "Cost of sales", "5,955", "FY2022"), (37, "Merchandise inventories", "1,643 1,266", "2023-01-28 2022-01-29")])
q(FL, "metric",
  "What was Foot Locker's gross margin in fiscal 2022 (year ended January 28, 2023)? Define gross margin as "
  "(sales - cost of sales) / sales, where sales exclude licensing revenue. Answer as a percentage with one decimal.",
  "31.9%", "(8,747 - 5,955) / 8,747 = 31.92%",
  [(35, "Sales", "8,747", "FY2022"), (35, "Cost of sales", "5,955", "FY2022")])
q(FL, "metric",
  "What was Foot Locker's operating margin for fiscal 2022 (ended January 28, 2023), defined as income from "
  "operations over total revenue? Answer as a percentage rounded to two decimals.",
  "6.63%", "581 / 8,759 = 6.63%",
  [(35, "Income from operations", "581", "FY2022"), (35, "Total revenue", "8,759", "FY2022")])
q(FL, "metric",
  "What was Foot Locker's free cash flow in fiscal 2022 (the year ended January 28, 2023)? Free cash flow = net cash "
  "provided by operating activities - capital expenditures. Answer in USD millions from the cash flow statement.",
  "-$112 million", "173 - 285 = -112",
  [(39, "Net cash provided by operating activities", "173", "FY2022"), (39, "Capital expenditures", "(285)", "FY2022")])
q(FL, "judgement",
  "Does Foot Locker have an improving gross margin profile as of fiscal 2022 (year ended January 28, 2023), "
  "comparing it with fiscal 2021? Take gross margin as (sales - cost of sales) / sales.",
  "No. Gross margin fell from 34.4% in fiscal 2021 to 31.9% in fiscal 2022, as cost of sales rose to $5,955 million "
  "while sales fell to $8,747 million (it was 28.9% in fiscal 2020).",
  "FY2022: (8,747 - 5,955) / 8,747 = 31.92%; FY2021: (8,958 - 5,878) / 8,958 = 34.38%; "
  "FY2020: (7,548 - 5,365) / 7,548 = 28.92%",
  [(35, "Sales", "8,747 $ 8,958 $ 7,548", "FY2022 FY2021 FY2020"),
   (35, "Cost of sales", "5,955 5,878 5,365", "FY2022 FY2021 FY2020")])
q(FL, "judgement",
  "Does Foot Locker have a healthy liquidity profile based on its current ratio at January 28, 2023 (the end of "
  "fiscal 2022)? Current ratio = total current assets / total current liabilities; healthy means above 1.0.",
  "Yes. The current ratio was 1.57: $2,521 million of current assets against $1,610 million of current "
  "liabilities at January 28, 2023.",
  "2,521 / 1,610 = 1.57",
  [(37, "total current assets (unlabelled row)", "2,521", "2023-01-28"),
   (37, "total current liabilities (unlabelled row)", "1,610", "2023-01-28")])
q(FL, "lookup",
  "How much did Foot Locker pay in dividends on its common stock in fiscal 2022 (ended January 28, 2023)? Answer "
  "in USD millions.",
  "$150 million", "150 from the cash flow statement (no arithmetic)",
  [(39, "Dividends paid on common stock", "(150)", "FY2022")])


# ---------------- AES FY2015 (calendar year; USD millions): balance sheet p.139, statement of operations p.141
# (its "Operating margin" row is revenue less cost of sales), cash flows p.146-147
AES = "robustness2/AES_2015_10K.pdf"
q(AES, "metric",
  "What is the FY2013 - FY2015 3 year average of capex as a % of revenue for AES? Capex is the capital expenditures "
  "line of the cash flow statement, revenue is total revenue; average the three yearly ratios and answer as a "
  "percentage with one decimal.",
  "13.2%", "(1,988 / 15,891 + 2,016 / 17,146 + 2,308 / 14,963) / 3 = 13.23%",
  [(146, "Capital expenditures", "(2,308) (2,016) (1,988)", "FY2015 FY2014 FY2013"),
   (141, "Total revenue", "14,963 17,146 15,891", "FY2015 FY2014 FY2013")])
q(AES, "metric",
  "What was AES's FY2015 free cash flow in USD millions, computed as net cash provided by operating activities "
  "minus capital expenditures? Answer by primarily using the cash flow statement.",
  "-$174 million", "2,134 - 2,308 = -174",
  [(146, "Net cash provided by operating activities", "2,134", "FY2015"),
   (146, "Capital expenditures", "(2,308)", "FY2015")])
q(AES, "metric",
  "By what percentage did AES's total revenue change in FY2015 compared with FY2014? Round to one decimal place.",
  "-12.7%", "(14,963 - 17,146) / 17,146 = -12.73%",
  [(141, "Total revenue", "14,963 17,146", "FY2015 FY2014")])
q(AES, "metric",
  "What is AES's FY2015 fixed asset turnover ratio? Fixed asset turnover ratio is defined as: FY2015 total revenue / "
  "(average property, plant and equipment, net between FY2014 and FY2015). Round your answer to two decimal places, "
  "using the balance sheet and the income statement.",
  "0.62", "14,963 / ((22,816 + 25,151) / 2) = 0.62",
  [(141, "Total revenue", "14,963", "FY2015"),
   (139, "Property, plant and equipment, net", "22,816 25,151", "2015-12-31 2014-12-31")])
q(AES, "metric",
  "What was AES's effective tax rate in FY2015? Use income tax expense divided by income from continuing operations "
  "before taxes and equity in earnings of affiliates, as a percentage with one decimal.",
  "41.4%", "465 / 1,122 = 41.44%",
  [(141, "Income tax expense", "(465)", "FY2015"),
   (141, "INCOME FROM CONTINUING OPERATIONS BEFORE TAXES AND EQUITY IN EARNINGS OF AFFILIATES", "1,122", "FY2015")])
q(AES, "judgement",
  "Does AES have a healthy liquidity profile based on its current ratio at the end of FY2015? Consider a current "
  "ratio above 1.0 healthy.",
  "No. The current ratio was 0.99 at December 31, 2015: total current assets of $6,866 million against total "
  "current liabilities of $6,950 million.",
  "6,866 / 6,950 = 0.99",
  [(139, "Total current assets", "6,866", "2015-12-31"), (139, "Total current liabilities", "6,950", "2015-12-31")])
q(AES, "judgement",
  "Is AES a capital-intensive business based on FY2015 data? Back the answer with capex as a % of revenue and net "
  "PP&E as a % of total assets.",
  "Yes. AES spent $2,308 million of capex in FY2015, 15.4% of its $14,963 million of revenue, and net property, "
  "plant and equipment of $22,816 million was 61.9% of total assets; power generation needs heavy fixed assets.",
  "capex / revenue: 2,308 / 14,963 = 15.42%; net PP&E / total assets: 22,816 / 36,850 = 61.92%",
  [(146, "Capital expenditures", "(2,308)", "FY2015"), (141, "Total revenue", "14,963", "FY2015"),
   (139, "Property, plant and equipment, net", "22,816", "2015-12-31"), (139, "TOTAL ASSETS", "36,850", "2015-12-31")])
q(AES, "lookup",
  "How much cash interest did AES pay in FY2015, net of amounts capitalized? Answer in USD millions.",
  "$1,265 million", "1,265 from the cash flow statement's supplemental disclosures (no arithmetic)",
  [(147, "Cash payments for interest, net of amounts capitalized", "1,265", "FY2015")])


# ---------------- checks (the fourth set's, run on this list) and output

def _heldout3():
    """build_analyst_questions_heldout3 with its QUESTIONS and CACHE pointed at this set's: its checks read those
    module globals, so they run on these questions without copying the checks here (one place per rule)."""
    spec = importlib.util.spec_from_file_location("heldout3_checks", HERE / "build_analyst_questions_heldout3.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.QUESTIONS, module.CACHE, module.CORPUS = QUESTIONS, CACHE, CORPUS
    return module


def check_records() -> list[str]:
    return _heldout3().check_records()


def verify_pages() -> list[str]:
    return _heldout3().verify_pages()


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
