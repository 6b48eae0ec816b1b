"""The web explorer over a small real FINRAG_HOME (_explorer_home.py): routes through Starlette's test
client, then the user's paths in headless Debian chromium (selenium + /usr/bin/chromedriver; the
browser is installed by `make browser`, never downloaded at test time)."""

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from _explorer_home import SCRIPT_QUESTION, build_explorer_home

# ~75 s on 2 shared cores (the embedding model alone loads in ~25 s): slow.
pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROME_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1500,1100",
                "--disable-dev-shm-usage")


@pytest.fixture(scope="module")
def embedder():
    from finrag_pipeline.core.indexing.embedder import load_embedder_config

    return load_embedder_config().build()


@pytest.fixture(scope="module")
def home(tmp_path_factory, embedder):
    return build_explorer_home(tmp_path_factory.mktemp("explorer-home"), embedder)


@pytest.fixture(scope="module")
def app(home, embedder):
    from finrag_pipeline.web.app import create_app

    app = create_app(str(home["paths"].home))
    explorer = app.state.explorer
    explorer.refresh()
    explorer.session().resources.embedder = embedder   # the module's model, loaded once
    return app


@pytest.fixture(scope="module")
def client(app):
    from starlette.testclient import TestClient

    with TestClient(app) as c:
        yield c


# ---------------------------------------------------------------------------------------------
# Routes (test client)


def test_leaderboard_from_the_evaluation(client):
    r = client.get("/leaderboard")
    assert r.status_code == 200
    for cfg in ("bm25@1", "bm25@3", "hybrid_rrf@1", "hybrid_rrf@3"):
        assert f">{cfg}</a>" in r.text
    assert "explorer-test-state" in r.text            # which corpus state the page shows
    answers = r.text.split('id="answer-quality"')[1].split("</table>")[0]
    assert "<td>extractive</td>" in answers and '<td class="num">5</td>' in answers   # 5 questions answered
    only = client.get("/leaderboard", params={"scope": "corpus", "k": 1})
    assert ">bm25@1</a>" in only.text and ">bm25@3</a>" not in only.text
    assert "<td>filing</td>" not in only.text


def test_leaderboard_breakdown_filter_counts_only_matching_questions(client, app):
    from finrag_pipeline.web import queries as q

    board, source = q.leaderboard(app.state.explorer.snapshot, scope="filing", k=1, question_type="narrative")
    assert "question_type=narrative" in source
    assert set(board["n_questions"]) == {1}             # q-macro-risk alone
    full, _ = q.leaderboard(app.state.explorer.snapshot, scope="filing", k=1)
    assert set(full["n_questions"]) == {5}
    by_company, _ = q.leaderboard(app.state.explorer.snapshot, scope="filing", k=1, company="Apple Inc.")
    by_year, _ = q.leaderboard(app.state.explorer.snapshot, scope="filing", k=1, fiscal_year=2022)
    assert set(by_company["n_questions"]) == set(by_year["n_questions"]) == {5}
    assert q.leaderboard(app.state.explorer.snapshot, fiscal_year=2021)[0].empty
    assert q.filter_options(app.state.explorer.snapshot)["fiscal_year"] == [2022]


def test_question_view_reruns_the_configuration_and_marks_relevance(client):
    r = client.get("/question/q-net-sales", params={"scope": "filing", "config": ["bm25@3", "hybrid_rrf@3"]})
    assert r.status_code == 200
    assert r.text.count('class="card config-run"') == 2
    assert "relevant chunk" in r.text
    assert 'class="hl hl-evidence hl-table_row"' in r.text   # the evidence row boxed on the page image
    assert "/page/AAPL-2022-10K/4.png" in r.text
    png = client.get("/page/AAPL-2022-10K/4.png")
    assert png.status_code == 200 and png.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert client.get("/page/AAPL-2022-10K/99.png").status_code == 404


def test_question_text_is_escaped(client):
    r = client.get("/question/q-script")
    assert "<script>window.__finrag_xss" not in r.text
    assert "&lt;script&gt;window.__finrag_xss = 1&lt;/script&gt;" in r.text
    assert "&lt;b&gt;bold?&lt;/b&gt;" in r.text


