"""REST in-process through httpx's ASGITransport: status codes, bodies, error shapes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kioku.runtime import Runtime
from kioku.service.principal import Principal
from tests.conftest import SyncASGIClient

API = "/api/v1"


def remember(client: SyncASGIClient, summary: str, context: str = "default", **kw: object) -> dict:
    response = client.post(f"{API}/contexts/{context}/memories", json={"summary": summary, **kw})
    assert response.status_code == 201, response.text
    return response.json()


def test_health(client: SyncASGIClient) -> None:
    for path in ("/health", f"{API}/health"):
        body = client.get(path).json()
        assert body["status"] == "ok" and body["database"] == "sqlite"


def test_context_crud_by_id_and_name(client: SyncASGIClient) -> None:
    created = client.post(f"{API}/contexts", json={"name": "project-x", "description": "d"})
    assert created.status_code == 201
    ctx = created.json()
    assert client.get(f"{API}/contexts/{ctx['id']}").json()["name"] == "project-x"
    assert client.get(f"{API}/contexts/project-x").json()["id"] == ctx["id"]
    patched = client.patch(f"{API}/contexts/project-x", json={"description": "new"})
    assert patched.json()["description"] == "new"
    names = [c["name"] for c in client.get(f"{API}/contexts").json()["items"]]
    assert names == ["default", "project-x"]
    assert client.delete(f"{API}/contexts/project-x").status_code == 204
    assert client.get(f"{API}/contexts/project-x").status_code == 404


def test_duplicate_context_name_is_409(client: SyncASGIClient) -> None:
    assert client.post(f"{API}/contexts", json={"name": "a"}).status_code == 201
    response = client.post(f"{API}/contexts", json={"name": "a"})
    assert response.status_code == 409 and response.json()["error"]["field"] == "name"


def test_remember_get_update_recall_forget(client: SyncASGIClient) -> None:
    memory = remember(client, "The staging database is on port 5433", tags=["infra"])
    assert memory["source_type"] == "api" and memory["trust_tier"] == "trusted"
    url = f"{API}/contexts/default/memories/{memory['id']}"
    assert client.get(url).json()["summary"] == memory["summary"]
    updated = client.patch(url, json={"importance": 0.8})
    assert updated.status_code == 200 and updated.json()["importance"] == 0.8
    found = client.post(f"{API}/contexts/default/recall", json={"query": "staging database port"})
    assert found.status_code == 200
    body = found.json()
    assert body["results"][0]["id"] == memory["id"]
    assert set(body["results"][0]["score_breakdown"]) >= {"lexical", "vector", "fused", "rerank"}
    assert body["confidence"] in {"high", "moderate", "low"}
    assert client.delete(url).status_code == 204
    assert client.get(url).status_code == 404
    assert client.get(url, params={"include_deleted": True}).status_code == 200
    assert client.delete(url, params={"purge": True}).status_code == 204
    assert client.get(url, params={"include_deleted": True}).status_code == 404


def test_batch_and_list_pagination(client: SyncASGIClient) -> None:
    items = [{"summary": f"note {i}"} for i in range(30)] + [{"summary": ""}]
    response = client.post(f"{API}/contexts/default/memories/batch", json={"items": items})
    assert response.status_code == 200
    body = response.json()
    assert (body["created"], body["failed"]) == (30, 1)
    assert body["results"][30]["error"]["field"] == "items[30].summary"
    seen = []
    params: dict[str, object] = {"limit": 7}
    while True:
        page = client.get(f"{API}/contexts/default/memories", params=params).json()
        seen += [m["summary"] for m in page["items"]]
        if not page["next_cursor"]:
            break
        params["cursor"] = page["next_cursor"]
    assert seen == [f"note {i}" for i in reversed(range(30))]


BAD_MEMORIES = [
    ({}, 422, "summary"),
    ({"summary": ""}, 422, "summary"),
    ({"summary": "   "}, 422, "summary"),
    ({"summary": "x" * 501}, 422, "summary"),
    ({"summary": 42}, 422, "summary"),
    ({"summary": "ok", "delivery_mode": "sometimes"}, 422, "delivery_mode"),
    ({"summary": "ok", "importance": 2}, 422, "importance"),
    ({"summary": "ok", "importance": "high"}, 422, "importance"),
    ({"summary": "ok", "tags": "not-a-list"}, 422, "tags"),
    ({"summary": "ok", "tags": [""]}, 422, "tags[0]"),
    ({"summary": "ok", "delivery_mode": "on_trigger"}, 422, "trigger_from"),
    ({"summary": "ok", "trigger_from": "2026-01-01T00:00:00Z"}, 422, "trigger_from"),
    ({"summary": "ok", "trigger_until": "2026-01-01T00:00:00Z"}, 422, "trigger_until"),
    (
        {
            "summary": "ok",
            "delivery_mode": "on_trigger",
            "trigger_from": "2026-01-02T00:00:00Z",
            "trigger_until": "2026-01-01T00:00:00Z",
        },
        422,
        "trigger_until",
    ),
    (
        {"summary": "ok", "delivery_mode": "on_trigger", "trigger_from": "2026-01-01T00:00:00"},
        422,
        "trigger_from",
    ),
    ({"summary": "ok", "source_type": "manual"}, 422, "source_type"),
    ({"summary": "ok", "trust_tier": "trusted"}, 422, "trust_tier"),
    ({"summary": "ok", "colour": "blue"}, 422, "colour"),
]


@pytest.mark.parametrize(("body", "status", "field"), BAD_MEMORIES)
def test_bad_memory_input_is_a_clear_4xx_and_writes_nothing(
    client: SyncASGIClient, body: dict, status: int, field: str
) -> None:
    response = client.post(f"{API}/contexts/default/memories", json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_input" and error["message"]
    assert error["field"] == field
    assert client.get(f"{API}/contexts/default/memories").json()["items"] == []


def test_client_cannot_choose_provenance(client: SyncASGIClient) -> None:
    response = client.post(
        f"{API}/contexts/default/memories", json={"summary": "x", "source_type": "sleep"}
    )
    assert response.status_code == 422
    assert "stamped by the server" in response.json()["error"]["message"]
    assert response.json()["error"]["field"] == "source_type"
    batch = client.post(
        f"{API}/contexts/default/memories/batch",
        json={
            "items": [{"summary": "ok"}, {"summary": "x", "trust_tier": "trusted"}],
            "atomic": True,
        },
    )
    assert batch.status_code == 422, batch.text
    assert batch.json()["error"]["field"] == "items[1].trust_tier"
    assert client.get(f"{API}/contexts/default/memories").json()["items"] == []


def test_oversized_content_is_413_naming_content(client: SyncASGIClient, runtime: Runtime) -> None:
    content = "x" * (runtime.settings.limits.max_content_bytes + 1)
    response = client.post(
        f"{API}/contexts/default/memories", json={"summary": "big", "content": content}
    )
    assert response.status_code == 413 and response.json()["error"]["field"] == "content"


def test_oversized_request_body_is_413(client: SyncASGIClient, runtime: Runtime) -> None:
    blob = "x" * (runtime.settings.limits.max_request_bytes + 10)
    response = client.post(
        f"{API}/contexts/default/memories",
        content=blob.encode(),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413


def test_oversized_chunked_body_without_length_is_413(
    client: SyncASGIClient, runtime: Runtime
) -> None:
    chunk = b"x" * 65536
    rounds = runtime.settings.limits.max_request_bytes // len(chunk) + 2

    async def body() -> AsyncIterator[bytes]:  # a generator: httpx sends it chunked
        for _ in range(rounds):
            yield chunk

    response = client.post(
        f"{API}/contexts/default/memories",
        content=body(),
        headers={"content-type": "application/json"},
    )
    assert response.request.headers.get("content-length") is None
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_atomic_batch_with_a_bad_item_is_422_and_writes_nothing(client: SyncASGIClient) -> None:
    items = [{"summary": "fine"}, {"summary": "bad", "importance": -1}]
    response = client.post(
        f"{API}/contexts/default/memories/batch", json={"items": items, "atomic": True}
    )
    assert response.status_code == 422
    assert response.json()["error"]["field"] == "items[1].importance"
    assert client.get(f"{API}/contexts/default/memories").json()["items"] == []


@pytest.mark.parametrize("size", [0, 101])
def test_batch_size_is_bounded(client: SyncASGIClient, size: int) -> None:
    items = [{"summary": "x"}] * size
    response = client.post(f"{API}/contexts/default/memories/batch", json={"items": items})
    assert response.status_code == 422 and response.json()["error"]["field"] == "items"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "x", "k": 0}, "k"),
        ({"query": "x", "k": 101}, "k"),
        ({"query": "x", "filters": {"trust_tier": "kinda"}}, "filters.trust_tier"),
        ({"query": "x", "filters": {"bogus": 1}}, "filters.bogus"),
        ({"query": "x", "filters": {"created_after": "yesterday"}}, "filters.created_after"),
    ],
)
def test_bad_recall_input_is_422_naming_the_field(
    client: SyncASGIClient, body: dict, field: str
) -> None:
    response = client.post(f"{API}/contexts/default/recall", json=body)
    assert response.status_code == 422 and response.json()["error"]["field"] == field


@pytest.mark.parametrize("name", ["Upper", "-dash", "a" * 65, "", "has space", "é"])
def test_bad_context_names_are_422(client: SyncASGIClient, name: str) -> None:
    response = client.post(f"{API}/contexts", json={"name": name})
    assert response.status_code == 422 and response.json()["error"]["field"] == "name"


def test_unknown_ids_are_404(client: SyncASGIClient) -> None:
    ghost = "00000000-0000-4000-8000-000000000000"
    assert client.get(f"{API}/contexts/{ghost}").status_code == 404
    assert client.get(f"{API}/contexts/nope/memories").status_code == 404
    assert client.get(f"{API}/contexts/default/memories/{ghost}").status_code == 404
    assert (
        client.patch(f"{API}/contexts/default/memories/{ghost}", json={"summary": "x"}).status_code
        == 404
    )
    assert client.delete(f"{API}/contexts/default/memories/{ghost}").status_code == 404
    assert client.post(f"{API}/contexts/nope/recall", json={"query": "x"}).status_code == 404


def test_another_workspaces_ids_are_404(
    client: SyncASGIClient, runtime: Runtime, other_principal: Principal
) -> None:
    from kioku.models import ContextCreate, MemoryCreate

    theirs = runtime.contexts.create_context(other_principal, ContextCreate(name="theirs"))
    secret = runtime.memories.remember(other_principal, "theirs", MemoryCreate(summary="secret"))
    mine = remember(client, "mine")
    ctx_url = f"{API}/contexts/{theirs.id}"
    assert client.get(ctx_url).status_code == 404
    assert client.get(f"{API}/contexts/theirs").status_code == 404
    assert client.get(f"{ctx_url}/memories/{secret.id}").status_code == 404
    assert client.get(f"{API}/contexts/default/memories/{secret.id}").status_code == 404
    assert client.delete(f"{API}/contexts/default/memories/{secret.id}").status_code == 404
    assert client.post(f"{ctx_url}/recall", json={"query": "secret"}).status_code == 404
    recall = client.post(
        f"{API}/contexts/default/recall",
        json={"query": "secret", "filters": {"context_ids": [theirs.id]}},
    )
    assert recall.status_code == 404
    assert mine["id"] != secret.id
    assert runtime.memories.get_memory(other_principal, "theirs", secret.id).summary == "secret"


def test_openapi_names_every_operation_like_the_service() -> None:
    from kioku.api import create_app

    spec = create_app().openapi()
    operation_ids = {op["operationId"] for path in spec["paths"].values() for op in path.values()}
    assert operation_ids >= {
        "create_context", "list_contexts", "get_context", "update_context", "delete_context",
        "remember", "remember_batch", "list_memories", "get_memory", "update_memory",
        "forget", "recall", "health",
    }  # fmt: skip


@pytest.mark.parametrize(
    "raw",
    [b"{", b"[]", b"null", b'{"summary": "\\ud800"}', '{"summary": "\u0000"}'.encode()],
)
def test_malformed_json_is_4xx_never_500(client: SyncASGIClient, raw: bytes) -> None:
    response = client.post(
        f"{API}/contexts/default/memories",
        content=raw,
        headers={"content-type": "application/json"},
    )
    assert 400 <= response.status_code < 500 or response.status_code == 201, response.text


GARBAGE = [[], "text", 42, None, {"items": "x"}, {"query": ["a"]}, {"summary": {"a": 1}},
           {"name": None}, {"filters": []}, {"k": "5", "query": 1}]  # fmt: skip


@pytest.mark.parametrize("body", GARBAGE)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/contexts"),
        ("PATCH", "/contexts/default"),
        ("POST", "/contexts/default/memories"),
        ("POST", "/contexts/default/memories/batch"),
        ("POST", "/contexts/default/recall"),
        ("PATCH", "/contexts/default/memories/00000000-0000-4000-8000-000000000000"),
    ],
)
def test_garbage_bodies_get_a_4xx_on_every_write_route(
    client: SyncASGIClient, method: str, path: str, body: object
) -> None:
    response = client.request(method, f"{API}{path}", json=body)
    assert 400 <= response.status_code < 500, response.text
    assert response.json()["error"]["code"]


@pytest.mark.parametrize(
    "query",
    ['"', "AND OR NOT", "NEAR(a b)", "*", "col:value", "^start", "()", "🙂", "\u3000", "a" * 4000],
)
def test_query_syntax_never_reaches_fts5_as_syntax(client: SyncASGIClient, query: str) -> None:
    remember(client, "AND OR NOT are words here, like NEAR and col:value")
    response = client.post(f"{API}/contexts/default/recall", json={"query": query})
    assert response.status_code in (200, 422), response.text


def test_pinned_and_upcoming_over_rest(client: SyncASGIClient) -> None:
    remember(client, "always answer in English", delivery_mode="always", importance=0.9)
    remember(
        client, "release freeze", delivery_mode="on_trigger",
        trigger_from="2999-01-01T00:00:00Z", trigger_until="2999-01-08T00:00:00Z",
    )  # fmt: skip
    pinned = client.get(f"{API}/contexts/default/pinned", params={"cap": 5}).json()
    assert [i["lane"] for i in pinned["items"]] == ["pinned"]
    assert pinned["truncated"] is False and pinned["total_available"] == 1
    window = {"from": "2998-12-31T00:00:00Z", "until": "2999-01-02T00:00:00+09:00"}
    upcoming = client.get(f"{API}/contexts/default/upcoming", params=window).json()
    assert [m["summary"] for m in upcoming["items"]] == ["release freeze"]
    assert set(upcoming) >= {"from", "until", "truncated", "total_available"}
    naive = client.get(f"{API}/contexts/default/upcoming", params={"from": "2999-01-01T00:00:00"})
    assert naive.status_code == 422 and naive.json()["error"]["field"] == "from"
    assert client.get(f"{API}/contexts/default/pinned", params={"cap": "x"}).status_code == 422
    assert client.get(f"{API}/contexts/nope/pinned").status_code == 404


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"delivery_mode": "on_trigger"}, "trigger_from"),
        ({"trigger_until": "2026-01-01T00:00:00Z"}, "trigger_until"),
        (
            {
                "delivery_mode": "on_trigger",
                "trigger_from": "2026-01-02T00:00:00Z",
                "trigger_until": "2026-01-01T00:00:00Z",
            },
            "trigger_until",
        ),
    ],
)
def test_a_broken_trigger_window_in_an_update_names_the_field_to_fix(
    client: SyncASGIClient, change: dict, field: str
) -> None:
    made = client.post(f"{API}/contexts/default/memories", json={"summary": "x"}).json()
    answer = client.patch(f"{API}/contexts/default/memories/{made['id']}", json=change)
    assert answer.status_code == 422 and answer.json()["error"]["field"] == field, answer.text
