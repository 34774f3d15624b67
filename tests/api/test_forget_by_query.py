"""``POST /contexts/{id}/memories/forget`` (forget_by_query) over REST: statuses and bodies."""

from __future__ import annotations

from typing import Any

from tests.conftest import SyncASGIClient

API = "/api/v1"
URL = f"{API}/contexts/default/memories/forget"


def remember(client: SyncASGIClient, summary: str, **kw: Any) -> str:
    response = client.post(f"{API}/contexts/default/memories", json={"summary": summary, **kw})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def live(client: SyncASGIClient) -> set[str]:
    return {m["id"] for m in client.get(f"{API}/contexts/default/memories").json()["items"]}


def test_preview_then_confirm_over_rest(client: SyncASGIClient) -> None:
    old = remember(client, "Old staging URL is staging.example.com", tags=["infra"])
    keep = remember(client, "Production URL is example.com")
    body = {"query": "staging URL", "filters": {"tags": ["infra"]}}
    preview = client.post(URL, json=body)
    assert preview.status_code == 200, preview.text
    shown = preview.json()
    assert shown["status"] == "preview" and shown["count"] == 1 and not shown["truncated"]
    assert shown["matches"][0]["id"] == old and "content" not in shown["matches"][0]
    assert live(client) == {old, keep}
    done = client.post(URL, json={**body, "confirmation": shown["confirmation"]})
    assert done.status_code == 200 and done.json()["forgotten_ids"] == [old]
    assert live(client) == {keep}
    replay = client.post(URL, json={**body, "confirmation": shown["confirmation"]})
    assert replay.status_code == 409  # the set it confirmed is gone: nothing matches now


def test_a_changed_match_is_409_naming_the_confirmation(client: SyncASGIClient) -> None:
    remember(client, "Team dinner on Friday at 7")
    body = {"query": "team dinner"}
    token = client.post(URL, json=body).json()["confirmation"]
    remember(client, "Team dinner moved to the Italian place")
    refused = client.post(URL, json={**body, "confirmation": token})
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "conflict" and error["field"] == "confirmation"
    assert "preview again" in error["message"]
    assert len(live(client)) == 2


def test_malformed_input_is_422_naming_the_field(client: SyncASGIClient) -> None:
    remember(client, "Something to keep")
    cases = [
        ({"query": "something", "confirmation": "yes please"}, "confirmation"),
        ({"query": "something", "k": 101}, "k"),
        ({"query": "   "}, "query"),
        ({}, "query"),
        ({"query": "something", "filters": {"include_deleted": True}}, "filters.include_deleted"),
        ({"query": "something", "memory_ids": ["x"]}, "memory_ids"),
    ]
    for body, field in cases:
        answer = client.post(URL, json=body)
        assert answer.status_code == 422, (body, answer.text)
        assert answer.json()["error"]["field"] == field, body
    assert len(live(client)) == 1


def test_the_route_declares_its_errors_with_the_error_schema(client: SyncASGIClient) -> None:
    spec = client.get("/openapi.json").json()
    route = spec["paths"]["/api/v1/contexts/{context_id}/memories/forget"]["post"]
    assert route["operationId"] == "forget_by_query"
    for status in ("403", "404", "409", "422"):
        schema = route["responses"][status]["content"]["application/json"]["schema"]
        assert schema["$ref"].endswith("/ErrorBody"), status
