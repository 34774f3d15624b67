"""Every limit, tried one past its edge through REST: a clear 4xx naming the field, nothing
written. (The cap of load_pinned is clamped, not refused, and says so.)"""

from __future__ import annotations

from typing import Any

import pytest

from kioku.models import MAX_STATE_TTL
from kioku.models.base import MAX_QUERY_CHARS, MAX_SUMMARY_CHARS, MAX_TAGS
from kioku.runtime import Runtime
from tests.conftest import SyncASGIClient

API = "/api/v1/contexts/default"
ITEM = {"summary": "fits"}

CASES: list[tuple[str, str, str, Any, int, str]] = [
    ("summary", "POST", "/memories", {"summary": "x" * (MAX_SUMMARY_CHARS + 1)}, 422, "summary"),
    ("tags", "POST", "/memories", {**ITEM, "tags": [f"t{i}" for i in range(MAX_TAGS + 1)]}, 422,
     "tags"),
    ("tag length", "POST", "/memories", {**ITEM, "tags": ["x" * 65]}, 422, "tags[0]"),
    ("source_uri", "POST", "/memories", {**ITEM, "source_uri": "u" * 2049}, 422, "source_uri"),
    ("batch size", "POST", "/memories/batch", {"items": [ITEM] * 101}, 422, "items"),
    ("empty batch", "POST", "/memories/batch", {"items": []}, 422, "items"),
    ("query length", "POST", "/recall", {"query": "q" * (MAX_QUERY_CHARS + 1)}, 422, "query"),
    ("k high", "POST", "/recall", {"query": "q", "k": 101}, 422, "k"),
    ("k low", "POST", "/recall", {"query": "q", "k": 0}, 422, "k"),
    ("context_ids", "POST", "/recall", {"query": "q", "filters": {"context_ids": ["c"] * 51}},
     422, "filters.context_ids"),
    ("page size", "GET", "/memories?limit=1001", None, 422, "limit"),
    ("feedback note", "POST", "/feedback", {"memory_id": "m", "helpful": True, "note": "n" * 2001},
     422, "note"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("what", "method", "path", "body", "status", "field"), CASES, ids=[c[0] for c in CASES]
)
def test_one_past_each_limit_is_refused_naming_the_field(
    client: SyncASGIClient,
    runtime: Runtime,
    what: str,
    method: str,
    path: str,
    body: Any,
    status: int,
    field: str,
) -> None:
    answer = client.request(method, API + path, json=body)
    assert answer.status_code == status, (what, answer.text)
    assert answer.json()["error"]["field"] == field, (what, answer.text)
    principal = runtime.local_principal("rest")
    assert runtime.stats.stats(principal, "default").memories == 0


def test_oversized_content_state_and_body_are_413(client: SyncASGIClient, runtime: Runtime) -> None:
    settings = runtime.settings
    content = "c" * (settings.limits.max_content_bytes + 1)
    answer = client.post(f"{API}/memories", json={**ITEM, "content": content})
    assert answer.status_code == 413 and answer.json()["error"]["field"] == "content"
    value = "v" * settings.limits.max_state_bytes
    answer = client.put(f"{API}/state/plan", json={"value": value})
    assert answer.status_code == 413 and answer.json()["error"]["field"] == "value"
    body = b'{"summary": "' + b"x" * settings.limits.max_request_bytes + b'"}'
    answer = client.post(
        f"{API}/memories", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413
    principal = runtime.local_principal("rest")
    stats = runtime.stats.stats(principal, "default")
    assert (stats.memories, stats.state_keys) == (0, 0)


def test_ttl_and_cap_are_clamped_and_say_so(client: SyncASGIClient) -> None:
    state = client.put(f"{API}/state/plan", json={"value": 1, "ttl_seconds": MAX_STATE_TTL * 2})
    assert state.status_code == 200 and state.json()["ttl_clamped"] is True
    for i in range(3):
        client.post(f"{API}/memories", json={"summary": f"rule {i}", "delivery_mode": "always"})
    pinned = client.get(f"{API}/pinned?cap=0").json()  # clamped to 1
    assert len(pinned["items"]) == 1 and pinned["truncated"] is True
    assert pinned["total_available"] == 3
