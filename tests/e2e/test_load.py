"""The bounded load test (locust against ``kioku serve`` on loopback) runs with zero errors.

Short settings for ``make test``; ``make soak`` runs it longer with more agents. The figures
themselves are in docs/benchmarks.md: a timed test would only measure this machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_a_mixed_agent_load_on_loopback_answers_every_request(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    run = subprocess.run(
        [sys.executable, "-m", "kioku.benchmark.load", "--users", "4", "--seconds", "8",
         "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {row["operation"]: row for row in json.loads(out.read_text())}
    assert set(rows) == {"recall", "remember", "load_pinned", "set_state", "get_state", "all"}
    assert rows["all"]["failures"] == 0 and rows["all"]["requests"] > 50
    assert all(row["requests"] > 0 for row in rows.values())


def test_two_replicas_on_postgres_share_the_load_and_report_their_pools(tmp_path: Path) -> None:
    """Two servers on one throwaway PostgreSQL, the agents spread over both, each server's
    pool capped at 2 connections (a recall alone holds two): still no failed request, and the
    pools' counters come back from each replica's /metrics."""
    out = tmp_path / "load.json"
    run = subprocess.run(
        [sys.executable, "-m", "kioku.benchmark.load", "--postgres", "--replicas", "2",
         "--pool-size", "2", "--users", "4", "--seconds", "8", "--json", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    figures = json.loads(out.read_text())
    rows = {row["operation"]: row for row in figures["operations"]}
    # How many requests 8 s hold is the machine's business: with 2 connections a replica the
    # pool starves by design (its waits are what this run reports), and the count swung from
    # 11 to 182 between runs of the same code (2026-12-05). Requests were answered, none failed.
    assert rows["all"]["failures"] == 0 and rows["all"]["requests"] >= 4
    assert 2 <= figures["pools"]["open"] <= 4  # one or two a replica, never past its cap
    assert "connection pools (2 replicas, at most 2 connections each)" in run.stdout
