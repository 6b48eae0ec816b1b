"""How analyst_questions_heldout3_outside.jsonl was written (README.md here, "Fourth set").

THIS FILE HOLDS HELD-OUT QUESTIONS: whoever builds, tunes or debugs an answerer, a retriever, a router, a
vocabulary or a scorer must not read it (nor analyst_questions_heldout3_outside.jsonl).

Seven 10-Ks from /work/shared/corpus/robustness*/ that no earlier question set used. Every operand was read by
hand on its page (`page` = the project's 1-based page, i.e. the PDF's physical page, as
`core.ingest.parse.parse_filing` numbers it) and every derived figure computed by hand; this script only checks
what was written:
- every operand line (a row label and its printed figure) is on its page in the project's parser text and the
  figure is on the same physical page of pypdfium2's own text (`--verify`; needs the corpus);
- every "arithmetic = value" step of `checked` is right (the second set's checker, `check_arithmetic`);
- the answer of a metric/lookup is one figure that equals the last step of `checked` to the decimals it shows.

    PYTHONPATH=$PWD python finrag_pipeline_tests/data/external/build_analyst_questions_heldout3.py [--verify]
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from finrag_pipeline.core.ingest.parse_cache import DEFAULT_PARSE_CACHE

HERE = Path(__file__).resolve().parent
OUT = HERE / "analyst_questions_heldout3_outside.jsonl"
CORPUS = Path("/work/shared/corpus")
CACHE = DEFAULT_PARSE_CACHE        # parsed filings, pickled once per filing and parser (parse_filing is slow on 2 cores)

QUESTIONS: list[dict] = []


def q(filing: str, kind: str, question: str, answer: str, steps: str, sources: list[tuple[int, str, str, str]]):
    """sources: (page, row label as printed, figure as printed, period) for every operand."""
    tag = Path(filing).stem.split("_")[0]
    where = "; ".join(f"{tag} p.{page} {label} {figure} ({period})" for page, label, figure, period in sources)
    QUESTIONS.append({"id": f"h3_{len(QUESTIONS) + 1:02d}", "filing": filing, "kind": kind, "question": question,
                      "answer": answer, "checked": f"{steps} | {where}", "_sources": sources})


# ---------------- Netflix FY2020 (calendar year; USD thousands): income statement p.44, cash flows p.46,
# balance sheet p.47, MD&A free cash flow table p.22
NFLX = "robustness/NETFLIX_2020_10K.pdf"
q(NFLX, "metric", "What is Netflix's FY2020 operating margin, defined as operating income divided by revenues? Answer as a percentage rounded to one decimal place, using the income statement.",
  "18.3%", "4,585,289 / 24,996,056 = 18.34%",
  [(44, "Operating income", "4,585,289", "FY2020"), (44, "Revenues", "24,996,056", "FY2020")])
q(NFLX, "metric", "Netflix defines free cash flow as net cash provided by (used in) operating activities less purchases of property and equipment and change in other assets. Using the cash flow statement, what was Netflix's free cash flow in FY2020? Answer in USD millions, one decimal place.",
  "$1,921.7 million", "2,427,077 - 497,923 - 7,431 = 1,921,723; 1,921,723 / 1,000 = 1,921.7 (MD&A p.22 prints the same 1,921,723)",
  [(46, "Net cash provided by (used in) operating activities", "2,427,077", "FY2020"),
   (46, "Purchases of property and equipment", "(497,923)", "FY2020"), (46, "Change in other assets", "(7,431)", "FY2020"),
   (22, "Free cash flow (1)", "1,921,723", "FY2020")])
q(NFLX, "metric", "Netflix reports its R&D spending as technology and development. What was its R&D spend as a percentage of revenues in FY2020? Round to one decimal place.",
  "7.3%", "1,829,600 / 24,996,056 = 7.32%",
  [(44, "Technology and development", "1,829,600", "FY2020"), (44, "Revenues", "24,996,056", "FY2020")])
q(NFLX, "metric", "What was Netflix's effective tax rate for FY2020 (provision for income taxes as a share of income before income taxes)? Answer as a percentage with one decimal.",
  "13.7%", "437,954 / 3,199,349 = 13.69%",
  [(44, "Provision for income taxes", "(437,954)", "FY2020"), (44, "Income before income taxes", "3,199,349", "FY2020")])
q(NFLX, "judgement", "Does Netflix have a healthy liquidity profile based on its current ratio as of December 31, 2020, taking a current ratio above 1.0 as healthy? Use the balance sheet.",
  "Yes. Netflix's current ratio at December 31, 2020 was 1.25 (total current assets of $9,761.6 million over total current liabilities of $7,805.8 million), above 1.0 and up from 0.90 a year earlier.",
  "FY2020 9,761,580 / 7,805,785 = 1.25; FY2019 6,178,504 / 6,855,696 = 0.90",
  [(47, "Total current assets", "9,761,580", "2020-12-31"), (47, "Total current liabilities", "7,805,785", "2020-12-31"),
   (47, "Total current assets", "6,178,504", "2019-12-31"), (47, "Total current liabilities", "6,855,696", "2019-12-31")])
q(NFLX, "judgement", "Is Netflix a high-growth company based on its revenue growth in FY2019 and FY2020?",
  "Yes. Revenues grew 27.6% in FY2019 (from $15,794 million to $20,156 million) and 24.0% in FY2020 (to $24,996 million).",
  "FY2019 (20,156,447 / 15,794,341 - 1) = 27.62%; FY2020 (24,996,056 / 20,156,447 - 1) = 24.01%",
  [(44, "Revenues", "24,996,056", "FY2020"), (44, "Revenues", "20,156,447", "FY2019"), (44, "Revenues", "15,794,341", "FY2018")])
q(NFLX, "lookup", "How much cash interest did Netflix pay in 2020? Answer in USD millions with one decimal.",
  "$762.9 million", "762,904 / 1,000 = 762.9",
  [(46, "Interest paid", "762,904", "FY2020")])

# ---------------- Verizon FY2019 (calendar year; USD millions): income statement p.72, balance sheet p.74,
# cash flows p.75
VZ = "robustness/VERIZON_2019_10K.pdf"
q(VZ, "metric", "What is Verizon's 3 year average of capex as a % of revenue from FY2017 to FY2019? Capex is 'Capital expenditures (including capitalized software)' in the cash flow statement and revenue is total operating revenues; take the simple average of the three yearly ratios and round to one decimal place.",
  "13.3%", "FY2017 17,247 / 126,034 = 13.68%; FY2018 16,658 / 130,863 = 12.73%; FY2019 17,939 / 131,868 = 13.60%; (17,247 / 126,034 + 16,658 / 130,863 + 17,939 / 131,868) / 3 = 13.34%; pooled 51,844 / 388,765 = 13.34%, 13.3% either way",
  [(75, "Capital expenditures (including capitalized software)", "(17,939) (16,658) (17,247)", "FY2019 FY2018 FY2017"),
   (72, "Total Operating Revenues", "131,868 $ 130,863 $ 126,034", "FY2019 FY2018 FY2017")])
q(VZ, "metric", "What was Verizon's FY2019 dividend payout ratio, defined as dividends paid (cash flow statement) divided by net income attributable to Verizon? Answer as a percentage rounded to one decimal place.",
  "52.0%", "10,016 / 19,265 = 51.99%",
  [(75, "Dividends paid", "(10,016)", "FY2019"), (72, "Net income attributable to Verizon", "19,265", "FY2019")])
q(VZ, "metric", "What is Verizon's FY2019 unadjusted EBITDA (operating income plus depreciation and amortization expense, both from the income statement)? Answer in USD billions, rounded to two decimal places.",
  "$47.06 billion", "30,378 + 16,682 = 47,060; 47,060 / 1,000 = 47.06",
  [(72, "Operating Income", "30,378", "FY2019"), (72, "Depreciation and amortization expense", "16,682", "FY2019")])
q(VZ, "metric", "What was Verizon's leverage at the end of FY2019, measured as total debt (debt maturing within one year plus long-term debt, from the balance sheet) divided by FY2019 unadjusted EBITDA (operating income plus depreciation and amortization)? Round to two decimal places.",
  "2.37", "(10,777 + 100,712) / (30,378 + 16,682) = 2.37",
  [(74, "Debt maturing within one year", "10,777", "2019-12-31"), (74, "Long-term debt", "100,712", "2019-12-31"),
   (72, "Operating Income", "30,378", "FY2019"), (72, "Depreciation and amortization expense", "16,682", "FY2019")])
q(VZ, "judgement", "Does Verizon have a healthy liquidity profile based on its quick ratio for FY2019? Take the quick ratio as (cash and cash equivalents + accounts receivable, net) / total current liabilities, and a value above 1.0 as healthy.",
  "No. Verizon's quick ratio at December 31, 2019 was 0.62 (cash of $2,594 million plus accounts receivable of $25,429 million, over current liabilities of $44,868 million), well below 1.0.",
  "(2,594 + 25,429) / 44,868 = 0.62",
  [(74, "Cash and cash equivalents", "2,594", "2019-12-31"), (74, "Accounts receivable, net of allowances of $733 and $765", "25,429", "2019-12-31"),
   (74, "Total current liabilities", "44,868", "2019-12-31")])
q(VZ, "judgement", "Is Verizon a capital-intensive business based on FY2019 data?",
  "Yes. Capital expenditures of $17,939 million were 13.6% of FY2019 operating revenues of $131,868 million, and net property, plant and equipment of $91,915 million was 31.5% of total assets of $291,727 million.",
  "17,939 / 131,868 = 13.60%; 91,915 / 291,727 = 31.51%",
  [(75, "Capital expenditures (including capitalized software)", "(17,939)", "FY2019"), (72, "Total Operating Revenues", "131,868", "FY2019"),
   (74, "Property, plant and equipment, net", "91,915", "2019-12-31"), (74, "Total assets", "291,727", "2019-12-31")])
q(VZ, "lookup", "What was Verizon's top line in FY2019? Answer in USD billions with two decimals.",
  "$131.87 billion", "131,868 / 1,000 = 131.87",
  [(72, "Total Operating Revenues", "131,868", "FY2019")])

# ---------------- Lockheed Martin FY2019 (calendar year; USD millions): income statement p.59,
# balance sheet p.61, cash flows p.62
LMT = "robustness/LOCKHEEDMARTIN_2019_10K.pdf"
q(LMT, "metric", "What is Lockheed Martin's FY2019 days payable outstanding (DPO)? DPO is defined as 365 * (average accounts payable between FY2018 and FY2019) / (FY2019 COGS + change in inventory between FY2018 and FY2019). Use total cost of sales as COGS, and the balance sheet and the income statement. Round to two decimal places.",
  "12.91", "average AP = (1,281 + 2,402) / 2 = 1,841.5; change in inventories = 3,619 - 2,997 = 622; 365 * (1,281 + 2,402) / 2 / (51,445 + 3,619 - 2,997) = 12.91",
  [(61, "Accounts payable", "1,281 $ 2,402", "2019-12-31 2018-12-31"), (61, "Inventories", "3,619 2,997", "2019-12-31 2018-12-31"),
   (59, "Total cost of sales", "(51,445)", "FY2019")])
q(LMT, "metric", "What was Lockheed Martin's gross margin in FY2019, using gross profit and total net sales as shown in the income statement? Answer as a percentage rounded to one decimal place.",
  "14.0%", "8,367 / 59,812 = 13.99%",
  [(59, "Gross profit", "8,367", "FY2019"), (59, "Total net sales", "59,812", "FY2019")])
q(LMT, "metric", "What was Lockheed Martin's FY2019 free cash flow, defined as net cash provided by operating activities minus capital expenditures? Answer in USD billions, rounded to two decimal places, using the cash flow statement.",
  "$5.83 billion", "7,311 - 1,484 = 5,827; 5,827 / 1,000 = 5.83",
  [(62, "Net cash provided by operating activities", "7,311", "FY2019"), (62, "Capital expenditures", "(1,484)", "FY2019")])
q(LMT, "metric", "Calculate Lockheed Martin's inventory turnover ratio for FY2019 as total cost of sales divided by the average of the FY2018 and FY2019 year-end inventories. Round to two decimal places.",
  "15.55", "average inventories = (3,619 + 2,997) / 2 = 3,308; 51,445 / ((3,619 + 2,997) / 2) = 15.55",
  [(59, "Total cost of sales", "(51,445)", "FY2019"), (61, "Inventories", "3,619 2,997", "2019-12-31 2018-12-31")])
q(LMT, "judgement", "Is Lockheed Martin a capital-intensive business based on FY2019 data? Judge by capex as a % of net sales and net PP&E as a % of total assets.",
  "No. Capital expenditures of $1,484 million were only 2.5% of FY2019 net sales of $59,812 million, and net property, plant and equipment of $6,591 million was 13.9% of total assets of $47,528 million.",
  "1,484 / 59,812 = 2.48%; 6,591 / 47,528 = 13.87%",
  [(62, "Capital expenditures", "(1,484)", "FY2019"), (59, "Total net sales", "59,812", "FY2019"),
   (61, "Property, plant and equipment, net", "6,591", "2019-12-31"), (61, "Total assets", "47,528", "2019-12-31")])
q(LMT, "judgement", "Does Lockheed Martin have an improving gross margin profile as of FY2019? Use FY2017 to FY2019.",
  "Yes. Gross margin (gross profit over total net sales) rose from 12.8% in FY2017 to 13.5% in FY2018 and 14.0% in FY2019.",
  "FY2017 6,371 / 49,960 = 12.75%; FY2018 7,274 / 53,762 = 13.53%; FY2019 8,367 / 59,812 = 13.99%",
  [(59, "Gross profit", "8,367 7,274 6,371", "FY2019 FY2018 FY2017"),
   (59, "Total net sales", "59,812 53,762 49,960", "FY2019 FY2018 FY2017")])
q(LMT, "lookup", "How much did Lockheed Martin pay out in dividends in 2019, per the cash flow statement? Answer in USD millions.",
  "$2,556 million", "2,556 from the cash flow statement (no arithmetic)",
  [(62, "Dividends paid", "(2,556)", "FY2019")])

# ---------------- McDonald's FY2022 (calendar year; USD millions): income statement p.36, balance sheet p.38,
# cash flows p.39
MCD = "robustness/MCDONALDS_2022_10K.pdf"
q(MCD, "metric", "What was McDonald's operating margin in FY2022 (operating income / total revenues)? Answer as a percentage rounded to one decimal place.",
  "40.4%", "9,371.0 / 23,182.6 = 40.42%",
  [(36, "Operating income", "9,371.0", "FY2022"), (36, "Total revenues", "23,182.6", "FY2022")])
q(MCD, "metric", "What was McDonald's FY2022 dividend payout ratio, defined as common stock dividends paid (cash flow statement) divided by net income? Answer as a percentage rounded to one decimal place.",
  "67.5%", "4,168.2 / 6,177.4 = 67.47%",
  [(39, "Common stock dividends", "(4,168.2)", "FY2022"), (36, "Net income", "6,177.4", "FY2022")])
q(MCD, "metric", "What was McDonald's effective tax rate in FY2022, defined as the provision for income taxes divided by income before provision for income taxes? One decimal place.",
  "21.1%", "1,648.0 / 7,825.4 = 21.06%",
  [(36, "Provision for income taxes", "1,648.0", "FY2022"), (36, "Income before provision for income taxes", "7,825.4", "FY2022")])
q(MCD, "metric", "By what percentage did McDonald's net income change in FY2022 compared with FY2021? Give a negative number for a decline, rounded to one decimal place.",
  "-18.1%", "(6,177.4 / 7,545.2 - 1) = -18.13%",
  [(36, "Net income", "6,177.4 $ 7,545.2", "FY2022 FY2021")])
q(MCD, "judgement", "Does McDonald's have a healthy liquidity profile based on its quick ratio as of FY2022 year end? Quick ratio = (cash and equivalents + accounts and notes receivable) / total current liabilities; above 1.0 is healthy.",
  "Yes. McDonald's quick ratio at December 31, 2022 was 1.24 (cash and equivalents of $2,583.8 million plus accounts and notes receivable of $2,115.0 million, over current liabilities of $3,802.1 million).",
  "(2,583.8 + 2,115.0) / 3,802.1 = 1.24",
  [(38, "Cash and equivalents", "2,583.8", "2022-12-31"), (38, "Accounts and notes receivable", "2,115.0", "2022-12-31"),
   (38, "Total current liabilities", "3,802.1", "2022-12-31")])
q(MCD, "judgement", "Did McDonald's free cash flow (cash provided by operations minus capital expenditures) cover both its common stock dividends and its treasury stock purchases in FY2022? Answer using the cash flow statement.",
  "No. FY2022 free cash flow was $5,487.5 million ($7,386.7 million from operations less $1,899.2 million of capital expenditures), short of the $8,064.2 million spent on dividends ($4,168.2 million) and treasury stock purchases ($3,896.0 million); it covered the dividends alone 1.32 times.",
  "7,386.7 - 1,899.2 = 5,487.5; 4,168.2 + 3,896.0 = 8,064.2; (7,386.7 - 1,899.2) / 4,168.2 = 1.32",
  [(39, "Cash provided by operations", "7,386.7", "FY2022"), (39, "Capital expenditures", "(1,899.2)", "FY2022"),
   (39, "Common stock dividends", "(4,168.2)", "FY2022"), (39, "Treasury stock purchases", "(3,896.0)", "FY2022")])
q(MCD, "lookup", "How much did McDonald's spend on share buybacks (treasury stock purchases) in FY2022? Answer in USD millions, one decimal.",
  "$3,896.0 million", "3,896.0 from the cash flow statement (no arithmetic)",
  [(39, "Treasury stock purchases", "(3,896.0)", "FY2022")])

# ---------------- Foot Locker fiscal 2021 = the 52 weeks ended January 29, 2022 (the file is labelled 2022;
# USD millions): income statement p.42, balance sheet p.44 (total rows unlabelled), cash flows p.46
FL = "robustness2/FOOTLOCKER_2022_10K.pdf"
q(FL, "metric", "What is Foot Locker's days inventory outstanding (DIO) for fiscal 2021 (the year ended January 29, 2022)? DIO = 365 * (average merchandise inventories between fiscal 2020 and fiscal 2021 year ends) / fiscal 2021 cost of sales. Round to two decimal places.",
  "67.96", "average inventories = (1,266 + 923) / 2 = 1,094.5; 365 * (1,266 + 923) / 2 / 5,878 = 67.96",
  [(44, "Merchandise inventories", "1,266 923", "2022-01-29 2021-01-30"), (42, "Cost of sales", "5,878", "fiscal 2021")])
q(FL, "metric", "What was Foot Locker's gross margin for fiscal 2021 (year ended January 29, 2022), computed as (sales - cost of sales) / sales from the income statement? One decimal place.",
  "34.4%", "(8,958 - 5,878) / 8,958 = 34.38%",
  [(42, "Sales", "8,958", "fiscal 2021"), (42, "Cost of sales", "5,878", "fiscal 2021")])
q(FL, "metric", "By what percentage did Foot Locker's sales grow in fiscal 2021 (year ended January 29, 2022) versus fiscal 2020? Both are 52-week years. Round to one decimal place.",
  "18.7%", "(8,958 / 7,548 - 1) = 18.68%",
  [(42, "Sales", "8,958 $ 7,548", "fiscal 2021 fiscal 2020")])
q(FL, "metric", "What was Foot Locker's return on assets (ROA) for fiscal 2021, defined as net income attributable to Foot Locker, Inc. divided by the average of total assets at the fiscal 2020 and fiscal 2021 year ends? Answer as a percentage rounded to one decimal place.",
  "11.8%", "average total assets = (8,135 + 7,043) / 2 = 7,589; 893 / ((8,135 + 7,043) / 2) = 11.77%",
  [(42, "Net income attributable to Foot Locker, Inc.", "893", "fiscal 2021"),
   (44, "total assets (unlabelled total row)", "8,135 $ 7,043", "2022-01-29 2021-01-30")])
q(FL, "judgement", "Is Foot Locker a capital-intensive business based on fiscal 2021 data? Judge by capital expenditures as a % of sales and net property and equipment as a % of total assets.",
  "No. Capital expenditures of $209 million were 2.3% of fiscal 2021 sales of $8,958 million, and net property and equipment of $917 million was 11.3% of total assets of $8,135 million.",
  "209 / 8,958 = 2.33%; 917 / 8,135 = 11.27%",
  [(46, "Capital expenditures", "(209)", "fiscal 2021"), (42, "Sales", "8,958", "fiscal 2021"),
   (44, "Property and equipment, net", "917", "2022-01-29"), (44, "total assets (unlabelled total row)", "8,135", "2022-01-29")])
q(FL, "judgement", "Foot Locker shows no receivables line on its balance sheet. Taking its quick ratio as cash and cash equivalents divided by total current liabilities, does it have a quick ratio above 1.0 at the end of fiscal 2021 (January 29, 2022)?",
  "No. Cash and cash equivalents of $804 million over total current liabilities of $1,735 million give a quick ratio of 0.46, well below 1.0 (it was 1.02 a year earlier).",
  "804 / 1,735 = 0.46; 1,680 / 1,644 = 1.02",
  [(44, "Cash and cash equivalents", "804 $ 1,680", "2022-01-29 2021-01-30"),
   (44, "total current liabilities (unlabelled total row)", "1,735 1,644", "2022-01-29 2021-01-30")])
q(FL, "lookup", "What was Foot Locker's SG&A expense in fiscal 2021 (year ended January 29, 2022)? Answer in USD millions.",
  "$1,851 million", "1,851 from the income statement (no arithmetic)",
  [(42, "Selling, general and administrative expenses", "1,851", "fiscal 2021")])

# ---------------- General Mills fiscal 2021 = 52 weeks ended May 30, 2021 (fiscal 2020 had 53 weeks;
# USD millions): income statement p.46, balance sheet p.48, cash flows p.50
GIS = "robustness/GENERALMILLS_2021_10K.pdf"
q(GIS, "metric", "What is General Mills' fiscal 2021 days sales outstanding (DSO)? DSO = 365 * (average receivables between the fiscal 2020 and fiscal 2021 year ends) / fiscal 2021 net sales. Use the balance sheet and the income statement; round to two decimal places.",
  "32.76", "average receivables = (1,638.5 + 1,615.1) / 2 = 1,626.8; 365 * (1,638.5 + 1,615.1) / 2 / 18,127.0 = 32.76",
  [(48, "Receivables", "1,638.5 1,615.1", "2021-05-30 2020-05-31"), (46, "Net sales", "18,127.0", "fiscal 2021")])
q(GIS, "metric", "What was General Mills' unadjusted EBITDA less capex in fiscal 2021? Define unadjusted EBITDA as operating profit plus depreciation and amortization (from the cash flow statement), and capex as purchases of land, buildings, and equipment. Answer in USD millions with one decimal.",
  "$3,215.3 million", "3,144.8 + 601.3 - 530.8 = 3,215.3",
  [(46, "Operating profit", "3,144.8", "fiscal 2021"), (50, "Depreciation and amortization", "601.3", "fiscal 2021"),
   (50, "Purchases of land, buildings, and equipment", "(530.8)", "fiscal 2021")])
q(GIS, "metric", "What was General Mills' gross margin in fiscal 2021, i.e. (net sales - cost of sales) / net sales? Answer as a percentage to one decimal place.",
  "35.6%", "(18,127.0 - 11,678.7) / 18,127.0 = 35.57%",
  [(46, "Net sales", "18,127.0", "fiscal 2021"), (46, "Cost of sales", "11,678.7", "fiscal 2021")])
q(GIS, "metric", "What is General Mills' current ratio at the end of fiscal 2021 (May 30, 2021), based on the balance sheet? Round to two decimal places.",
  "0.70", "5,754.5 / 8,265.8 = 0.70",
  [(48, "Total current assets", "5,754.5", "2021-05-30"), (48, "Total current liabilities", "8,265.8", "2021-05-30")])
q(GIS, "judgement", "Does General Mills have an improving gross margin profile as of fiscal 2021? Use fiscal 2019 to fiscal 2021.",
  "Yes. Gross margin ((net sales - cost of sales) / net sales) rose from 34.1% in fiscal 2019 to 34.8% in fiscal 2020 and 35.6% in fiscal 2021.",
  "FY2019 (16,865.2 - 11,108.4) / 16,865.2 = 34.13%; FY2020 (17,626.6 - 11,496.7) / 17,626.6 = 34.78%; FY2021 (18,127.0 - 11,678.7) / 18,127.0 = 35.57%",
  [(46, "Net sales", "18,127.0 $ 17,626.6 $ 16,865.2", "fiscal 2021 2020 2019"),
   (46, "Cost of sales", "11,678.7 11,496.7 11,108.4", "fiscal 2021 2020 2019")])
q(GIS, "judgement", "Did General Mills' total debt increase during fiscal 2021? Take total debt as current portion of long-term debt plus notes payable plus long-term debt, from the balance sheet.",
  "No. Total debt fell from $13,539.5 million at May 31, 2020 to $12,612.0 million at May 30, 2021, a decrease of $927.5 million.",
  "2021 2,463.8 + 361.3 + 9,786.9 = 12,612.0; 2020 2,331.5 + 279.0 + 10,929.0 = 13,539.5; 13,539.5 - 12,612.0 = 927.5",
  [(48, "Current portion of long-term debt", "2,463.8 2,331.5", "2021-05-30 2020-05-31"),
   (48, "Notes payable", "361.3 279.0", "2021-05-30 2020-05-31"), (48, "Long-term debt", "9,786.9 10,929.0", "2021-05-30 2020-05-31")])
q(GIS, "lookup", "How much did General Mills pay in dividends in fiscal 2021? Answer in USD millions with one decimal, from the cash flow statement.",
  "$1,246.4 million", "1,246.4 from the cash flow statement (no arithmetic)",
  [(50, "Dividends paid", "(1,246.4)", "fiscal 2021")])

# ---------------- FedEx FY2023 = the year ended May 31, 2023 (USD millions): balance sheet p.79 (assets)
# and p.80 (liabilities), income statement p.81, cash flows p.83
FDX = "robustness/FEDEX_2023_10K.pdf"
q(FDX, "metric", "What is FedEx's FY2023 fixed asset turnover ratio? Fixed asset turnover = FY2023 revenue / average net property and equipment between FY2022 and FY2023 year ends. Round to two decimal places.",
  "2.29", "average net P&E = (40,698 + 38,091) / 2 = 39,394.5; 90,155 / ((40,698 + 38,091) / 2) = 2.29",
  [(81, "REVENUE", "90,155", "FY2023"), (79, "Net property and equipment", "40,698 $ 38,091", "2023-05-31 2022-05-31")])
q(FDX, "metric", "By what percentage did FedEx's revenue change in FY2023 (year ended May 31, 2023) compared with FY2022? Give a negative number for a decline; one decimal place.",
  "-3.6%", "(90,155 / 93,512 - 1) = -3.59%",
  [(81, "REVENUE", "90,155 $ 93,512", "FY2023 FY2022")])
q(FDX, "metric", "What was FedEx's FY2023 free cash flow, defined as cash provided by operating activities minus capital expenditures? Answer in USD billions rounded to two decimals, using the cash flow statement.",
  "$2.67 billion", "8,848 - 6,174 = 2,674; 2,674 / 1,000 = 2.67",
  [(83, "Cash provided by operating activities", "8,848", "FY2023"), (83, "Capital expenditures", "(6,174", "FY2023")])
q(FDX, "metric", "What was FedEx's interest coverage ratio in FY2023, defined as operating income divided by interest expense? Round to two decimal places.",
  "7.08", "4,912 / 694 = 7.08",
  [(81, "OPERATING INCOME", "4,912", "FY2023"), (81, "Interest expense", "(694", "FY2023")])
q(FDX, "metric", "What is FedEx's FY2023 DSO? DSO = 365 * (average receivables, net, between the FY2022 and FY2023 year ends) / FY2023 revenue. Round to two decimal places.",
  "44.64", "average receivables = (10,188 + 11,863) / 2 = 11,025.5; 365 * (10,188 + 11,863) / 2 / 90,155 = 44.64",
  [(79, "Receivables, less allowances of $800 and $692", "10,188 11,863", "2023-05-31 2022-05-31"), (81, "REVENUE", "90,155", "FY2023")])
q(FDX, "judgement", "Is FedEx a capital-intensive business based on FY2023 data?",
  "Yes. Capital expenditures of $6,174 million were 6.8% of FY2023 revenue of $90,155 million, and net property and equipment of $40,698 million was 46.7% of total assets of $87,143 million.",
  "6,174 / 90,155 = 6.85%; 40,698 / 87,143 = 46.70%",
  [(83, "Capital expenditures", "(6,174", "FY2023"), (81, "REVENUE", "90,155", "FY2023"),
   (79, "Net property and equipment", "40,698", "2023-05-31"), (79, "TOTAL ASSETS", "87,143", "2023-05-31")])
q(FDX, "judgement", "Does FedEx have an improving operating margin profile as of FY2023? Operating margin is operating income divided by revenue; use FY2021 to FY2023.",
  "No. Operating margin fell from 7.0% in FY2021 to 6.7% in FY2022 and 5.4% in FY2023 (operating income of $4,912 million on revenue of $90,155 million).",
  "FY2021 5,857 / 83,959 = 6.98%; FY2022 6,245 / 93,512 = 6.68%; FY2023 4,912 / 90,155 = 5.45%",
  [(81, "OPERATING INCOME", "4,912 6,245 5,857", "FY2023 FY2022 FY2021"),
   (81, "REVENUE", "90,155 $ 93,512 $ 83,959", "FY2023 FY2022 FY2021")])
q(FDX, "lookup", "How much did FedEx spend on fuel in FY2023 (year ended May 31, 2023)? Answer in USD millions.",
  "$5,909 million", "5,909 from the income statement (no arithmetic)",
  [(81, "Fuel", "5,909", "FY2023")])


# ---------------- checks and output

def _checker():
    spec = importlib.util.spec_from_file_location("dev_heldout", HERE / "build_analyst_questions_dev_heldout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.check_arithmetic


def _norm(text: str) -> str:
    """Whitespace collapsed and "$" signs dropped (the parser prints some rows without them)."""
    return " ".join(text.replace("\u00a0", " ").replace("$", " ").split())


def verify_pages() -> list[str]:
    """Every operand's label and printed figure on one line of its page in the parser text, and the figure on
    the same physical page of pypdfium2's text. Parsed filings come from THE parse cache (core/ingest/parse_cache.py:
    per filing, keyed by its sha256 and the parser's code fingerprint)."""
    import pypdfium2 as pdfium

    from finrag_pipeline.core.ingest.parse_cache import cached_parse

    problems, parsed, pdfs = [], {}, {}
    for row in QUESTIONS:
        filing = row["filing"]
        if filing not in parsed:
            parsed[filing] = {p.page_number: p.text for p in cached_parse(CORPUS / filing, CACHE).pages}
            pdfs[filing] = pdfium.PdfDocument(CORPUS / filing)
        for page, label, figure, _period in row["_sources"]:
            lines = [_norm(line) for line in parsed[filing].get(page, "").splitlines()]
            label_ok = label.startswith(("total assets (", "total current assets (", "total current liabilities ("))   # unlabelled rows
            if not any((label_ok or _norm(label) in line) and _norm(figure) in line for line in lines):
                problems.append(f"{row['id']}: parser p.{page} has no line with {label!r} and {figure!r}")
            pdf_text = _norm(pdfs[filing][page - 1].get_textpage().get_text_range())
            for token in _norm(figure).replace("$", " ").split():
                if token.strip("()") not in pdf_text:
                    problems.append(f"{row['id']}: pypdfium2 p.{page} lacks {token!r}")
    return problems


def check_records() -> list[str]:
    from finrag_pipeline.core.numbers import parse_figures

    check_arithmetic, problems = _checker(), []
    for row in QUESTIONS:
        steps = row["checked"].split(" | ")[0]
        n, wrong = check_arithmetic(steps)
        problems += [f"{row['id']}: {w}" for w in wrong]
        if row["kind"] in ("metric", "judgement") and n == 0:
            problems.append(f"{row['id']}: no arithmetic step checked")
        if row["kind"] in ("metric", "lookup"):
            figures = parse_figures(row["answer"])
            if len(figures) != 1:
                problems.append(f"{row['id']}: answer holds {len(figures)} figures")
                continue
            last = steps.split(";")[-1].split("=")[-1] if n else steps
            stated = parse_figures(last.split("(")[0] if n else last)[0]
            fig = figures[0]
            if abs(fig.as_printed - round(stated.as_printed, fig.decimals)) > 1e-9:
                problems.append(f"{row['id']}: answer {fig.as_printed} vs last step {stated.as_printed}")
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
