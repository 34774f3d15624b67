"""End to end: ``kioku serve`` as a real process on a loopback port, spoken to over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    data = tmp_path_factory.mktemp("serve")
    env = {
        **os.environ,
        "KIOKU_DATABASE_URL": f"sqlite:///{data / 'kioku.db'}",
        "HF_HUB_OFFLINE": "1",
    }
    log = (data / "serve.log").open("w")
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
                raise RuntimeError(Path(log.name).read_text())
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(Path(log.name).read_text())
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_remember_then_recall_over_http(server: str) -> None:
    api = f"{server}/api/v1"
    with httpx.Client(base_url=api, timeout=60) as http:
        assert http.post("/contexts", json={"name": "e2e"}).status_code == 201
        stored = http.post(
            "/contexts/e2e/memories",
            params={"wait": True},
            json={"summary": "The quarterly report is due on the 15th", "tags": ["finance"]},
        )
        assert stored.status_code == 201 and stored.json()["embedding_status"] == "ready"
        http.post("/contexts/e2e/memories", json={"summary": "Lunch is at noon"})
        found = http.post("/contexts/e2e/recall", json={"query": "when is the report due?"})
        assert found.status_code == 200
        assert found.json()["results"][0]["id"] == stored.json()["id"]
        assert http.get("/contexts/e2e/memories/not-an-id").status_code == 404


def test_async_embedding_catches_up(server: str) -> None:
    api = f"{server}/api/v1"
    with httpx.Client(base_url=api, timeout=60) as http:
        http.post("/contexts", json={"name": "async"})
        items = [{"summary": f"background fact number {i}"} for i in range(20)]
        batch = http.post("/contexts/async/memories/batch", json={"items": items}).json()
        ids = [r["memory_id"] for r in batch["results"]]
        deadline = time.monotonic() + 60
        statuses: set[str] = set()
        while time.monotonic() < deadline:
            statuses = {
                http.get(f"/contexts/async/memories/{i}").json()["embedding_status"] for i in ids
            }
            if statuses == {"ready"}:
                break
            time.sleep(0.2)
        assert statuses == {"ready"}
        assert http.get("/health").json()["embedding_queue"] == 0
