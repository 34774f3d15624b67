"""Input the server cannot store or send back (lone UTF-16 surrogates, JSON nested deeper than
32) is a 422 naming the field, and nothing is written; each was a 500 before. Bodies are sent
as raw JSON text, as a client would escape them (``"\\udfff"``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kioku.runtime import Runtime
from kioku.settings import Settings
from tests.conftest import SyncASGIClient, backend_settings

API = "/api/v1/contexts/default"
BAD = "\\udfff"  # as JSON text: the escape of a lone low surrogate


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Both backends: each failed differently (SQLite and psycopg encode, JSON answers)."""
    return backend_settings(request, tmp_path)


def deep(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


def send(client: SyncASGIClient, method: str, path: str, text: str) -> dict:
    answer = client.request(
        method, API + path, content=text.encode(), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid_input"
    return error


def written(client: SyncASGIClient) -> tuple[int, int]:
    memories = client.get(f"{API}/memories?limit=200").json()["items"]
    state = client.get(f"{API}/state").json()["items"]
    return len(memories), len(state)


CASES = [
    ("POST", "/memories", f'{{"summary": "x", "content": "a{BAD}"}}', "content"),
    ("POST", "/memories", f'{{"summary": "{BAD}"}}', "summary"),
    ("POST", "/memories", f'{{"summary": "x", "tags": ["t", "{BAD}"]}}', "tags[1]"),
    ("POST", "/memories", f'{{"summary": "x", "{BAD}": 1}}', "body"),
    ("POST", "/memories", f'{{"summary": "x", "source_uri": "{BAD}"}}', "source_uri"),
    (
        "POST",
        "/memories/batch",
        f'{{"items": [{{"summary": "a"}}, {{"summary": "b", "content": "{BAD}"}}]}}',
        "items[1].content",
    ),
    ("POST", "/memories/batch", f'{{"items": [{{"summary": "a", "{BAD}": 1}}]}}', "items[0]"),
    (
        "POST",
        "/ingest",
        f'{{"ops": [{{"op": "upsert", "external_id": "e", "summary": "s", "content": "{BAD}"}}]}}',
        "ops[0].content",
    ),
    ("PUT", "/state/k", f'{{"value": "{BAD}"}}', "value"),
    ("PUT", "/state/k", f'{{"value": {{"a": {{"b": ["{BAD}"]}}}}}}', "value.a.b[0]"),
    ("PUT", "/state/k", f'{{"value": {{"a": {{"{BAD}": 1}}}}}}', "value.a"),
    ("PUT", "/state/k", f'{{"value": {deep(255)}}}', "value" + ".a" * 32),
    ("PUT", "/state/k", f'{{"value": {"[" * 33 + "]" * 33}}}', "value" + "[0]" * 32),
    ("POST", "/recall", f'{{"query": "{BAD}"}}', "query"),
    ("POST", "/recall", f'{{"query": "q", "filters": {{"tags": ["{BAD}"]}}}}', "filters.tags[0]"),
    ("POST", "/feedback", f'{{"memory_id": "m", "helpful": true, "note": "{BAD}"}}', "note"),
    ("POST", "/memories", "not json", "body"),
    ("POST", "/memories", "[1]", "body"),
]


@pytest.mark.parametrize(("method", "path", "text", "field"), CASES)
def test_unstorable_input_is_422_naming_the_field_and_writes_nothing(
    client: SyncASGIClient, method: str, path: str, text: str, field: str
) -> None:
    before = written(client)
    error = send(client, method, path, text)
    assert error["field"] == field, error
    assert written(client) == before


def test_update_memory_with_a_lone_surrogate_is_422_and_leaves_the_memory(
    client: SyncASGIClient,
) -> None:
    made = client.post(f"{API}/memories", json={"summary": "as it was"}).json()
    error = send(client, "PATCH", f"/memories/{made['id']}", f'{{"content": "{BAD}"}}')
    assert error["field"] == "content"
    assert client.get(f"{API}/memories/{made['id']}").json()["content"] == ""


def test_contexts_refuse_a_lone_surrogate_naming_the_field(client: SyncASGIClient) -> None:
    answer = client.request(
        "POST",
        "/api/v1/contexts",
        content=f'{{"name": "c", "description": "{BAD}"}}'.encode(),
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "description"
    names = [c["name"] for c in client.get("/api/v1/contexts").json()["items"]]
    assert names == ["default"]


def test_a_value_at_the_depth_limit_is_stored_and_read_back(client: SyncASGIClient) -> None:
    value = json.loads(deep(32))
    assert client.put(f"{API}/state/k", json={"value": value}).status_code == 200
    assert client.get(f"{API}/state/k").json()["value"] == value


def test_an_over_deep_value_stored_before_the_limit_is_served_as_its_json_text(
    client: SyncASGIClient, runtime: Runtime
) -> None:
    # A row as an older server wrote it: reading it (or listing the context) used to be a 500.
    context = client.get(f"{API}").json()["id"]
    workspace = runtime.local_principal("rest").workspace_id
    now = datetime.now(UTC)
    runtime.store.set_state(workspace, context, "old", deep(255), None, now)
    got = client.get(f"{API}/state/old")
    # Its JSON text, as the backend keeps it (PostgreSQL's jsonb respaces it).
    assert got.status_code == 200 and json.loads(got.json()["value"]) == json.loads(deep(255))
    listed = client.get(f"{API}/state")
    assert listed.status_code == 200
    assert json.loads(listed.json()["items"][0]["value"]) == json.loads(deep(255))
