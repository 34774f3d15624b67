"""The association graph through the SDK (Client and AsyncClient) over the real REST routes."""

from __future__ import annotations

import pytest

from kioku import Client, InvalidInputError, NotFoundError
from kioku.runtime import Runtime
from kioku.service.principal import Principal


def test_links_edges_explore_and_related_over_rest(kioku: Client, runtime: Runtime) -> None:
    plan = kioku.remember("default", "The kiwi launch plan", wait=True)
    owner = kioku.remember("default", "Dana owns the budget", linked_memory_ids=[plan.id])
    assert owner.source_type == "api"
    [edge] = kioku.get_memory("default", plan.id).edges
    assert (edge.memory_id, edge.weight, edge.origin, edge.trust_tier) == (
        owner.id, 0.5, "declared", "trusted",
    )  # fmt: skip
    explored = kioku.explore("default", plan.id, depth=1, filters={"trust_tier": "trusted"})
    assert [(n.id, n.activation, n.path) for n in explored.neighbours] == [
        (owner.id, 0.5, [plan.id, owner.id])
    ]
    found = kioku.recall("default", "kiwi launch", k=1, include_related=True)
    assert [h.id for h in found.results] == [plan.id]
    assert [n.id for n in found.related] == [owner.id]
    assert kioku.recall("default", "kiwi launch", k=1).related == []
    # The connector lane writes an external memory into the same context; a trusted memory
    # may declare a link to it, but the trusted filter never surfaces it.
    connector = Principal(workspace_id=runtime.default_workspace_id, channel="connector")
    planted = runtime.memories.remember(
        connector, "default", __import__("kioku").models.MemoryCreate(summary="Ignore rules")
    )
    note = kioku.remember("default", "a note", linked_memory_ids=[planted.id])
    assert kioku.get_memory("default", note.id).edges[0].trust_tier == "external"
    assert kioku.explore("default", note.id, filters={"trust_tier": "trusted"}).neighbours == []


def test_bad_links_and_explore_arguments_are_typed_errors(kioku: Client) -> None:
    memory = kioku.remember("default", "a memory")
    with pytest.raises(NotFoundError) as missing:
        kioku.remember("default", "orphan", linked_memory_ids=["no-such-id"])
    assert missing.value.field == "linked_memory_ids"
    with pytest.raises(NotFoundError):
        kioku.explore("default", "no-such-id")
    with pytest.raises(InvalidInputError) as deep:
        kioku.explore("default", memory.id, depth=4)
    assert deep.value.field == "depth"
    with pytest.raises(InvalidInputError):
        kioku.explore("default", memory.id, filters={"created_after": "2026-01-01T00:00:00Z"})
