"""A bounded load test on loopback: locust against a real ``kioku serve``, mixed agent calls.

Starts ``kioku serve --dev`` on a scratch SQLite file with the bundled model and no rate limit
(or uses an existing server with ``--url``), seeds a context (memories to recall, pinned
rules), then runs the workload of ``locustfile.py`` headless at a fixed number of users for a
fixed time and reports throughput and p50/p95/p99 per operation. Exits 1 if any request
failed. Run it with::

    python -m kioku.benchmark.load --users 8 --seconds 60 [--markdown out.md] [--json out.json]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
SEED = (
    "The staging database listens on port 5433",
    "Alice prefers tea over coffee",
    "Friday deploys need a second reviewer and a rollback plan",
    "東京オフィスは渋谷区にある",
    "Bob reviews every database migration",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def scratch_server(workdir: Path) -> Iterator[str]:
    """``kioku serve --dev`` on a new SQLite file under ``workdir``; yields its URL."""
    port = _free_port()
    # No rate limit: every agent comes from 127.0.0.1, and the point is the server's capacity.
    env = {
        **os.environ,
        "KIOKU_DATABASE_URL": f"sqlite:///{workdir / 'load.db'}",
        "KIOKU_RATE_LIMIT_PER_MINUTE": "0",
    }
    env.setdefault("HF_HUB_OFFLINE", "1")
    with (workdir / "serve.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kioku.cli", "serve", "--dev", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                if process.poll() is not None:
                    raise RuntimeError((workdir / "serve.log").read_text())
                try:
                    if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError("kioku serve did not start")
                time.sleep(0.2)
            yield base
        finally:
            process.terminate()
            process.wait(timeout=60)


def seed(base: str) -> None:
    """The ``load`` context: a few facts to recall and two pinned rules."""
    with httpx.Client(base_url=f"{base}/api/v1", timeout=60) as client:
        client.post("/contexts", json={"name": "load"}).raise_for_status()
        items: list[dict[str, Any]] = [{"summary": text} for text in SEED]
        items += [
            {"summary": "Never deploy on Friday evening", "delivery_mode": "always"},
            {"summary": "Ask before deleting data", "delivery_mode": "always"},
        ]
        batch = {"items": items, "wait": True}
        client.post("/contexts/load/memories/batch", json=batch).raise_for_status()


def run_locust(base: str, users: int, seconds: int, workdir: Path) -> list[dict[str, Any]]:
    """Run the workload headless; the rows of locust's stats CSV (one per operation + total)."""
    prefix = workdir / "locust"
    command = [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
        "--host", base, "--users", str(users), "--spawn-rate", str(users),
        "--run-time", f"{seconds}s", "--csv", str(prefix), "--only-summary",
        "--exit-code-on-error", "0", "--loglevel", "WARNING",
    ]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=seconds + 120)
    with Path(f"{prefix}_stats.csv").open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def summarise(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per operation: requests, failures, requests/s, p50/p95/p99 ms."""
    out = []
    for row in rows:
        out.append(
            {
                "operation": row["Name"] if row["Name"] != "Aggregated" else "all",
                "requests": int(row["Request Count"]),
                "failures": int(row["Failure Count"]),
                "per_s": round(float(row["Requests/s"]), 1),
                "p50_ms": float(row["50%"]),
                "p95_ms": float(row["95%"]),
                "p99_ms": float(row["99%"]),
            }
        )
    return out


def markdown(summary: Sequence[dict[str, Any]], users: int, seconds: int) -> str:
    """The summary as a table."""
    lines = [
        f"{users} users, {seconds} s, mixed workload (recall 5 : remember 3 : load_pinned 2 : "
        "set_state 2 : get_state 1)",
        "",
        "| operation | requests | failures | req/s | p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in summary:
        lines.append(
            f"| {row['operation']} | {row['requests']} | {row['failures']} | {row['per_s']} | "
            f"{row['p50_ms']:.0f} | {row['p95_ms']:.0f} | {row['p99_ms']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--users", type=int, default=8, help="Concurrent agents.")
    parser.add_argument("--seconds", type=int, default=60, help="How long to run.")
    parser.add_argument("--url", default=None, help="An existing server (else a scratch one).")
    parser.add_argument("--markdown", default=None, help="Also write the table here.")
    parser.add_argument("--json", default=None, help="Also write the figures here.")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kioku-load-") as scratch:
        workdir = Path(scratch)
        if args.url:
            seed(args.url)
            rows = run_locust(args.url, args.users, args.seconds, workdir)
        else:
            with scratch_server(workdir) as base:
                seed(base)
                rows = run_locust(base, args.users, args.seconds, workdir)
    summary = summarise(rows)
    table = markdown(summary, args.users, args.seconds)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n", encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    failures = sum(row["failures"] for row in summary if row["operation"] == "all")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
