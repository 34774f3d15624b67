"""The MCP tools in-process (the SDK's own client against ``build_mcp``), on the fake embedder."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer

from kioku.mcp import build_mcp
from kioku.mcp.server import INSTRUCTIONS
from kioku.runtime import Runtime
from tests.conftest import ManualClock

TOOLS = {
    "remember", "remember_batch", "update_memory", "forget", "forget_by_query", "get_memory",
    "list_memories",
    "recall", "load_pinned", "upcoming", "feedback", "set_state", "get_state", "delete_state",
    "list_contexts", "create_context", "stats", "explore", "sleep",
}  # fmt: skip
# 12,000 for the first 18 tools; forget_by_query (two-step, its filters) costs ~1,400 more;
# ~550 is every schema saying additionalProperties: false (unknown arguments are refused).
TOOL_LIST_BUDGET = 15_000

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


def drive(server: MCPServer[Any], scenario: Callable[[Client], Awaitable[None]]) -> None:
    async def main() -> None:
        async with Client(server) as client:
            await scenario(client)

    anyio.run(main)


async def call(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    """Call a tool that must succeed; its text is compact JSON."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    assert ": " not in text or '": ' not in text  # compact separators
    return json.loads(text)


async def fail(client: Client, name: str, arguments: dict[str, Any]) -> str:
    """Call a tool that must fail; returns the message the model would read."""
    result = await client.call_tool(name, arguments)
    assert result.is_error
    return result.content[0].text  # type: ignore[union-attr]


