"""Screenshots of the Dagster UI and the report for the README, from headless Chromium.

    FINRAG_HOME=/path/to/home python docs/take_screenshots.py [--port 3333]

Starts the webserver on ``$FINRAG_HOME/dagster_home`` (workspace.yaml) and the report server, shoots the
pages below into docs/img/ (palette PNGs, to keep them small) and stops both servers. Needs `chromium`
(Debian: apt-get install -y chromium).
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
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "img"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def pages(ui: str, report: str) -> dict[str, tuple[str, str]]:
    return {
        "ui_job_runs": (f"{ui}/locations/finrag_pipeline/jobs/ingest_filing/runs", "1400,760"),
        "ui_checks": (f"{ui}/assets/pages?view=checks", "1400,760"),
        "ui_timeline": (f"{ui}/overview/activity/timeline", "1400,700"),
        "ui_asset_chunks": (f"{ui}/assets/chunks?view=overview", "1400,900"),
        "report": (report, "1300,1800"),
        "report_question_types": (_section_page(report, "metrics-per-question"), "1300,1000"),
        "report_worst_questions": (_section_page(report, "worst-questions"), "1300,900"),
    }


def _section_page(report_url: str, anchor: str) -> str:
    """A page framing the report scrolled to one section (a headless screenshot ignores #anchors)."""
    return report_url.rsplit("/", 1)[0] + f"/.shot-{anchor}.html"


def write_section_pages(reports_dir: Path, report_name: str, anchors: list[str]) -> list[Path]:
    pages_written = []
    for anchor in anchors:
        page = reports_dir / f".shot-{anchor}.html"
        page.write_text(f'<html><body style="margin:0"><iframe src="{report_name}#{anchor}" '
                        'style="border:0;width:100vw;height:100vh"></iframe></body></html>')
        pages_written.append(page)
    return pages_written


def wait_for(url: str, seconds: float = 240) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(2)
    raise TimeoutError(url)


def shoot(url: str, size: str, out: Path, budget_ms: int = 25000) -> None:
    raw = out.with_suffix(".raw.png")
    subprocess.run(["chromium", *CHROMIUM_FLAGS, f"--window-size={size}", f"--virtual-time-budget={budget_ms}",
                    f"--screenshot={raw}", url], check=True, capture_output=True, timeout=180)
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
    try:
        ui = f"http://127.0.0.1:{args.port}"
        wait_for(f"{ui}/server_info")
        wait_for(f"http://127.0.0.1:{args.report_port}/finrag_report.html")
        time.sleep(20)  # the code location loads in its own process after the server answers
        # The first-visit "Join the Dagster community" dialog would cover every page: mark it seen.
        request = urllib.request.Request(f"{ui}/graphql", data=json.dumps({"query": "mutation { setNuxSeen }"}).encode(),
                                         headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=30).close()
        OUT.mkdir(parents=True, exist_ok=True)
        framing = write_section_pages(home / "reports", "finrag_report.html", ["metrics-per-question", "worst-questions"])
        for name, (url, size) in pages(ui, f"http://127.0.0.1:{args.report_port}/finrag_report.html").items():
            if args.only and name not in args.only:
                continue
            shoot(url, size, OUT / f"{name}.png")
            print(name, (OUT / f"{name}.png").stat().st_size, "bytes")
        for page in framing:
            page.unlink()
    finally:
        for proc in (web, report):
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    if shutil.which("chromium") is None:
        sys.exit("chromium is not installed (apt-get install -y chromium)")
    main()
