"""Recall's overhead over its own query embedding, over REST, in one run on one machine.

    .venv/bin/python scripts/recall_overhead.py [--data ../shared/data] [--conversation conv-26]
        [--queries 150] [--runs 3]

Starts ``kioku serve --dev`` on a throwaway SQLite database (the bundled model), writes one
LoCoMo conversation through REST (sessions as threads, ``wait=true``: every memory embedded)
into the context ``locomo``, and a second one holding one memory (the lexical index is per
workspace: a one-memory context beside the conversation would search its index), then,
``--runs`` times in turn:

- ``bare embedding``: the configured model's ``embed_query`` on each question, in this process
  (the same runtime the server embeds the query with: the floor recall is measured against);
- ``REST recall``: ``POST /contexts/locomo/recall`` (k=10, hybrid) with each question on one
  kept-alive connection, until the whole answer is read;
- ``REST recall, one memory``: the same questions against the second server;
- ``MCP recall``: the ``recall`` tool (``context_id="locomo"``, k=10) through the official MCP
  client over streamable HTTP against the first server, one client session per run.

Prints p50/p95 per measure, the ratios the targets name (recall p50 / bare p50 ≤ 1.5; the
one-memory p50 − bare p50 ≤ 3 ms), the one-memory recall over the bare embedding (the floor
of the first ratio on this stack), the server's own stage timings (``Server-Timing``, p50
ms) and the load average before and after. Result: docs/benchmarks.md, *Recall overhead*.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import anyio
import httpx2
from hook_latency import BIN, free_port
from mcp import Client as MCPClient
from mcp.client.streamable_http import streamable_http_client

from kioku.benchmark.data import load_locomo
from kioku.benchmark.ingest import memory_item
from kioku.benchmark.meta import configured_embedder


class Connection:
    """One kept-alive HTTP connection, as an SDK client holds one."""

    def __init__(self, port: int) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method: str, path: str, body: object = None) -> tuple[int, bytes, str]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            self.http.request(method, path, body=data, headers=headers)
        except (BrokenPipeError, ConnectionResetError):
            # The server closed the idle connection (uvicorn's keep-alive is 5 s) before the
            # request went out: nothing reached it, so connect again and send it once more.
            self.http.close()
            self.http.request(method, path, body=data, headers=headers)
        answer = self.http.getresponse()
        return answer.status, answer.read(), answer.getheader("Server-Timing") or ""


@contextmanager
def server() -> Iterator[int]:
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        env = {**os.environ, "KIOKU_DATABASE_URL": f"sqlite:///{data}/kioku.db"}
        process = subprocess.Popen(
            [str(BIN / "kioku"), "serve", "--dev", "--port", str(port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            for _ in range(240):
                try:
                    if Connection(port).call("GET", "/health")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.5)
            yield port
        finally:
            process.terminate()
            process.wait(30)


async def mcp_recalls(port: int, questions: list[str], warm_up: int) -> list[float]:
    """Seconds each question's ``recall`` tool call took over one MCP session (after
    ``warm_up`` untimed calls)."""
    took: list[float] = []
    http = httpx2.AsyncClient(timeout=60)  # the SDK's own httpx
    transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
    async with http, MCPClient(transport) as client:
        for index, question in enumerate([*questions[:warm_up], *questions]):
            began = time.perf_counter()
            result = await client.call_tool(
                "recall", {"query": question, "k": 10, "context_id": "locomo"}
            )
            if index >= warm_up:
                took.append(time.perf_counter() - began)
            assert not result.is_error, result.content
    return took


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--conversation", default="locomo-conv-26")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    corpus = next(c for c in load_locomo(args.data / "locomo") if c.context == args.conversation)
    questions = [q.text for q in corpus.questions[: args.queries]]
    embedder = configured_embedder()  # what `kioku serve` embeds with, built the same way
    assert embedder is not None
    load_before = os.getloadavg()
    # Two servers: the lexical index is per workspace, so a one-memory context beside the
    # conversation would still search the conversation's index.
    with server() as port, server() as lone_port:
        rest, lone = Connection(port), Connection(lone_port)
        assert rest.call("POST", "/api/v1/contexts", {"name": "locomo"})[0] in (200, 201)
        items = [memory_item(doc) for doc in corpus.docs]
        for start in range(0, len(items), 100):
            status, body, _ = rest.call(
                "POST", "/api/v1/contexts/locomo/memories/batch",
                {"items": items[start : start + 100], "wait": True},
            )  # fmt: skip
            assert status in (200, 201), body[:300]
        one = {"summary": "Caroline went to the LGBTQ support group on 7 May 2023."}
        assert lone.call("POST", "/api/v1/contexts/default/memories", one)[0] == 201
        targets = (
            ("REST recall", rest, "locomo"),
            ("REST recall, one memory", lone, "default"),
        )
        samples: dict[str, list[float]] = {}
        stages: dict[str, dict[str, list[float]]] = {}
        for question in questions[:10]:  # warm-up: both paths, both contexts
            embedder.embed_query(question)
            for _, connection, context in targets:
                connection.call(
                    "POST", f"/api/v1/contexts/{context}/recall", {"query": question, "k": 10}
                )
        for _ in range(args.runs):
            for question in questions:
                began = time.perf_counter()
                embedder.embed_query(question)
                samples.setdefault("bare embedding", []).append(time.perf_counter() - began)
            for label, connection, context in targets:
                for question in questions:
                    began = time.perf_counter()
                    status, _, timing = connection.call(
                        "POST", f"/api/v1/contexts/{context}/recall", {"query": question, "k": 10}
                    )
                    samples.setdefault(label, []).append(time.perf_counter() - began)
                    assert status == 200
                    for part in timing.split(", ") if timing else ():  # older servers: none
                        stage, _, duration = part.partition(";dur=")
                        stages.setdefault(label, {}).setdefault(stage, []).append(float(duration))
            warm_up = 10 if not samples.get("MCP recall") else 0
            took = anyio.run(mcp_recalls, port, questions, warm_up)
            samples.setdefault("MCP recall", []).extend(took)
    load_after = os.getloadavg()
    p50 = {name: statistics.median(values) * 1000 for name, values in samples.items()}
    print(f"{len(corpus.docs)} memories ({args.conversation}), {len(questions)} questions "
          f"x {args.runs} runs, k=10, hybrid, SQLite, python {sys.version.split()[0]}")  # fmt: skip
    print("| measure | p50 ms | p95 ms |\n|---|---|---|")
    for name, values in samples.items():
        ms = [v * 1000 for v in values]
        print(f"| {name} | {statistics.median(ms):.2f} | {percentile(ms, 0.95):.2f} |")
    bare = p50["bare embedding"]
    print(f"\nREST recall p50 / bare embedding p50 = {p50['REST recall'] / bare:.2f} (target 1.5)")
    print(f"one-memory recall p50 - bare embedding p50 = "
          f"{p50['REST recall, one memory'] - bare:.2f} ms (target 3)")  # fmt: skip
    print(f"MCP recall p50 - REST recall p50 = {p50['MCP recall'] - p50['REST recall']:.2f} ms")
    print(
        f"one-memory recall p50 / bare embedding p50 = "
        f"{p50['REST recall, one memory'] / bare:.2f} (the floor of the first ratio: a recall "
        "with next to no ranking work, HTTP and the embedding's hand-off included)"
    )
    for label, found in stages.items():
        medians = (f"{stage} {statistics.median(values):.2f}" for stage, values in found.items())
        print(f"server stages, {label} (p50 ms): " + ", ".join(medians))
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")


if __name__ == "__main__":
    main()