def test_every_tool_is_listed_described_and_within_the_token_budget(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        listed = (await client.list_tools()).tools
        assert {tool.name for tool in listed} == TOOLS
        size = 0
        for tool in listed:
            assert tool.description and len(tool.description) > 40, tool.name
            assert tool.input_schema["type"] == "object"
            assert "title" not in json.dumps(tool.input_schema), tool.name
            size += len(json.dumps(tool.model_dump(mode="json", by_alias=True, exclude_none=True),
                                   ensure_ascii=False, separators=(",", ":")))  # fmt: skip
        assert size + len(INSTRUCTIONS) < TOOL_LIST_BUDGET, size
        said = docs_tool_list_size()
        assert said == (len(listed), size, len(INSTRUCTIONS), TOOL_LIST_BUDGET), (
            "docs/mcp.md's 'Size of the tool list' table must say what the server lists now: "
            f"{len(listed)} tools, {size:,}, {len(INSTRUCTIONS):,}, budget {TOOL_LIST_BUDGET:,}"
        )

    drive(build_mcp(runtime), scenario)


def docs_tool_list_size() -> tuple[int, int, int, int]:
    """What docs/mcp.md's size table says: tools, their characters, instructions, budget."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
    tools = re.search(r"\| tool list \((\d+) tools[^|]*\| ([\d,]+) \|", text)
    instructions = re.search(r"\| server instructions \| ([\d,]+) \|", text)
    budget = re.search(r"\*\*total\*\* \| \*\*[\d,]+\*\* \(budget ([\d,]+)", text)
    assert tools and instructions and budget, "docs/mcp.md lost its size table"
    number = lambda found: int(found.replace(",", ""))  # noqa: E731
    return (int(tools.group(1)), number(tools.group(2)), number(instructions.group(1)),
            number(budget.group(1)))  # fmt: skip


def test_recall_with_min_confidence_withholds_a_weak_set(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        await call(client, "remember", {"summary": "The office wifi password rotates monthly"})
        await call(client, "remember", {"summary": "Lunch is at noon"})
        weak = await call(
            client, "recall", {"query": "password of the beach house", "min_confidence": "moderate"}
        )
        assert weak["results"] == [] and weak["withheld"] == 2
        assert weak["confidence"] in {"low", "none"}
        sure = await call(
            client, "recall", {"query": "office wifi password", "min_confidence": "moderate"}
        )
        assert sure["results"] and "withheld" not in sure
        refused = await fail(client, "recall", {"query": "wifi", "min_confidence": "certain"})
        assert "min_confidence" in refused

    drive(build_mcp(runtime), scenario)


def test_tools_write_with_manual_provenance_and_read_compactly(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        stored = await call(
            client, "remember", {"summary": "Alice prefers green tea", "tags": ["people"]}
        )
        assert stored["source_type"] == "manual" and stored["trust_tier"] == "trusted"
        found = await call(client, "recall", {"query": "what does Alice drink?"})
        (hit,) = [h for h in found["results"] if h["memory_id"] == stored["memory_id"]]
        assert hit["summary"] == "Alice prefers green tea" and "score" in hit
        assert "workspace_id" not in hit and "score_breakdown" not in hit
        explained = await call(client, "recall", {"query": "green tea", "explain": True})
        assert "fused" in explained["results"][0]["score_breakdown"]
        full = await call(client, "get_memory", {"memory_id": stored["memory_id"]})
        assert full["tags"] == ["people"]
        updated = await call(
            client, "update_memory", {"memory_id": stored["memory_id"], "delivery_mode": "always"}
        )
        assert updated["delivery_mode"] == "always"
        pinned = await call(client, "load_pinned", {"filters": {"trust_tier": "trusted"}})
        assert [item["lane"] for item in pinned["items"]] == ["pinned"]
        listed = await call(client, "list_memories", {"filters": {"type": "note"}})
        assert [item["memory_id"] for item in listed["items"]] == [stored["memory_id"]]
        assert await call(client, "forget", {"memory_id": stored["memory_id"]}) == {
            "forgotten": stored["memory_id"]
        }
        assert (await call(client, "load_pinned", {}))["items"] == []

    drive(build_mcp(runtime), scenario)


def test_state_feedback_contexts_and_stats(runtime: Runtime, clock: ManualClock) -> None:
    async def scenario(client: Client) -> None:
        made = await call(client, "create_context", {"name": "slack", "trust_tier": "external"})
        names = [c["name"] for c in (await call(client, "list_contexts", {}))["items"]]
        assert names == ["default", "slack"] and made["name"] == "slack"
        saved = await call(client, "set_state", {"key": "ticket:1", "value": {"phase": "drafted"}})
        assert saved["expires_in_seconds"] == 86400
        forever = await call(client, "set_state", {"key": "pref", "value": 1, "ttl_seconds": None})
        assert forever["expires_in_seconds"] is None
        assert (await call(client, "get_state", {"key": "ticket:1"}))["value"] == {
            "phase": "drafted"
        }
        keys = [s["key"] for s in (await call(client, "get_state", {}))["items"]]
        assert keys == ["pref", "ticket:1"]
        clock.advance(days=2)
        assert "not found" in await fail(client, "get_state", {"key": "ticket:1"})
        assert await call(client, "delete_state", {"key": "pref"}) == {"deleted": "pref"}
        memory = await call(client, "remember", {"summary": "Deploys are on Fridays"})
        event = await call(client, "feedback", {"memory_id": memory["memory_id"], "helpful": True})
        assert event["feedback_id"]
        counts = await call(client, "stats", {})
        assert counts["memories"] == 1 and counts["feedback"] == {"helpful": 1, "unhelpful": 0}
        batch = await call(client, "remember_batch", {"items": [{"summary": "a"}, {"summary": ""}]})
        assert (batch["created"], batch["failed"]) == (1, 1)
        due = (clock.now + timedelta(days=1)).isoformat()
        await call(
            client,
            "remember",
            {"summary": "Quarter close", "delivery_mode": "on_trigger", "trigger_from": due},
        )
        soon = await call(client, "upcoming", {})
        assert [item["summary"] for item in soon["items"]] == ["Quarter close"]
        later = {"start": (clock.now + timedelta(days=9)).isoformat()}
        assert (await call(client, "upcoming", later))["items"] == soon["items"]  # open-ended

    drive(build_mcp(runtime), scenario)


def test_errors_are_tool_errors_that_name_the_field(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        missing = await fail(client, "get_memory", {"memory_id": "nope"})
        assert "not_found (memory_id)" in missing
        assert "not_found (context_id)" in await fail(
            client, "recall", {"query": "x", "context_id": "elsewhere"}
        )
        assert "summary" in await fail(client, "remember", {"summary": "  "})
        assert "summary" in await fail(client, "remember", {"summary": "x" * 501})
        assert "source_type" in await fail(
            client, "recall", {"query": "x", "filters": {"source_type": "evil"}}
        )
        assert "payload_too_large (value)" in await fail(
            client, "set_state", {"key": "k", "value": "x" * 20_000}
        )
        assert "stamped by the server" in await fail(
            client,
            "remember_batch",
            {"items": [{"summary": "a", "trust_tier": "trusted"}], "atomic": True},
        )

    drive(build_mcp(runtime), scenario)


def test_sleep_tool_consolidates_and_answers_with_counts(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        for _ in range(2):
            await call(client, "remember", {"summary": "The staging database uses port 5433"})
        run = await call(client, "sleep", {})
        assert run["status"] == "done" and set(run["summary"]) == {"sweep", "edges"}
        report = runtime.sleep.sleep_report(runtime.local_principal("mcp"), run["run_id"])
        assert report.trigger == "manual"

    drive(build_mcp(runtime), scenario)


def test_forget_by_query_is_destructive_and_previews_before_it_forgets(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        (tool,) = [t for t in (await client.list_tools()).tools if t.name == "forget_by_query"]
        assert tool.annotations is not None and tool.annotations.destructive_hint is True
        assert (
            "preview" in (tool.description or "")
            and "confirmation" in tool.input_schema["properties"]
        )
        wrong = await call(client, "remember", {"summary": "Bob's birthday is 3 May"})
        await call(
            client, "remember", {"summary": "Bob's birthday rule", "delivery_mode": "always"}
        )
        preview = await call(client, "forget_by_query", {"query": "Bob birthday"})
        assert preview["status"] == "preview" and preview["pinned_kept"] == 1
        assert [m["memory_id"] for m in preview["matches"]] == [wrong["memory_id"]]
        kept = await call(client, "get_memory", {"memory_id": wrong["memory_id"]})
        assert kept["summary"] == "Bob's birthday is 3 May"  # a preview forgets nothing
        await call(client, "remember", {"summary": "Bob's birthday is 5 May, not 3 May"})
        stale = {"query": "Bob birthday", "confirmation": preview["confirmation"]}
        refused = await fail(client, "forget_by_query", stale)
        assert "conflict (confirmation)" in refused and "preview again" in refused
        fresh = await call(client, "forget_by_query", {"query": "Bob birthday"})
        confirm = {"query": "Bob birthday", "confirmation": fresh["confirmation"]}
        done = await call(client, "forget_by_query", confirm)
        assert done["status"] == "forgotten" and done["count"] == 2
        assert "confirmation" not in done
        left = await call(client, "list_memories", {})
        assert [m["summary"] for m in left["items"]] == ["Bob's birthday rule"]

    drive(build_mcp(runtime), scenario)


def test_a_listed_memory_leaves_out_what_the_call_said_and_the_defaults(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        plain = await call(client, "remember", {"summary": "Alice prefers green tea"})
        weighty = await call(client, "remember", {"summary": "Alice's tea is from Uji",
                                                  "importance": 0.9, "type": "fact"})  # fmt: skip
        whole = await call(client, "get_memory", {"memory_id": plain["memory_id"]})
        assert whole["context_id"] and whole["type"] == "note"  # a single memory: whole
        hits = {
            h["memory_id"]: h
            for h in (await call(client, "recall", {"query": "Alice tea"}))["results"]
        }
        first, second = hits[plain["memory_id"]], hits[weighty["memory_id"]]
        for hit in (first, second):
            assert "context_id" not in hit and "delivery_mode" not in hit
            assert (hit["source_type"], hit["trust_tier"]) == ("manual", "trusted")
        assert "type" not in first and "importance" not in first
        assert (second["type"], second["importance"]) == ("fact", 0.9)
        listed = (await call(client, "list_memories", {}))["items"]
        assert all("context_id" not in item for item in listed)

    drive(build_mcp(runtime), scenario)
