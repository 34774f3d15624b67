"""A bounded load test on loopback: locust against a real ``kioku serve``, mixed agent calls.

Starts ``kioku serve --dev`` on a scratch SQLite file with the bundled model and no rate limit
(or uses an existing server with ``--url``), seeds a context (memories to recall, pinned
rules), then runs the workload of ``locustfile.py`` headless at a fixed number of users for a
fixed time and reports throughput and p50/p95/p99 per operation. Exits 1 if any request
failed. ``--postgres`` puts the scratch database on a throwaway PostgreSQL instead, and
``--replicas N`` starts N servers on it (the agents spread over them), each with a pool of
``--pool-size`` connections; the pools' waits are then reported from each replica's
``/metrics``. Run it with::

    python -m kioku.benchmark.load --users 8 --seconds 60 [--markdown out.md] [--json out.json]
    python -m kioku.benchmark.load --postgres --replicas 2 --pool-size 4 --users 8 --seconds 60
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
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from kioku.settings.internal import LOAD_HOSTS

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
def scratch_server(
    workdir: Path, database_url: str | None = None, pool_size: int | None = None, name: str = ""
) -> Iterator[str]:
    """``kioku serve --dev`` on ``database_url`` (default: a new SQLite file under
    ``workdir``); yields its URL."""
    port = _free_port()
    # No rate limit: every agent comes from 127.0.0.1, and the point is the server's capacity.
    env = {
        **os.environ,
        "KIOKU_DATABASE_URL": database_url or f"sqlite:///{workdir / 'load.db'}",
        "KIOKU_RATE_LIMIT_PER_MINUTE": "0",
        **({"KIOKU_DB_POOL_SIZE": str(pool_size)} if pool_size else {}),
    }
    env.setdefault("HF_HUB_OFFLINE", "1")
    with (workdir / f"serve{name}.log").open("w") as log:
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
                    raise RuntimeError((workdir / f"serve{name}.log").read_text())
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


@contextmanager
def scratch_replicas(
    workdir: Path, replicas: int, postgres: bool, pool_size: int | None
) -> Iterator[list[str]]:
    """``replicas`` servers on one scratch database (a throwaway PostgreSQL with ``postgres``,
    else a SQLite file); started one after the other (the first migrates); yields their URLs."""
    with ExitStack() as stack:
        url = None
        if postgres:
            from kioku.storage.postgres.throwaway import postgres_server, scratch_database

            url = stack.enter_context(scratch_database(stack.enter_context(postgres_server())))
        yield [
            stack.enter_context(scratch_server(workdir, url, pool_size, name=f"-{i}"))
            for i in range(replicas)
        ]


def pool_waits(bases: Sequence[str]) -> dict[str, float]:
    """Each replica's connection pool, from ``/metrics``: borrows that waited, seconds waited,
    connections open at the end (summed over replicas; empty on SQLite)."""
    totals: dict[str, float] = {}
    names = {"kioku_db_pool_requests_queued_total": "waited", "kioku_db_pool_size": "open",
             "kioku_db_pool_wait_seconds_total": "wait_s"}  # fmt: skip
    for base in bases:
        for line in httpx.get(f"{base}/metrics", timeout=30).text.splitlines():
            metric, _, value = line.partition(" ")
            if metric in names:
                totals[names[metric]] = totals.get(names[metric], 0.0) + float(value)
    return totals


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


def run_locust(
    base: str | Sequence[str], users: int, seconds: int, workdir: Path
) -> list[dict[str, Any]]:
    """Run the workload headless (agents spread over the servers of ``base`` if several);
    the rows of locust's stats CSV (one per operation + total)."""
    bases = [base] if isinstance(base, str) else list(base)
    prefix = workdir / "locust"
    command = [
        sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
        "--host", bases[0], "--users", str(users), "--spawn-rate", str(users),
        "--run-time", f"{seconds}s", "--csv", str(prefix), "--only-summary",
        "--exit-code-on-error", "0", "--loglevel", "WARNING",
    ]  # fmt: skip
    env = {**os.environ, LOAD_HOSTS: ",".join(bases)}
    subprocess.run(command, check=True, capture_output=True, timeout=seconds + 120, env=env)
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
    parser.add_argument("--postgres", action="store_true", help="A throwaway PostgreSQL.")
    parser.add_argument("--replicas", type=int, default=1, help="Servers on one database.")
    parser.add_argument("--pool-size", type=int, default=None, help="KIOKU_DB_POOL_SIZE.")
    args = parser.parse_args(argv)
    pools: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="kioku-load-") as scratch:
        workdir = Path(scratch)
        if args.url:
            seed(args.url)
            rows = run_locust(args.url, args.users, args.seconds, workdir)
        else:
            replicas = scratch_replicas(workdir, args.replicas, args.postgres, args.pool_size)
            with replicas as bases:
                seed(bases[0])
                rows = run_locust(bases, args.users, args.seconds, workdir)
                pools = pool_waits(bases)
    summary = summarise(rows)
    table = markdown(summary, args.users, args.seconds)
    if pools:
        table += (
            f"\n\nconnection pools ({args.replicas} replicas, at most {args.pool_size or 10} "
            f"connections each): {pools.get('waited', 0):.0f} borrows waited, "
            f"{pools.get('wait_s', 0):.2f} s in all; {pools.get('open', 0):.0f} open at the end"
        )
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n", encoding="utf-8")
    if args.json:
        figures = {"operations": summary, "pools": pools} if pools else summary
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    failures = sum(row["failures"] for row in summary if row["operation"] == "all")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
