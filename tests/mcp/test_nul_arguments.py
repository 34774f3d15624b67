"""A NUL character in any tool argument is refused as a REST body's is (tests/api/
test_nul_input.py): a tool error ``invalid_input (field): holds a NUL character...`` naming
the argument's path, with nothing written, the same on both backends. Each was an
unclassified tool error on PostgreSQL (``text`` and ``jsonb`` cannot hold NUL; even a lookup
by a context name holding one fails), a crash the server logged."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from mcp import Client

from kioku.mcp import build_mcp
from kioku.runtime import Runtime
from tests.mcp.test_tools import call, drive, fail

NUL = "\x00"
SAID = "holds a NUL character (\\u0000), which cannot be stored; remove it"


@pytest.fixture
def runtime(runtime_on_each_backend: Runtime) -> Runtime:
    return runtime_on_each_backend


async def written(client: Client) -> tuple[int, int, int]:
    """Memories and state keys in the default context, and contexts."""
    memories = await call(client, "list_memories", {"limit": 200})
    state = await call(client, "get_state", {})
    contexts = await call(client, "list_contexts", {})
    return len(memories["items"]), len(state["items"]), len(contexts["items"])


def forged_cursor(*parts: str) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(parts)).encode()).decode().rstrip("=")


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("remember", {"summary": "x" + NUL}, "summary"),
    ("remember", {"summary": NUL}, "summary"),
    ("remember", {"summary": "x", "content": "a" + NUL}, "content"),
    ("remember", {"summary": "x", "tags": ["ok", NUL]}, "tags.1"),
    ("remember", {"summary": "x", "source_uri": "s:" + NUL}, "source_uri"),
    ("remember", {"summary": "x", "context_id": "de" + NUL}, "context_id"),
    ("remember_batch", {"items": [{"summary": "a"}, {"summary": "b", "content": NUL}]},
     "items.1.content"),
    ("recall", {"query": "q" + NUL}, "query"),
    ("recall", {"query": "q", "filters": {"tags": [NUL]}}, "filters.tags.0"),
    ("recall", {"query": "q", "context_id": "de" + NUL}, "context_id"),
    ("set_state", {"key": "k", "value": NUL}, "value"),
    ("set_state", {"key": "k", "value": {"a": {"b": [NUL]}}}, "value.a.b.0"),
    ("set_state", {"key": "k", "value": {"a": {NUL: 1}}}, "value.a"),
    ("set_state", {"key": "k" + NUL, "value": 1}, "key"),
    ("get_state", {"key": "k" + NUL}, "key"),
    ("get_memory", {"memory_id": "m" + NUL}, "memory_id"),
    ("list_memories", {"context_id": "de" + NUL}, "context_id"),
    ("create_context", {"name": "c", "description": NUL}, "description"),
    ("feedback", {"memory_id": "m", "helpful": True, "note": NUL}, "note"),
    ("forget_by_query", {"query": NUL}, "query"),
]  # fmt: skip


@pytest.mark.parametrize(("tool", "arguments", "field"), CASES)
def test_a_nul_in_a_tool_argument_is_invalid_input_naming_it(
    runtime: Runtime, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async def scenario(client: Client) -> None:
        before = await written(client)
        text = await fail(client, tool, arguments)
        assert text.startswith(f"Error executing tool {tool}: invalid_input ({field}): "), text
        assert text.endswith(SAID), text
        assert await written(client) == before

    drive(build_mcp(runtime), scenario)


def test_a_forged_cursor_holding_a_nul_is_not_a_cursor(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        forged = forged_cursor("2026-06-01T09:00:00+00:00", "m" + NUL)
        text = await fail(client, "list_memories", {"cursor": forged})
        assert "invalid_input (cursor): cursor is not a cursor this server issued" in text, text
        text = await fail(client, "get_state", {"cursor": forged_cursor("k" + NUL)})
        assert "invalid_input (cursor): " in text, text

    drive(build_mcp(runtime), scenario)


def test_update_memory_refuses_a_nul_and_keeps_the_memory(runtime: Runtime) -> None:
    async def scenario(client: Client) -> None:
        made = await call(client, "remember", {"summary": "kept as it was"})
        text = await fail(
            client, "update_memory", {"memory_id": made["memory_id"], "content": "a" + NUL}
        )
        assert f"invalid_input (content): {SAID}" in text, text
        again = await call(client, "get_memory", {"memory_id": made["memory_id"]})
        assert again["summary"] == "kept as it was" and "content" not in again

    drive(build_mcp(runtime), scenario)
