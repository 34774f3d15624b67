"""The graph on MCP: remember(linked_memory_ids), explore, recall(include_related)."""

from __future__ import annotations

from mcp import Client

from kioku.mcp import build_mcp
from kioku.runtime import Runtime
from tests.mcp.test_tools import call, drive, fail


def test_link_explore_and_related_as_tools(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        plan = (await call(client, "remember", {"summary": "The kiwi launch plan"}))["memory_id"]
        owner = await call(
            client, "remember", {"summary": "Dana owns the budget", "linked_memory_ids": [plan]}
        )
        explored = await call(
            client, "explore", {"memory_id": plan, "filters": {"trust_tier": "trusted"}}
        )
        [neighbour] = explored["neighbours"]
        assert neighbour["memory_id"] == owner["memory_id"]
        assert neighbour["activation"] == 0.5 and neighbour["path"] == [plan, owner["memory_id"]]
        query = {"query": "kiwi launch", "k": 1}
        found = await call(client, "recall", {**query, "include_related": True})
        assert [n["memory_id"] for n in found["related"]] == [owner["memory_id"]]
        plain = await call(client, "recall", query)
        assert "related" not in plain
        detail = await call(client, "get_memory", {"memory_id": plan})
        assert detail["edges"] == [
            {"memory_id": owner["memory_id"], "weight": 0.5, "origin": "declared",
             "trust_tier": "trusted"}
        ]  # fmt: skip
        message = await fail(client, "explore", {"memory_id": "no-such-id"})
        assert "not_found (memory_id)" in message
        message = await fail(client, "remember", {"summary": "x", "linked_memory_ids": ["nope"]})
        assert "not_found (linked_memory_ids)" in message

    drive(build_mcp(runtime), scenario)
