"""What the labeller reads off each analyst question (finrag_pipeline_tests/data/external/analyst_questions.jsonl)
to write and grade answers: the asked figure, its working, and the same figure of the prior period
(every number copied by hand from the question's evidence rows and justification).

FIGURES: id -> (kind of value, value, decimals, period words, prior period words, prior value,
operands [(label, printed value)], working text or None). Kinds: usd_m (USD millions), pct, x
(times), ratio, days.
"""

FIGURES = {
    "analyst_001": ("pct", 30.29, 1, "fiscal 2022", "fiscal 2021", 29.78,
                    [("operating income", "$119,437 million"), ("total net sales", "$394,328 million")],
                    "119,437 / 394,328 = 0.3029"),
    "analyst_002": ("x", 9.67, 2, "fiscal 2022", None, None,
                    [("total net sales", "$394,328 million"), ("average net PP&E", "$40,778.5 million")],
                    "(42,117 + 39,440) / 2 = 40,778.5; 394,328 / 40,778.5 = 9.67"),
    "analyst_003": ("pct", 2.72, 1, "fiscal 2022", "fiscal 2021", 3.03,
                    [("capex", "$10,708 million"), ("total net sales", "$394,328 million")],
                    "10,708 / 394,328 = 0.0272"),
    "analyst_004": ("usd_m", 111443, 0, "fiscal 2022", "fiscal 2021", 92953,
                    [("operating cash flow", "$122,151 million"), ("capex", "$10,708 million")],
                    "122,151 - 10,708 = 111,443"),
    "analyst_005": ("usd_m", 11104, 0, "fiscal 2022", "fiscal 2021", 11284, [], None),
    "analyst_008": ("pct", 33.26, 1, "fiscal 2021", "fiscal 2020", 5.51,
                    [("FY2021 revenue", "$365,817 million"), ("FY2020 revenue", "$274,515 million")],
                    "(365,817 - 274,515) / 274,515 = 0.3326"),
    "analyst_009": ("x", 40.03, 1, "fiscal 2021", None, None,
                    [("cost of sales", "$212,981 million"), ("average inventory", "$5,320.5 million")],
                    "(6,580 + 4,061) / 2 = 5,320.5; 212,981 / 5,320.5 = 40.03"),
    "analyst_010": ("usd_m", 11085, 0, "fiscal 2021", "fiscal 2020", 7309, [], None),
    "analyst_012": ("pct", 24.09, 1, "fiscal 2024", "fiscal 2023", 14.72,
                    [("provision for income taxes", "$29,749 million"), ("pre-tax income", "$123,485 million")],
                    "29,749 / 123,485 = 0.2409"),
    "analyst_013": ("ratio", 0.8673, 2, "fiscal 2024", "fiscal 2023", 0.988,
                    [("current assets", "$152,987 million"), ("current liabilities", "$176,392 million")],
                    "152,987 / 176,392 = 0.867"),
    "analyst_015": ("usd_m", 11445, 0, "fiscal 2024", "fiscal 2023", 11519, [], None),
    "analyst_016": ("pct", 42.06, 1, "fiscal 2022", "fiscal 2021", 41.59,
                    [("operating income", "$83,383 million"), ("total revenue", "$198,270 million")],
                    "83,383 / 198,270 = 0.4206"),
    "analyst_017": ("days", 81.48, 1, "fiscal 2022", "fiscal 2021", 82.61,
                    [("accounts receivable", "$44,261 million"), ("total revenue", "$198,270 million")],
                    "44,261 / 198,270 x 365 = 81.48"),
    "analyst_018": ("pct", 12.047, 1, "fiscal 2022", "fiscal 2021", 12.27,
                    [("additions to property and equipment", "$23,886 million"), ("total revenue", "$198,270 million")],
                    "23,886 / 198,270 = 0.1205"),
    "analyst_019": ("usd_m", 24512, 0, "fiscal 2022", "fiscal 2021", 20716, [], None),
    "analyst_022": ("x", 8.62, 1, "2022", None, None,
                    [("cost of sales", "$288,831 million"), ("average inventory", "$33,522.5 million")],
                    "(32,640 + 34,405) / 2 = 33,522.5; 288,831 / 33,522.5 = 8.62"),
    "analyst_023": ("pct", 2.38, 1, "2022", "2021", 5.30,
                    [("operating income", "$12,248 million"), ("total net sales", "$513,983 million")],
                    "12,248 / 513,983 = 0.0238"),
    "analyst_024": ("usd_m", 63645, 0, "2022", "2021", 61053, [], None),
    "analyst_026": ("x", 2.79, 2, "2024", None, None,
                    [("total net sales", "$637,959 million"), ("average net PP&E", "$228,421 million")],
                    "(204,177 + 252,665) / 2 = 228,421; 637,959 / 228,421 = 2.79"),
    "analyst_027": ("usd_m", 32878, 0, "2024", "2023", 32217,
                    [("operating cash flow", "$115,877 million"), ("purchases of property and equipment", "$82,999 million")],
                    "115,877 - 82,999 = 32,878"),
    "analyst_028": ("usd_m", 637959, 0, "2024", "2023", 574785, [], None),
    "analyst_030": ("usd_m", 62286, 0, "2021", "2020", 58158, [], None),
    "analyst_031": ("pct", -4.66, 1, "2021", "2020", -21.95,
                    [("loss from operations", "-$2,902 million"), ("total revenues", "$62,286 million")],
                    "-2,902 / 62,286 = -0.0466"),
    "analyst_032": ("ratio", 1.3253, 2, "2021", "2020", 1.394,
                    [("current assets", "$108,666 million"), ("current liabilities", "$81,992 million")],
                    "108,666 / 81,992 = 1.325"),
    "analyst_033": ("usd_m", 2144, 0, "2021", "2020", 2246, [], None),
    "analyst_036": ("pct", 74.99, 1, "fiscal 2025", "fiscal 2024", 72.72,
                    [("gross profit", "$97,858 million"), ("revenue", "$130,497 million")],
                    "97,858 / 130,497 = 0.7499"),
    "analyst_037": ("days", 64.51, 1, "fiscal 2025", "fiscal 2024", 59.91,
                    [("accounts receivable", "$23,065 million"), ("revenue", "$130,497 million")],
                    "23,065 / 130,497 x 365 = 64.51"),
    "analyst_038": ("usd_m", 12914, 0, "fiscal 2025", "fiscal 2024", 8675, [], None),
    "analyst_042": ("usd_m", 21914, 0, "fiscal 2021", "fiscal 2020", 18752, [], None),
    "analyst_043": ("ratio", 1.0746, 2, "fiscal 2021", "fiscal 2020", 1.364,
                    [("current assets", "$134,836 million"), ("current liabilities", "$125,481 million")],
                    "134,836 / 125,481 = 1.075"),
    "analyst_044": ("usd_m", 9447, 0, "fiscal 2024", "fiscal 2023", 10959, [], None),
    "analyst_045": ("pct", 31.51, 1, "fiscal 2024", "fiscal 2023", 29.82,
                    [("operating income", "$123,216 million"), ("total net sales", "$391,035 million")],
                    "123,216 / 391,035 = 0.3151"),
    "analyst_046": ("usd_m", 54129, 0, "2022", "2021", 41374,
                    [("sales and marketing", "$42,238 million"), ("general and administrative", "$11,891 million")],
                    "42,238 + 11,891 = 54,129"),
    "analyst_047": ("usd_m", 82999, 0, "2024", "2023", 52729, [], None),
}

