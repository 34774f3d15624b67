"""``POST /contexts/{id}/ingest`` on a server that requires keys: a connector key stamps
``connector`` on every write, idempotency keys replay, deletes forget, bad or oversized
batches write nothing, and a connector key can do nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kioku import Client, ForbiddenError
from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.models import ContextCreate, KeyCreate
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from tests.conftest import ManualClock, SyncASGIClient, make_settings, portal_client

API = "/api/v1"


@dataclass
class Server:
    runtime: Runtime
    client: SyncASGIClient
    owner: Principal
    keys: dict[str, str]

    def ingest(self, who: str, context: str, body: Any, key: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {self.keys[who]}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        return self.client.post(f"{API}/contexts/{context}/ingest", json=body, headers=headers)

    def owner_context_id(self, name: str) -> str:
        return self.runtime.contexts.resolve(self.owner, name).id

    def memories(self, context: str) -> list[dict[str, Any]]:
        return [
            m.model_dump(mode="json")
            for m in self.runtime.memories.list_memories(self.owner, context, limit=200).items
        ]


@pytest.fixture
def server(tmp_path: Path, clock: ManualClock) -> Iterator[Server]:
    settings = make_settings(tmp_path, dev=False, rate_limit_per_minute=0)
    runtime = open_runtime(settings, embedder=FakeEmbedder(), clock=clock)
    try:
        owner = Principal(workspace_id=runtime.default_workspace_id, role="owner", channel="cli")
        runtime.contexts.create_context(owner, ContextCreate(name="wiki", trust_tier="external"))
        runtime.contexts.create_context(owner, ContextCreate(name="notes"))
        keys = {
            "connector": runtime.keys.create_key(
                owner, KeyCreate(name="wiki-sync", role="connector", context_ids=["wiki"])
            ).key,
            "member": runtime.keys.create_key(owner, KeyCreate(name="agent", role="member")).key,
            "admin": runtime.keys.create_key(owner, KeyCreate(name="ops", role="admin")).key,
        }
        other = runtime.store.ensure_workspace("tenant-b")
        b_owner = Principal(workspace_id=other.id, role="owner", channel="cli")
        runtime.contexts.create_context(b_owner, ContextCreate(name="wiki"))
        keys["B"] = runtime.keys.create_key(b_owner, KeyCreate(name="b", role="owner")).key
        with portal_client(create_app(runtime=runtime)) as client:
            yield Server(runtime, client, owner, keys)
    finally:
        runtime.close()


def upsert(external_id: str, summary: str, **fields: Any) -> dict[str, Any]:
    return {"op": "upsert", "external_id": external_id, "summary": summary, **fields}


def test_a_connector_key_stamps_connector_on_every_write(server: Server) -> None:
    body = {"ops": [upsert("page-1", "Onboarding checklist", content="Get a laptop", tags=["hr"])]}
    answer = server.ingest("connector", "wiki", body)
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["created"] == 1
    assert result["results"][0] == {
        "index": 0, "op": "upsert", "external_id": "page-1", "status": "created",
        "memory_id": result["results"][0]["memory_id"],
    }  # fmt: skip
    [memory] = server.memories("wiki")
    assert (memory["source_type"], memory["trust_tier"]) == ("connector", "external")
    assert memory["external_id"] == "page-1" and memory["tags"] == ["hr"]
    # An admin running a worker by hand is a connector too: ingest stamps its own channel.
    server.ingest("admin", "notes", {"ops": [upsert("n-1", "A note from a crawler")]})
    [note] = server.memories("notes")
    assert (note["source_type"], note["trust_tier"]) == ("connector", "external")


def test_the_same_idempotency_key_replays_the_first_answer_and_writes_nothing(
    server: Server,
) -> None:
    body = {"ops": [upsert("p1", "First page"), upsert("p2", "Second page")]}
    first = server.ingest("connector", "wiki", body, key="batch-0001")
    before = server.memories("wiki")
    replay = server.ingest("connector", "wiki", body, key="batch-0001")
    assert replay.status_code == 200 and replay.json() == first.json()
    assert server.memories("wiki") == before
    # Without the key the same ops are still idempotent by external id, and say so.
    again = server.ingest("connector", "wiki", body).json()
    assert [r["status"] for r in again["results"]] == ["unchanged", "unchanged"]
    assert server.memories("wiki") == before
    # The key names one request: another body under it is a conflict, and writes nothing.
    other = {"ops": [upsert("p3", "Third page")]}
    clash = server.ingest("connector", "wiki", other, key="batch-0001")
    assert clash.status_code == 409 and clash.json()["error"]["field"] == "Idempotency-Key"
    assert server.memories("wiki") == before


def test_upsert_updates_in_place_and_delete_forgets(server: Server) -> None:
    made = server.ingest("connector", "wiki", {"ops": [upsert("p1", "Deploys on Fridays")]})
    memory_id = made.json()["results"][0]["memory_id"]
    changed = server.ingest(
        "connector", "wiki", {"ops": [upsert("p1", "Deploys on Thursdays"), upsert("p2", "New")]}
    ).json()
    assert [(r["status"], r["external_id"]) for r in changed["results"]] == [
        ("updated", "p1"),
        ("created", "p2"),
    ]
    assert changed["results"][0]["memory_id"] == memory_id
    stored = server.runtime.memories.get_memory(server.owner, "wiki", memory_id)
    assert stored.summary == "Deploys on Thursdays" and stored.embedding_status == "ready"
    gone = server.ingest(
        "connector",
        "wiki",
        {"ops": [{"op": "delete", "external_id": "p1"}, {"op": "delete", "external_id": "p9"}]},
    ).json()
    assert [r["status"] for r in gone["results"]] == ["deleted", "absent"]
    assert [m["external_id"] for m in server.memories("wiki")] == ["p2"]
    # The external id is free again: upserting it makes a new memory.
    back = server.ingest("connector", "wiki", {"ops": [upsert("p1", "Deploys on Mondays")]})
    assert back.json()["results"][0]["status"] == "created"
    assert back.json()["results"][0]["memory_id"] != memory_id


def test_a_bad_or_oversized_batch_writes_nothing(server: Server) -> None:
    too_many = {"ops": [upsert(f"p{i}", f"page {i}") for i in range(101)]}
    answer = server.ingest("connector", "wiki", too_many)
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "ops"
    bad = {"ops": [upsert("p1", "fine"), upsert("p2", "   "), upsert("p3", "fine too")]}
    answer = server.ingest("connector", "wiki", bad)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "ops[1].summary"
    for body, field in (
        ({"ops": [upsert("p1", "a"), upsert("p1", "b")]}, "ops[1].external_id"),
        ({"ops": [{"op": "rename", "external_id": "p1"}]}, "ops[0].op"),
        ({"ops": [upsert("p1", "a", source_type="manual")]}, "ops[0].source_type"),
        ({"ops": [upsert("p1", "a", delivery_mode="always")]}, "ops[0].delivery_mode"),
        ({"ops": [upsert("", "a")]}, "ops[0].external_id"),
    ):
        answer = server.ingest("connector", "wiki", body)
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["field"] == field
    big = {"ops": [upsert("p1", "fine"), upsert("p2", "big", content="x" * ((1 << 20) + 1))]}
    answer = server.ingest("admin", "wiki", big)
    assert answer.status_code == 413, answer.text
    assert server.memories("wiki") == []


def test_a_connector_key_can_only_ingest_into_its_contexts(server: Server) -> None:
    body = {"ops": [upsert("p1", "x")]}
    # Outside its allow-list a context does not exist for it; another tenant's neither.
    assert server.ingest("connector", "notes", body).status_code == 404
    b_wiki = server.runtime.store.get_context_by_name(
        server.runtime.store.ensure_workspace("tenant-b").id, "wiki"
    )
    assert b_wiki is not None
    assert server.ingest("connector", b_wiki.id, body).status_code == 404
    assert server.ingest("B", server.owner_context_id("wiki"), body).status_code == 404
    # A member (an agent) writes with remember, not ingest.
    assert server.ingest("member", "wiki", body).status_code == 403
    with Client(app=create_app(runtime=server.runtime), api_key=server.keys["connector"]) as sdk:
        with pytest.raises(ForbiddenError):
            sdk.recall("wiki", "anything")
        with pytest.raises(ForbiddenError):
            sdk.remember("wiki", "a connector key cannot remember")
        result = sdk.ingest("wiki", [upsert("p1", "Through the SDK")], idempotency_key="k1")
        assert result.created == 1
        assert sdk.ingest("wiki", [upsert("p1", "Through the SDK")], idempotency_key="k1") == (
            result
        )
    assert [m["summary"] for m in server.memories("wiki")] == ["Through the SDK"]
    audit = server.runtime.audit.list_audit(server.owner).items
    lines = [(e.action, e.outcome, e.channel) for e in audit]
    assert ("ingest", "ok", "connector") in lines
