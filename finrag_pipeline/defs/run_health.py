"""Run health: is a filing completely ingested, and did the process running a run die?

Shared by `finrag ingest` (defs/local_runs.py) and the inbox sensor, so the CLI and the daemon agree on
what "ingested" means: every asset of the filing's chain materialized and its counts in agreement
(core/completion.py). A run started by a finrag process carries a ``finrag/process`` tag (host, pid,
process start time); when that process no longer exists the run is marked failed instead of showing
STARTED forever (runs the daemon launched are also covered by Dagster's run monitoring, dagster.yaml).
"""

import os
import socket
from pathlib import Path

import dagster as dg

from finrag_pipeline.core.completion import check_filings
from finrag_pipeline.core.paths import FinragPaths
from finrag_pipeline.core.warehouse import Warehouse

# Every asset of a filing's ingest chain; all must be materialized for the filing to count as ingested.
INGEST_CHAIN = ("filings", "pages", "table_rows", "xbrl_facts", "chunks", "bm25_index", "vector_index", "qa_set")


def incomplete_filings(paths: FinragPaths, instance: dg.DagsterInstance, wh: Warehouse,
                       filing_ids: list[str]) -> dict[str, str]:
    """filing id -> why it is not completely ingested: an asset of its chain never materialized, or its
    counts disagree (pages, leaf chunks, Tantivy documents, LanceDB rows; core/completion.py)."""
    out: dict[str, str] = {}
    materialized = {a: instance.get_materialized_partitions(dg.AssetKey(a)) for a in INGEST_CHAIN}
    for fid in filing_ids:
        missing = [a for a in INGEST_CHAIN if fid not in materialized[a]]
        if missing:
            out[fid] = "not materialized: " + ", ".join(missing)
    rest = [f for f in filing_ids if f not in out]
    if not rest:
        return out
    from finrag_pipeline.core.storage.seam import storage_for

    storage = storage_for(paths)
    storage.publish_results(wh)  # distributed: the counts below read ingest rows workers left on the object store
    for fid, c in check_filings(wh, storage, rest).items():
        if not c.complete:
            out[fid] = "; ".join(c.problems)
    return out


PID_TAG = "finrag/process"


def process_token(pid: int | None = None) -> str:
    """host:pid:start-time of a process; the start time tells a reused pid from the original process."""
    pid = pid or os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def process_alive(token: str) -> bool:
    """Is the process named by a token (process_token) still running? A token of another host counts as alive."""
    host, pid, started = (token.split(":") + ["", "", ""])[:3]
    if host != socket.gethostname():
        return True  # another machine's run: not ours to judge
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return _start_time(int(pid)) == started


def fail_dead_runs(instance: dg.DagsterInstance) -> list[tuple[str, str]]:
    """Mark failed every in-progress run started by a finrag process on this machine that no longer
    exists. Runs launched by the daemon are left to Dagster's run monitoring (dagster.yaml)."""
    failed: list[tuple[str, str]] = []
    runs = instance.get_runs(filters=dg.RunsFilter(statuses=[
        dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]))
    for run in runs:
        token = run.tags.get(PID_TAG)
        if token and not process_alive(token):
            why = f"its process {token.split(':')[1]} died (killed or crashed) during {run.job_name}"
            instance.report_run_failed(run, message=why)
            failed.append((run.run_id, why))
    return failed




PENDING_STATUSES = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
                    dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def repair_requests(instance: dg.DagsterInstance, paths: FinragPaths, wh: Warehouse, filing_ids: list[str],
                    sha_by_filing: dict[str, str]) -> list[tuple[str, str, str]]:
    """(filing id, run key, why) for every filing whose ingest started (its ``filings`` partition was
    materialized) but is not complete, with no run pending: what a killed run leaves. The run key names
    the filing's version: one repair per version, never a retry loop."""
    pending = {r.tags.get("dagster/partition") for r in instance.get_runs(
        filters=dg.RunsFilter(statuses=PENDING_STATUSES))}
    started = instance.get_materialized_partitions(dg.AssetKey(INGEST_CHAIN[0]))
    todo = [f for f in filing_ids if f not in pending and f in started]
    return [(fid, f"repair:{fid}:{sha_by_filing.get(fid, '')[:16]}", why)
            for fid, why in incomplete_filings(paths, instance, wh, todo).items()]