# Choice questions among the analysts': the chosen option, the options, and one supporting sentence.
CHOICES = {
    "analyst_040": ("Graphics", ["Compute & Networking", "Graphics"],
                    "Graphics operating income fell to $5,085 million from $5,846 million"),
    "analyst_029": ("AWS", ["North America", "International", "AWS"],
                    "AWS earned $39,834 million of the $68,593 million consolidated operating income"),
}

# Narrative questions: answers a careful grader accepts (the reference's key facts, in other words or
# with context), answers missing or contradicting a key fact, and the label of each, by hand.
NARRATIVE_ANSWERS = {
    "analyst_006": [
        ("Correct", "Services gross margin percentage rose to 71.7% from 69.7%, mainly because of improved leverage "
                    "and a different Services mix, partly offset by the weaker foreign currencies against the dollar.",
         "both drivers and the offset"),
        ("Correct", "It was driven by improved leverage and a different mix of Services.", "both drivers, offset left out"),
        ("Incorrect", "Higher Services net sales from the App Store and advertising drove the margin expansion.",
         "names causes the filing does not give"),
        ("Incorrect", "Mainly the strength of foreign currencies relative to the U.S. dollar.",
         "turns the offset into the driver"),
        ("Refusal", "The provided excerpts do not explain what drove the services gross margin.", "declines"),
    ],
    "analyst_011": [
        ("Correct", "Greater China grew the fastest, up 70% to $68,366 million, on higher iPhone, iPad and Services "
                    "sales and the strength of the renminbi against the dollar.", "segment and drivers"),
        ("Correct", "**Greater China** (+70%). Drivers: higher net sales of iPhone, iPad and Services, and a stronger "
                    "renminbi.", "segment and drivers"),
        ("Incorrect", "The Americas grew fastest, driven by iPhone 12 demand.", "wrong segment"),
        ("Incorrect", "Greater China grew the fastest.", "only part of a two-part question: no drivers"),
        ("Refusal", "I can't tell from the context which segment grew fastest.", "declines"),
    ],
    "analyst_014": [
        ("Correct", "The jump (24.1% vs 14.7% in 2023) came primarily from a one-time income tax charge of $10.2 "
                    "billion, net, related to the State Aid Decision.", "the one-time State Aid charge"),
        ("Correct", "Because of the European Commission State Aid Decision: Apple recorded a one-time net tax charge of "
                    "about $10.2 billion.", "the one-time State Aid charge"),
        ("Incorrect", "Higher pre-tax earnings in the U.S. and a lower share of foreign earnings.",
         "misses the State Aid charge"),
        ("Incorrect", "It rose because of the U.S. minimum tax on book income enacted in 2022.", "another cause"),
        ("Refusal", "The filing does not say why the effective tax rate changed.", "declines"),
    ],
    "analyst_020": [
        ("Correct", "R&D rose $3.8 billion or 18%, driven by investments in cloud engineering, Gaming and LinkedIn.",
         "the three investment areas"),
        ("Correct", "Investment in cloud engineering, Gaming and LinkedIn.", "the three investment areas"),
        ("Incorrect", "The Activision Blizzard acquisition costs.", "another cause"),
        ("Incorrect", "Investments in cloud engineering.", "one of three drivers; Gaming and LinkedIn missing"),
        ("Refusal", "Sorry, the context does not contain that information.", "declines"),
    ],
    "analyst_025": [
        ("Correct", "Only AWS made money ($22,841 million operating income). North America lost $2,847 million and "
                    "International lost $7,746 million.", "AWS profitable, the two losses"),
        ("Correct", "- AWS: operating income $22.8 billion\n- North America: operating loss $2.8 billion\n"
                    "- International: operating loss $7.7 billion", "AWS profitable, the two losses"),
        ("Incorrect", "All three segments were profitable in 2022, led by AWS.", "contradicts the losses"),
        ("Incorrect", "AWS was profitable.", "only half of the question"),
        ("Refusal", "Segment operating results are not included in the provided context.", "declines"),
    ],
    "analyst_034": [
        ("Correct", "Commercial Airplanes lost the most ($6,475 million). The operating loss shrank by $9,865 million "
                    "mainly because of lower losses at BCA and higher earnings at BGS.", "segment and causes"),
        ("Correct", "BCA had the biggest loss, $6.5 billion; the company's loss from operations narrowed mostly on "
                    "smaller BCA losses and higher Global Services earnings.", "segment and causes"),
        ("Incorrect", "Boeing Defense, Space & Security lost the most money.", "wrong segment"),
        ("Incorrect", "Commercial Airplanes, with a loss of $6,475 million.", "only the first part"),
        ("Refusal", "The context does not break down the operating loss by segment.", "declines"),
    ],
    "analyst_039": [
        ("Correct", "A higher mix of Data Center revenue lifted gross margin to 75.0% from 72.7%.", "Data Center mix"),
        ("Correct", "Mostly the shift in mix toward Data Center products.", "Data Center mix"),
        ("Incorrect", "Lower component and memory costs.", "another cause"),
        ("Incorrect", "Higher Gaming revenue.", "another cause"),
        ("Refusal", "I cannot determine the drivers of the gross margin from the given pages.", "declines"),
    ],
    "analyst_048": [
        ("Correct", "Increased unit sales and advertising sales, partly offset by higher fulfillment and shipping "
                    "costs.", "both drivers and the offset"),
        ("Correct", "North America operating income grew on increased unit sales and increased advertising sales.",
         "both drivers, offset left out"),
        ("Incorrect", "Lower fulfillment and shipping costs.", "contradicts the filing: those costs rose"),
        ("Incorrect", "Growth in AWS.", "another segment"),
        ("Refusal", "The answer cannot be found in the retrieved documents.", "declines"),
    ],
    "analyst_049": [
        ("Correct", "Gross margin rose $19.8 billion or 17%, with growth across each of its segments.",
         "growth in every segment"),
        ("Correct", "Growth across all three segments drove a 17% ($19.8 billion) rise in gross margin.",
         "growth in every segment"),
        ("Incorrect", "Only the Intelligent Cloud segment grew; the other segments declined.", "contradicts"),
        ("Incorrect", "A one-time gain on the sale of LinkedIn.", "another cause"),
        ("Refusal", "Not enough information in the context to answer.", "declines"),
    ],
}

UNANSWERABLE = {
    "analyst_007": ("revenue guidance for fiscal 2023", "$400 billion of revenue"),
    "analyst_021": ("an Azure customer count", "more than 250,000 Azure customers"),
    "analyst_035": ("an employee turnover rate", "an employee turnover rate of 11.2%"),
    "analyst_041": ("H100 unit shipments", "about 2 million H100 units"),
}
