"""``kioku.api.mcp_calls`` on its own: what a request to ``/mcp`` is labelled, counted and
logged as, with bounded labels, over a stand-in endpoint that answers as the SDK does (the
real SDK and server: ``tests/e2e/test_mcp_operations.py``)."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from starlette.types import Receive, Scope, Send

from kioku.api.log_json import JsonFormatter
from kioku.api.mcp_calls import McpCallMetrics, McpCalls, outcome_of
from kioku.api.metrics import OPERATION, operation_of

TOOLS = ("recall", "remember")


def answer(result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode()


def tool_error(text: str) -> bytes:
    return answer({"content": [{"type": "text", "text": text}], "isError": True})


@pytest.mark.parametrize(
    ("status", "body", "outcome"),
    [
        (200, answer({"content": [{"type": "text", "text": "{}"}], "isError": False}), "ok"),
        (200, tool_error("Error executing tool get_memory: not_found (memory_id): gone"),
         "not_found"),
        (200, tool_error("Error executing tool recall: invalid_input (bad): unknown argument"),
         "invalid_input"),
        (200, tool_error("forbidden: members may not do that"), "forbidden"),
        (200, tool_error("Unknown tool: nope"), "error"),  # not a code kioku issues
        (200, tool_error("Error executing tool recall"), "error"),  # a crash
        (200, b'{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid"}}',
         "rejected"),
        (401, b'{"error":"invalid_token"}', "rejected"),
        (500, b"", "failed"),
        (200, b"event: message\r\ndata: " + answer({"content": [], "isError": False}), "ok"),
    ],
)  # fmt: skip
def test_the_outcome_of_a_tool_call(status: int, body: bytes, outcome: str) -> None:
    assert outcome_of(status, body) == outcome


class FakeEndpoint:
    """Answers every POST with ``body`` (what the SDK's JSON-response mode sends), after
    checking it was handed the request body unchanged."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.received: list[bytes] = []
        self.operations: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        self.received.append(message["body"])
        self.operations.append(operation_of(scope))
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


def post(app: Any, *bodies: Any) -> None:
    async def main() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            for body in bodies:
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                assert (await c.post("/mcp", content=raw)).status_code == 200

    anyio.run(main)


def call(name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def test_methods_and_tools_are_counted_with_bounded_labels(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    endpoint = FakeEndpoint(answer({"content": [], "isError": False}))
    app = McpCalls(endpoint, "/mcp", McpCallMetrics(registry), TOOLS)
    sent = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        call("recall", query="secret plans"),
        call("x" * 300),  # a name the server has not: one label, whatever was sent
        call("another-made-up-tool"),
        {"jsonrpc": "2.0", "id": 2, "method": "made/up"},
        {"jsonrpc": "2.0", "id": 2, "method": ["not", "a", "name"]},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": {"a": 1}}},
        [{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}],  # a batch
        b"not json",
    ]
    with caplog.at_level(logging.INFO, logger="kioku.api.mcp_calls"):
        post(app, *sent)
    raw = [b if isinstance(b, bytes) else json.dumps(b).encode() for b in sent]
    assert endpoint.received == raw  # the endpoint reads the body it was sent
    assert set(endpoint.operations) == {"mcp"}
    text = generate_latest(registry).decode()
    for line in (
        'kioku_mcp_messages_total{method="initialize"} 1.0',
        'kioku_mcp_messages_total{method="notifications/initialized"} 1.0',
        'kioku_mcp_messages_total{method="tools/call"} 4.0',
        'kioku_mcp_messages_total{method="other"} 2.0',
        'kioku_mcp_messages_total{method="invalid"} 2.0',
        'kioku_mcp_tool_calls_total{outcome="ok",tool="recall"} 1.0',
        'kioku_mcp_tool_calls_total{outcome="ok",tool="unknown"} 3.0',
        'kioku_mcp_tool_call_duration_seconds_count{tool="recall"} 1.0',
    ):
        assert line in text, text
    assert "xxxx" not in text and "another-made-up-tool" not in text and "made/up" not in text
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 4  # tool calls only
    assert (
        messages[0].startswith("127.0.0.1:") and " - MCP tools/call recall: ok in " in (messages[0])
    )
    assert "secret plans" not in " ".join(messages)


def test_a_tool_call_line_in_json_carries_its_parts_as_fields() -> None:
    fields = {"client": "127.0.0.1:5", "mcp_method": "tools/call", "tool": "recall",
              "outcome": "ok", "duration_ms": 3.2}  # fmt: skip
    record = logging.LogRecord(
        "kioku.api.mcp_calls", logging.INFO, __file__, 1, "MCP %s", ("recall",), None
    )
    record.fields = fields
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "MCP recall" and line["logger"] == "kioku.api.mcp_calls"
    assert {key: line[key] for key in fields} == fields


def test_a_scope_named_by_an_inner_app_keeps_that_name() -> None:
    assert operation_of({OPERATION: "mcp", "route": None}) == "mcp"
    assert operation_of({}) == "unmatched"