def test_failure_browser_lists_the_question_every_configuration_misses(client):
    r = client.get("/failures", params={"scope": "filing"})
    assert r.status_code == 200
    missed = r.text.split('id="all-missed"')[1].split("</table>")[0]
    assert "/question/q-cover" in missed
    assert "/question/q-net-sales" not in missed
    hardest = r.text.split('id="hardest"')[1].split("</table>")[0]
    assert hardest.index("/question/q-cover") < hardest.index("/question/q-net-sales")
    split = r.text.split('id="disagreements"')[1].split("</table>")[0]
    links = [part.split("?")[0] for part in split.split('href="/question/')[1:]]
    assert len(links) == len(set(links))              # one row per question


def test_corpus_page_shows_filings_and_quarantine_reasons(client):
    r = client.get("/corpus")
    assert "AAPL-2022-10K" in r.text
    log = r.text.split('id="ingest-log"')[1]
    assert 'class="quarantined"' in log and "PDF could not be opened: Failed to load document" in log


def test_ask_with_an_override_and_a_bad_override(client, app):
    from finrag_pipeline.core.config import parse_overrides
    from finrag_pipeline.core.retrieval.registry import build_named_retrievers

    question = "What were Apple's total net sales in fiscal 2022?"
    r = client.get("/ask", params={"q": question, "scope": "corpus", "a_retriever": "hybrid_rrf", "a_k": 3,
                                   "a_overrides": "hybrid_rrf.rrf_k=30"})
    assert r.status_code == 200
    resources = app.state.explorer.session().resources
    expected = build_named_retrievers(resources, ["hybrid_rrf"], overrides=parse_overrides(["hybrid_rrf.rrf_k=30"]))
    hits = expected["hybrid_rrf"].retrieve(question, 3, None).hits
    assert f"{hits[0].score:.4f}" in r.text             # the page ran the overridden retriever
    assert "round trip" in r.text
    bad = client.get("/ask", params={"q": question, "a_retriever": "hybrid_rrf", "a_overrides": "hybrid_rrf.rrf_k=-1"})
    assert "rrf_k" in bad.text and 'class="error ask-error"' in bad.text


def test_ask_shows_the_calculators_plan_and_operand_rows(client):
    r = client.get("/ask", params={"q": "What were Apple's total net sales in fiscal 2022?", "scope": "corpus",
                                   "a_retriever": "hybrid_rrf", "a_k": 3, "a_model": "calculator"})
    assert r.status_code == 200 and "plan and operands" in r.text
    plan = r.text.split('class="plan"')[1].split("</table>")[0]
    assert "<code>revenue</code>" in plan and "<code>FY2022</code>" in plan
    operands = r.text.split('class="operands"')[1].split("</table>")[0]
    state = r.text.split('answer-state">')[1].split("<")[0]
    # an answer lists every row it computed from (the excerpt corpus may lack the statement: then none)
    assert ("FY2022" in operands and "/filing/" in operands) == (state == "answered")


def test_a_new_snapshot_is_picked_up(client, home):
    from finrag_pipeline.core.warehouse import publish_snapshot

    wh = home["corpus"].warehouse
    wh.replace_rows("core.corpus_versions", [{"corpus_state": "newer-state", "filing_ids": "[]", "n_filings": 1,
                                              "n_chunks": 1, "embedder": "test",
                                              "created_at": "2099-01-01 00:00:00"}], where={"corpus_state": "newer-state"})
    publish_snapshot(wh, home["paths"].warehouse_snapshot)
    try:
        assert "newer-state" in client.get("/leaderboard").text
    finally:
        wh.delete_rows("core.corpus_versions", {"corpus_state": "newer-state"})
        publish_snapshot(wh, home["paths"].warehouse_snapshot)
    assert "explorer-test-state" in client.get("/leaderboard").text


# ---------------------------------------------------------------------------------------------
# Headless chromium


@pytest.fixture(scope="module")
def server(app):
    import uvicorn

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail(f"{CHROMIUM} / {CHROMEDRIVER} missing: `make browser` installs Debian's chromium")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline, "the explorer did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def browser(server):
    os.environ["SE_OFFLINE"] = "true"           # selenium manager must never fetch a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROME_FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()


