"""End to end: ``kioku serve`` as a real process on a loopback port, spoken to over HTTP."""

from __future__ import annotations

import time

import httpx
import pytest

pytestmark = pytest.mark.e2e


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
