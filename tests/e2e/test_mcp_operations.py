"""MCP in operations: the official SDK client calls tools over streamable HTTP on a real
``kioku serve``; ``/metrics`` then counts each tool by name and outcome, and the server's log
names each tool call (never its arguments)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.conftest import running_server

pytestmark = pytest.mark.e2e

SECRET = "the vault code is 4417-aubergine"  # memory text: never in a log line
NO_SUCH_MEMORY = "00000000-0000-0000-0000-000000000000"


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_mcp_tool_calls_are_counted_by_tool_and_logged_by_name(tmp_path: Path) -> None:
    env = {"KIOKU_EMBEDDER": "none", "KIOKU_LOG_FORMAT": "json"}
    with running_server(tmp_path, "--dev", env=env) as base:

        async def main() -> None:
            async with Client(f"{base}/mcp") as client:
                assert "recall" in {tool.name for tool in (await client.list_tools()).tools}
                made = await client.call_tool("remember", {"context_id": "default",
                                                           "summary": SECRET})  # fmt: skip
                assert not made.is_error, made.content
                found = await client.call_tool(
                    "recall", {"context_id": "default", "query": "vault code"}
                )
                assert not found.is_error, found.content
                missing = await client.call_tool(
                    "get_memory", {"context_id": "default", "memory_id": NO_SUCH_MEMORY}
                )
                assert missing.is_error

        anyio.run(main)
        scraped = httpx.get(f"{base}/metrics", timeout=30).text
    metrics = samples(scraped)

    def value(name: str, **labels: str) -> float:
        return metrics.get((name, frozenset(labels.items())), 0.0)

    calls = "kioku_mcp_tool_calls_total"
    assert value(calls, tool="remember", outcome="ok") == 1
    assert value(calls, tool="recall", outcome="ok") == 1
    assert value(calls, tool="get_memory", outcome="not_found") == 1
    assert value("kioku_mcp_tool_call_duration_seconds_count", tool="recall") == 1
    assert value("kioku_mcp_tool_call_duration_seconds_count", tool="remember") == 1
    messages = "kioku_mcp_messages_total"
    counted = {dict(labels)["method"]: v for (name, labels), v in metrics.items()
               if name == messages}  # fmt: skip
    # The handshake: ``initialize`` (and its notification) or, from the 2026 protocol on,
    # one ``server/discover``; whichever this SDK speaks, it is counted by its name.
    handshake = {"initialize", "server/discover", "notifications/initialized"}
    assert set(counted) - handshake == {"tools/list", "tools/call"}, counted
    assert counted["tools/list"] == 1 and counted["tools/call"] == 3
    handshakes = sum(counted.get(m, 0) for m in ("initialize", "server/discover"))
    assert handshakes == 1
    operations = {dict(labels)["operation"] for name, labels in metrics
                  if name == "kioku_http_requests_total"}  # fmt: skip
    assert "mcp" in operations and "StreamableHTTPASGIApp" not in operations
    posted = sum(
        v for (name, labels), v in metrics.items()
        if name == "kioku_http_requests_total"
        and dict(labels) == {"operation": "mcp", "method": "POST", "status": "200"}
    )  # fmt: skip
    assert posted == 5  # the handshake, tools/list, three calls (a notification is a 202)
    assert not [name for name, _ in metrics if name.endswith("_created")]

    log = (tmp_path / "serve.log").read_text()
    assert SECRET not in log and "4417" not in log and "vault" not in log
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    tool_lines = [line for line in lines if line.get("tool")]
    assert [(line["tool"], line["outcome"]) for line in tool_lines] == [
        ("remember", "ok"), ("recall", "ok"), ("get_memory", "not_found"),
    ]  # fmt: skip
    for line in tool_lines:
        assert line["level"] == "info" and line["mcp_method"] == "tools/call"
        assert line["duration_ms"] > 0 and line["client"].startswith("127.0.0.1:")
        assert f"MCP tools/call {line['tool']}: {line['outcome']} in " in line["message"]
