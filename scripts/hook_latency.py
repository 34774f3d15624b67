"""How long a Claude Code hook takes against a warm local kioku server, in both forms.

    .venv/bin/python scripts/hook_latency.py [--url URL] [--runs 200]

Without ``--url`` it starts ``kioku serve --dev`` on a free port with a throwaway SQLite
database (the bundled model), stores 3 pinned rules and 300 ordinary memories, and stops it
afterwards. Each form is run ``--runs`` times per event after 20 warm-up runs:

- ``http``: what an ``http`` hook costs Claude Code: one POST of the event JSON to
  ``/api/v1/hooks/claude-code`` on a fresh connection, until the whole answer is read;
- ``command``: what a ``command`` hook costs: ``kioku-hook`` started as a process with the
  event on stdin, until it exits (Python's start included).

Prints p50/p95/max in milliseconds per form and event, and the load average.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

BIN = Path(sys.executable).parent
PROMPTS = [
    "What does Alice drink in the afternoon?",
    "Can we deploy the billing export on Friday?",
    "Summarise what we decided about the retry policy",
    "請求書のエクスポートはいつまでに出す?",
    "Which database does the staging cluster use?",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def throwaway_server() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        env = {**os.environ, "KIOKU_DATABASE_URL": f"sqlite:///{data}/kioku.db",
               "HF_HUB_OFFLINE": "1"}  # fmt: skip
        command = [str(BIN / "kioku"), "serve", "--dev", "--port", str(port)]
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(240):
                try:
                    if post(url, "/health", None, method="GET")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.5)
            seed(url)
            yield url
        finally:
            process.terminate()
            process.wait(30)


def post(url: str, path: str, body: object, method: str = "POST") -> tuple[int, bytes]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data else {}
        connection.request(method, path, body=data, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def seed(url: str) -> None:
    api = "/api/v1/contexts/default/memories"
    for rule in ("Never deploy on Fridays", "Ship the billing export by December 20",
                 "Answer in the language of the question"):  # fmt: skip
        post(url, api, {"summary": rule, "delivery_mode": "always", "type": "rule"})
    items = [{"summary": f"Note {n}: the staging cluster runs service {n % 17} on host {n % 5}"}
             for n in range(300)]  # fmt: skip
    items[7] = {"summary": "Alice drinks green tea every afternoon, never coffee"}
    for start in range(0, len(items), 100):
        post(url, f"{api}/batch?wait=true", {"items": items[start : start + 100]})


def event(name: str, n: int) -> dict[str, object]:
    common = {"session_id": "bench", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp"}
    if name == "SessionStart":
        return {**common, "hook_event_name": name, "source": "startup"}
    return {**common, "hook_event_name": name, "prompt": PROMPTS[n % len(PROMPTS)]}


def run_http(url: str, body: dict[str, object]) -> float:
    began = time.perf_counter()
    status, _ = post(url, "/api/v1/hooks/claude-code", body)
    assert status == 200, status
    return time.perf_counter() - began


def run_command(url: str, body: dict[str, object]) -> float:
    began = time.perf_counter()
    done = subprocess.run([str(BIN / "kioku-hook"), "--url", url], input=json.dumps(body).encode(),
                          capture_output=True, check=True)  # fmt: skip
    took = time.perf_counter() - began
    assert done.stdout.startswith(b"{"), done.stderr
    return took


def measure(url: str, runs: int) -> list[tuple[str, str, list[float]]]:
    found = []
    for form, run in (("http", run_http), ("command", run_command)):
        for name in ("SessionStart", "UserPromptSubmit"):
            for n in range(20):
                run(url, event(name, n))
            found.append((form, name, [run(url, event(name, n)) * 1000 for n in range(runs)]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running kioku server (default: start a throwaway one)")
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with (
        throwaway_server() if args.url is None else contextmanager(lambda: iter([args.url]))()
    ) as url:
        results = measure(url, args.runs)
    print(f"hook latency, {args.runs} runs each, warm server ({url}); load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    print("| form | event | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|---|")
    for form, name, times in results:
        p95 = statistics.quantiles(times, n=20)[18]
        print(
            f"| {form} | {name} | {statistics.median(times):.1f} | {p95:.1f} | {max(times):.1f} |"
        )


if __name__ == "__main__":
    main()
