"""Sessions are threads (issue 36): ``remember`` calls of one MCP session that name no thread
share one, over streamable HTTP (kioku hands each client an ``Mcp-Session-Id`` at initialize
and keeps nothing for it) and over stdio; a named thread wins; two sessions never share.

Over HTTP a session exists for clients on the initialize handshake (Claude Code and the other
clients of the TypeScript SDK; the Python SDK's ``mode="legacy"``). The MCP SDK 2.x's
sessionless protocol era (``server/discover``, its ``auto`` default against kioku) has no
session: its calls go to no thread unless they name one, which the last test pins down."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.e2e


async def remember(client: Client, context: str, summary: str, **extra: Any) -> str:
    result = await client.call_tool(
        "remember", {"context_id": context, "summary": summary, **extra}
    )
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)["memory_id"]  # type: ignore[union-attr]


async def session(client: Client, context: str, name: str) -> list[str]:
    ids = [await remember(client, context, f"{name}: step {n}") for n in range(3)]
    ids.append(await remember(client, context, f"{name}: a named thread", thread="design-doc"))
    batch = await client.call_tool("remember_batch", {"context_id": context, "items": [
        {"summary": f"{name}: batch item"}]})  # fmt: skip
    assert not batch.is_error, batch.content
    return ids


def threads(memories: list[dict[str, Any]]) -> dict[str, list[tuple[int, str]]]:
    found: dict[str, list[tuple[int, str]]] = {}
    for memory in memories:
        found.setdefault(memory.get("thread") or "", []).append(
            (memory.get("position", -1), memory["summary"])
        )
    return {name: sorted(items) for name, items in found.items()}


def check(found: dict[str, list[tuple[int, str]]]) -> None:
    sessions = sorted(name for name in found if name.startswith("mcp:"))
    assert len(sessions) == 2, found
    for name in sessions:
        steps = [summary for _, summary in found[name]]
        owner = steps[0].split(":")[0]
        assert steps == [f"{owner}: step {n}" for n in range(3)] + [f"{owner}: batch item"]
        assert [position for position, _ in found[name]] == [0, 1, 2, 3]
    assert sorted(s for _, s in found["design-doc"]) == ["a: a named thread", "b: a named thread"]


def test_each_http_session_is_a_thread(server: str) -> None:
    context = "threads-http"
    httpx.post(f"{server}/api/v1/contexts", json={"name": context}, timeout=30)

    async def main() -> None:
        url = f"{server}/mcp"
        async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
            await session(a, context, "a")
            await session(b, context, "b")

    anyio.run(main)
    listed = httpx.get(f"{server}/api/v1/contexts/{context}/memories?limit=100", timeout=30)
    check(threads(listed.json()["items"]))


def test_each_stdio_process_is_a_thread(tmp_path: Path) -> None:
    env = {**os.environ, "KIOKU_DATABASE_URL": f"sqlite:///{tmp_path / 'stdio.db'}",
           "HF_HUB_OFFLINE": "1"}  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=["-m", "kioku.cli", "mcp"], env=env)

    async def main() -> list[dict[str, Any]]:
        for name in ("a", "b"):  # one process each
            async with Client(params) as client:
                await session(client, "default", name)
        async with Client(params) as client:
            listed = await client.call_tool("list_memories", {"limit": 100})
            return json.loads(listed.content[0].text)["items"]  # type: ignore[union-attr]

    check(threads(anyio.run(main)))


def test_a_sessionless_client_over_http_names_its_threads_itself(server: str) -> None:
    context = "threads-sessionless"
    httpx.post(f"{server}/api/v1/contexts", json={"name": context}, timeout=30)

    async def main() -> None:
        async with Client(f"{server}/mcp") as client:  # the SDK's own default: discover
            await remember(client, context, "no session, no thread")
            await remember(client, context, "named", thread="chat-7")

    anyio.run(main)
    listed = httpx.get(f"{server}/api/v1/contexts/{context}/memories?limit=100", timeout=30)
    found = {m["summary"]: m.get("thread") for m in listed.json()["items"]}
    assert found == {"no session, no thread": None, "named": "chat-7"}