def _wait(driver, condition, timeout=30):
    """Until ``condition`` holds; an element replaced by an htmx swap mid-check just means "not yet"."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(condition)


def test_browser_leaderboard_to_a_failed_question_with_its_page_highlighted(browser, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(f"{server}/leaderboard")
    assert "explorer-test-state" in browser.find_element(By.ID, "state").text
    # filter to one scope through htmx, then follow a configuration to its questions
    Select(browser.find_element(By.ID, "filter-scope")).select_by_visible_text("filing")
    _wait(browser, lambda d: all(row.find_elements(By.TAG_NAME, "td")[0].text == "filing"
                                 for row in d.find_elements(By.CSS_SELECTOR, "#leaderboard tbody tr")))
    assert "scope=filing" in browser.current_url
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".chart .main-svg"))   # plotly drew the chart
    browser.find_element(By.LINK_TEXT, "bm25@1").click()
    _wait(browser, lambda d: d.find_elements(By.ID, "questions"))
    failed = browser.find_elements(By.CSS_SELECTOR, "#questions tr.failed a.question-link")
    assert failed, "bm25@1 misses at least the cover-page question"
    target = next(a for a in failed if "q-cover" in a.get_attribute("href"))
    target.click()
    _wait(browser, lambda d: d.find_elements(By.ID, "page-image"))
    image = browser.find_element(By.ID, "page-image")
    _wait(browser, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image))
    boxes = [b for b in browser.find_elements(By.CSS_SELECTOR, ".hl-evidence") if b.is_displayed()]
    assert boxes, "the evidence is boxed on the page image"
    assert boxes[0].size["width"] > 10 and boxes[0].size["height"] > 5
    # the box sits on the image
    img, box = image.rect, boxes[0].rect
    assert img["x"] <= box["x"] and box["x"] + box["width"] <= img["x"] + img["width"] + 2
    assert browser.find_elements(By.CSS_SELECTOR, ".hit.not-relevant")


def test_browser_question_view_compares_two_configurations(browser, server):
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/question/q-net-sales?scope=corpus&config=bm25@3&config=hybrid_rrf@3")
    runs = browser.find_elements(By.CSS_SELECTOR, ".config-run")
    assert [r.get_attribute("data-config") for r in runs] == ["bm25@3", "hybrid_rrf@3"]
    for run in runs:
        assert run.find_elements(By.CSS_SELECTOR, "li.hit")
    assert browser.find_elements(By.CSS_SELECTOR, ".hl-evidence")
    assert browser.find_elements(By.CSS_SELECTOR, "#answers .answer")


def test_browser_ask_with_an_override_side_by_side(browser, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(f"{server}/ask")
    browser.find_element(By.ID, "ask-question").send_keys("What was Apple's net income in fiscal 2022?")
    Select(browser.find_element(By.ID, "a-retriever")).select_by_visible_text("hybrid_rrf")
    browser.find_element(By.ID, "a-overrides").send_keys("hybrid_rrf.rrf_k=30")
    browser.find_element(By.ID, "ask-compare").click()
    Select(browser.find_element(By.ID, "b-retriever")).select_by_visible_text("bm25")
    browser.find_element(By.ID, "ask-submit").click()
    _wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#ask-results .ask-run")) == 2, timeout=60)
    runs = browser.find_elements(By.CSS_SELECTOR, "#ask-results .ask-run")
    assert [r.get_attribute("data-retriever") for r in runs] == ["hybrid_rrf", "bm25"]
    assert "hybrid_rrf.rrf_k=30" in runs[0].find_element(By.CSS_SELECTOR, ".overrides").text
    for run in runs:
        assert run.find_element(By.CSS_SELECTOR, ".answer-state").text
        assert "round trip" in run.find_element(By.CSS_SELECTOR, ".timings").text
        assert run.find_elements(By.CSS_SELECTOR, ".hl")    # evidence page with the retrieved rows boxed
    assert "99,803" in runs[0].find_element(By.CSS_SELECTOR, ".answer-text").text


def test_browser_shows_a_script_in_a_question_as_text(browser, server):
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/question/q-script")
    assert browser.find_element(By.ID, "question-text").text == SCRIPT_QUESTION
    assert browser.execute_script("return typeof window.__finrag_xss") == "undefined"
    assert "<b>bold?</b>" in browser.find_element(By.ID, "reference-answer").text


def test_browser_screenshot_of_the_question_view(browser, server, tmp_path):
    """Writes docs/explorer_question_view.png when FINRAG_SCREENSHOT=1 (the README's picture was taken the
    same way over a two-filing home, see docs/BENCHMARKS.md)."""
    from selenium.webdriver.common.by import By

    browser.get(f"{server}/question/q-net-sales?scope=filing&config=bm25@3&config=hybrid_rrf@3")
    image = browser.find_element(By.ID, "page-image")
    _wait(browser, lambda d: d.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image))
    out = tmp_path / "question_view.png"
    assert browser.save_screenshot(str(out)) and out.stat().st_size > 10_000
    if os.environ.get("FINRAG_SCREENSHOT") == "1":
        shutil.copy(out, Path(__file__).parents[1] / "docs" / "explorer_question_view.png")
