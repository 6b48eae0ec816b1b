"""Screenshots of the Dagster UI and the report for the README, from headless Chromium.

    FINRAG_HOME=/path/to/home python docs/take_screenshots.py [--port 3333] [--only ui_checks report]

Starts the webserver on ``$FINRAG_HOME/dagster_home`` (workspace.yaml) and the report server, drives
Debian's chromium through /usr/bin/chromedriver (selenium, as the web explorer's browser tests; `make
browser` installs both) over the pages below, some after a click (a check's per-filing tab), saves them
into docs/img/ (palette PNGs, to keep them small) and stops both servers. The README's screenshots come
from the demo's home after `make demo`, with one non-filing file dropped into its inbox (the quarantine).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "img"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _click_text(text: str, nth: int = -1) -> Callable:
    """Click the ``nth`` element whose own text is ``text`` (a tab of the page)."""
    def act(driver) -> None:
        from selenium.webdriver.common.by import By

        driver.execute_script("arguments[0].click()", driver.find_elements(By.XPATH, f"//*[text()='{text}']")[nth])
    return act


def _then(*actions: Callable) -> Callable:
    def act(driver) -> None:
        for action in actions:
            action(driver)
            time.sleep(2)
    return act


def _scroll_to_text(text: str) -> Callable:
    """Scroll (every scrolling container on the way) to the element whose own text is ``text``."""
    def act(driver) -> None:
        from selenium.webdriver.common.by import By

        driver.execute_script("arguments[0].scrollIntoView()", driver.find_element(By.XPATH, f"//*[text()='{text}']"))
    return act


@dataclass(frozen=True)
class Shot:
    url: str
    size: tuple[int, int]
    action: Callable | None = None
    settle_s: float = 6.0


def pages(ui: str, report: str) -> dict[str, Shot]:
    return {
        "ui_job_runs": Shot(f"{ui}/locations/finrag_pipeline/jobs/ingest_filing/runs", (1400, 760)),
        "ui_checks": Shot(f"{ui}/assets/chunks?view=checks", (1400, 760),
                          _then(_click_text("Partitions"), _click_text("MSFT-2022-10K"))),
        "ui_timeline": Shot(f"{ui}/overview/activity/timeline", (1400, 420), _click_text("1hr")),
        "ui_asset_chunks": Shot(f"{ui}/assets/chunks?view=overview", (1400, 900)),
        "ui_dbt_columns": Shot(f"{ui}/assets/marts/mart_retriever_leaderboard?view=overview", (1400, 900),
                               _scroll_to_text("Columns")),
        "ui_inbox_quarantine": Shot(f"{ui}/assets/inbox_quarantine?view=overview", (1400, 760)),
        "report": Shot(report, (1300, 1500), settle_s=10),
        "report_question_types": Shot(f"{report}#metrics-per-question", (1300, 1000), settle_s=10),
        "report_answer_quality": Shot(f"{report}#answer-quality", (1300, 700), settle_s=10),
        "report_worst_questions": Shot(f"{report}#worst-questions", (1300, 900), settle_s=10),
    }


def wait_for(url: str, seconds: float = 240) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(2)
    raise TimeoutError(url)


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def shoot(driver, shot: Shot, out: Path) -> None:
    driver.set_window_size(*shot.size)
    width, height = shot.size   # the window's frame takes some of it: make the page itself that size
    driver.set_window_size(width + width - driver.execute_script("return window.innerWidth"),
                           height + height - driver.execute_script("return window.innerHeight"))
    driver.get("about:blank")  # a new document each time: a #anchor on the same page would not reload it
    driver.get(shot.url)
    time.sleep(shot.settle_s)
    if shot.action is not None:
        shot.action(driver)
        time.sleep(3)
    raw = out.with_suffix(".raw.png")
    driver.save_screenshot(str(raw))
    Image.open(raw).convert("RGB").quantize(colors=128).save(out, optimize=True)
    raw.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=3333)
    ap.add_argument("--report-port", type=int, default=8765)
    ap.add_argument("--only", nargs="*", help="names of the pages to shoot (default all)")
    args = ap.parse_args()
    home = Path(os.environ["FINRAG_HOME"])
    from finrag_pipeline.core.paths import FinragPaths
    from finrag_pipeline.core.reporting.serve import REPORT_FILE
    from finrag_pipeline.defs.local_runs import get_instance

    get_instance(FinragPaths.from_env(str(home))).dispose()  # as `finrag` opens it (the automation badge)
    env = {**os.environ, "DAGSTER_HOME": str(home / "dagster_home"), "FINRAG_REPORT_PORT": str(args.report_port)}
    bin_dir = Path(sys.executable).parent
    web = subprocess.Popen([str(bin_dir / "dagster-webserver"), "-w", str(REPO / "workspace.yaml"),
                            "-h", "127.0.0.1", "-p", str(args.port)], cwd=REPO, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = subprocess.Popen([sys.executable, "-m", "finrag_pipeline.cli", "report", "--serve",
                               "--port", str(args.report_port)], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    driver = None
    try:
        ui = f"http://127.0.0.1:{args.port}"
        report_url = f"http://127.0.0.1:{args.report_port}/{REPORT_FILE}"
        wait_for(f"{ui}/server_info")
        wait_for(report_url)
        time.sleep(20)  # the code location loads in its own process after the server answers
        # The first-visit "Join the Dagster community" dialog would cover every page: mark it seen.
        request = urllib.request.Request(f"{ui}/graphql", data=json.dumps({"query": "mutation { setNuxSeen }"}).encode(),
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=30).close()
        OUT.mkdir(parents=True, exist_ok=True)
        driver = browser()
        for name, shot in pages(ui, report_url).items():
            if args.only and name not in args.only:
                continue
            shoot(driver, shot, OUT / f"{name}.png")
            print(name, (OUT / f"{name}.png").stat().st_size, "bytes")
    finally:
        if driver is not None:
            driver.quit()
        for proc in (web, report):
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if shutil.which(p) is None]
    if missing:
        sys.exit(f"{' and '.join(missing)} not installed (make browser: apt-get install -y chromium chromium-driver)")
    main()
