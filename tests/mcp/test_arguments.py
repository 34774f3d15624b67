"""Tool arguments are checked like a REST body (the SDK's own client against ``build_mcp``):
unknown ones refused by name on every tool, provenance refused, text that cannot be stored
refused naming the field, and nothing written by a refused call."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from kioku.mcp import build_mcp
from kioku.runtime import Runtime
from tests.mcp.test_tools import call, drive, fail

DEEP = 40  # over the documented limit of 32


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def placeholder(schema: dict[str, Any]) -> Any:
    """A value of the schema's type for a required argument (the call is refused before it
    is used: an unknown argument fails validation before the tool runs)."""
    kind = schema.get("type")
    return {"string": "x", "boolean": True, "integer": 1, "number": 1}.get(str(kind), 1)


async def counts(client: Client) -> tuple[int, int]:
    """Memories and state keys in the default context."""
    memories = await call(client, "list_memories", {"limit": 200})
    state = await call(client, "get_state", {})
    return len(memories["items"]), len(state["items"])


def test_every_listed_tool_refuses_an_unknown_argument_by_name(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        tools = (await client.list_tools()).tools
        assert len(tools) >= 19
        before = await counts(client)
        for tool in tools:
            schema = tool.input_schema
            assert schema.get("additionalProperties") is False, tool.name
            required = {
                name: placeholder(schema["properties"][name]) for name in schema.get("required", [])
            }
            text = await fail(client, tool.name, {**required, "not_an_argument": 1})
            assert text == (
                f"Error executing tool {tool.name}: invalid_input (not_an_argument): "
                "unknown argument(s) not_an_argument, not taken here"
            ), text
        assert await counts(client) == before

    drive(build_mcp(runtime), scenario)


def test_a_typo_in_an_argument_name_is_refused_not_replaced_by_the_default(
    runtime: Runtime,
) -> None:
    async def scenario(client: Client) -> None:
        text = await fail(client, "set_state", {"key": "k", "value": 1, "ttl": 5, "ttl_s": 6})
        assert "invalid_input (ttl, ttl_s): unknown argument(s) ttl, ttl_s" in text
        assert (await call(client, "get_state", {}))["items"] == []

    drive(build_mcp(runtime), scenario)


@pytest.mark.parametrize("name", ["source_type", "trust_tier"])
def test_remember_refuses_provenance_as_rest_does(runtime: Runtime, name: str) -> None:
    async def scenario(client: Client) -> None:
        text = await fail(client, "remember", {"summary": "x", name: "trusted"})
        assert f"invalid_input ({name}): {name} is stamped by the server" in text
        assert (await call(client, "list_memories", {}))["items"] == []

    drive(build_mcp(runtime), scenario)


BAD = "\udfff"
# An object key holding a surrogate cannot be sent by the SDK's client (it fails to encode
# the request): tests/attacks/test_bad_input.py sends those as raw JSON-RPC.
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("remember", {"summary": "x", "content": BAD}, "content"),
    ("remember", {"summary": BAD}, "summary"),
    ("remember", {"summary": "x", "tags": ["ok", BAD]}, "tags.1"),
    ("remember_batch", {"items": [{"summary": "a"}, {"summary": "b", "content": BAD}]},
     "items.1.content"),
    ("set_state", {"key": "k", "value": BAD}, "value"),
    ("set_state", {"key": "k", "value": {"a": {"b": [BAD]}}}, "value.a.b.0"),
    ("set_state", {"key": BAD, "value": 1}, "key"),
    ("set_state", {"key": "k", "value": nested(DEEP)}, "value" + ".a" * 32),
    ("recall", {"query": BAD}, "query"),
    ("get_memory", {"memory_id": BAD}, "memory_id"),
    ("create_context", {"name": "x", "description": BAD}, "description"),
    ("feedback", {"memory_id": "m", "helpful": True, "note": BAD}, "note"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "arguments", "field"), CASES)
def test_text_that_cannot_be_stored_is_refused_naming_the_field(
    runtime: Runtime, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async def scenario(client: Client) -> None:
        before = await counts(client)
        text = await fail(client, tool, arguments)
        assert f"invalid_input ({field}): " in text, text
        assert await counts(client) == before

    drive(build_mcp(runtime), scenario)


def test_update_memory_refuses_a_lone_surrogate_and_keeps_the_memory(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        made = await call(client, "remember", {"summary": "kept as it was"})
        text = await fail(
            client, "update_memory", {"memory_id": made["memory_id"], "content": "a" + BAD}
        )
        assert "invalid_input (content): " in text
        again = await call(client, "get_memory", {"memory_id": made["memory_id"]})
        assert again["summary"] == "kept as it was" and "content" not in again

    drive(build_mcp(runtime), scenario)


def test_a_state_value_at_the_depth_limit_is_stored_and_read_back(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        value = nested(32)
        await call(client, "set_state", {"key": "deep", "value": value})
        assert (await call(client, "get_state", {"key": "deep"}))["value"] == value
        listed = await call(client, "get_state", {})
        assert json.dumps(listed["items"][0]["value"]) == json.dumps(value)

    drive(build_mcp(runtime), scenario)
