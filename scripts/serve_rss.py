"""Peak RSS of a real ``kioku serve`` holding N memories, with the bundled model loaded and
recall answered (issue 16's target: ≤ 700 MB at 100,000 memories).

    .venv/bin/python scripts/serve_rss.py [N] [--data ../shared/data]

Fills a SQLite file as ``kioku bench`` does at scale (the LoCoMo turns through the service and
the real embedder, then synthetic memories with synthetic vectors, HNSW graph built), starts
``kioku serve --dev`` on it, answers 200 LoCoMo questions over HTTP (the first large search
loads the vector cache and the graph), and reads the process's peak resident set (VmHWM) and
its resident set at the end (VmRSS) from /proc.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from kioku.benchmark.data import load_locomo
from kioku.benchmark.scale import CONTEXT, run_scale
from kioku.runtime import open_runtime
from kioku.settings import Settings


def fill(url: str, n: int, data: Path) -> list[str]:
    corpora = load_locomo(data / "locomo")
    docs = [doc for corpus in corpora for doc in corpus.docs]
    questions = [q for corpus in corpora for q in corpus.questions]
    runtime = open_runtime(Settings({"database": {"url": url}, "embedder": {"background": True}}))
    try:
        run_scale(runtime, runtime.local_principal("import"), [n], docs, questions)
    finally:
        runtime.close()
    return [q.text for q in questions[:200]]


def status(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            fields[name] = int(value.split()[0]) // 1024
    return fields


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("n", type=int, nargs="?", default=100_000)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kioku-rss-"))
    url = f"sqlite:///{folder / 'kioku.db'}"
    began = time.monotonic()
    queries = fill(url, args.n, args.data)
    print(f"filled {args.n} memories in {time.monotonic() - began:.0f} s")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "KIOKU_DATABASE_URL": url, "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "kioku.cli", "serve", "--dev", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while True:
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        first = time.monotonic()
        recall = f"{base}/api/v1/contexts/{CONTEXT}/recall"
        httpx.post(recall, json={"query": queries[0], "k": 10}, timeout=120).raise_for_status()
        print(f"serve: healthy after {first - started:.1f} s, first recall "
              f"{time.monotonic() - first:.2f} s later")  # fmt: skip
        time.sleep(60)  # the HNSW graph loads (or builds) in the background after a large search
        for query in queries:
            httpx.post(recall, json={"query": query, "k": 10}, timeout=60).raise_for_status()
        measured = status(server.pid)
        print(f"after {len(queries) + 1} recalls over {args.n} memories: peak RSS "
              f"{measured['VmHWM']} MB, RSS now {measured['VmRSS']} MB")  # fmt: skip
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
