"""What each request to ``/mcp`` was: its JSON-RPC method and, for ``tools/call``, the tool,
its outcome and its time, on ``/metrics`` and as one log line a tool call.

Every MCP message arrives as ``POST /mcp``, so the access log and ``kioku_http_requests_total``
alone cannot tell a ``recall`` from a ``tools/list``. This middleware reads the request (the
body is already capped and buffered by ``BodySizeLimit``) and, for a tool call, the answer
(one JSON body: the endpoint runs in JSON-response mode), so it sees what the client asked and
what it got, above the SDK and without touching it. Labels are bounded: a method or tool this
server does not have is counted as ``other`` or ``unknown``, an error code it does not issue as
``error``. Arguments and results are never logged or labelled.

stdio MCP (``kioku mcp``) has neither: its process serves one client, which sees every call
itself, and there is no ``/metrics`` to scrape.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable
from typing import Any

from mcp.types.methods import SPEC_CLIENT_METHODS, SPEC_CLIENT_NOTIFICATION_METHODS
from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kioku.api.metrics import HTTP_BUCKETS, OPERATION
from kioku.errors import KiokuError, error_class

log = logging.getLogger(__name__)

# What an MCP client may send a server, in every protocol version the SDK speaks (its own
# registry: ``initialize`` or 2026's ``server/discover``, ``tools/call``, notifications...).
METHODS = SPEC_CLIENT_METHODS | SPEC_CLIENT_NOTIFICATION_METHODS
TOOL_CALL = "tools/call"
# The SDK prefixes a tool's refusal ("Error executing tool recall: "); kioku's own text starts
# with its error code (``kioku.mcp.errors.describe``: "not_found (memory_id): ...").
_ERROR_CODE = re.compile(r"(?:Error executing tool [^:]*: )?([a-z_]+)\b")


class McpCallMetrics:
    """The MCP families, in the app's registry next to the HTTP ones."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.messages = Counter(
            "kioku_mcp_messages", "MCP messages received over HTTP, by JSON-RPC method.",
            ["method"], registry=registry,
        )  # fmt: skip
        self.tool_calls = Counter(
            "kioku_mcp_tool_calls", "MCP tool calls answered, by tool and outcome.",
            ["tool", "outcome"], registry=registry,
        )  # fmt: skip
        self.tool_latency = Histogram(
            "kioku_mcp_tool_call_duration_seconds", "Time to answer an MCP tool call.",
            ["tool"], buckets=HTTP_BUCKETS, registry=registry,
        )  # fmt: skip


class McpCalls:
    """ASGI middleware around the SDK's streamable HTTP app: labels ``POST path`` requests
    ``mcp`` for the HTTP metrics, counts their methods, and measures and logs tool calls."""

    def __init__(
        self, app: ASGIApp, path: str, metrics: McpCallMetrics, tools: Iterable[str]
    ) -> None:
        self.app = app
        self.paths = {path, f"{path}/"}
        self.metrics = metrics
        self.tools = frozenset(tools)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        scope[OPERATION] = "mcp"  # not the SDK's endpoint class name
        if scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        began = time.perf_counter()
        messages, body = await _read_body(receive)
        method, tool = self._what(body)
        self.metrics.messages.labels(method).inc()
        if method != TOOL_CALL:
            await self.app(scope, _replay(messages, receive), send)
            return
        status = 500
        answer: list[bytes] = []

        async def keeping(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                answer.append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, _replay(messages, receive), keeping)
        finally:
            seconds = time.perf_counter() - began
            outcome = outcome_of(status, b"".join(answer))
            self.metrics.tool_calls.labels(tool, outcome).inc()
            self.metrics.tool_latency.labels(tool).observe(seconds)
            log_tool_call(scope, tool, outcome, seconds)

    def _what(self, body: bytes) -> tuple[str, str]:
        """``(method, tool)`` of one JSON-RPC message; ``tool`` is ``""`` unless a tool call."""
        try:
            message = json.loads(body)
        except ValueError:
            return "invalid", ""
        if not isinstance(message, dict):  # a batch: the transport refuses it
            return "invalid", ""
        method = message.get("method")
        if method is None:
            return "response", ""  # the client answering the server
        if not isinstance(method, str) or method not in METHODS:
            return "other", ""
        if method != TOOL_CALL:
            return method, ""
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        return method, name if isinstance(name, str) and name in self.tools else "unknown"


def outcome_of(status: int, body: bytes) -> str:
    """``ok``; the kioku error code a tool answered with (``not_found``, ``invalid_input``...),
    ``error`` for any other error result (an unknown tool, a crash); ``rejected`` if the call
    never reached a tool (a JSON-RPC error, a 4xx such as a missing key); ``failed`` on a 5xx."""
    if status >= 500:
        return "failed"
    if status >= 400:
        return "rejected"
    answer = _last_json(body)
    if not isinstance(answer, dict) or "error" in answer:
        return "rejected"
    result = answer.get("result")
    if not isinstance(result, dict) or not result.get("isError"):
        return "ok"
    content = result.get("content")
    first = content[0] if isinstance(content, list) and content else {}
    text = first.get("text", "") if isinstance(first, dict) else ""
    match = _ERROR_CODE.match(text) if isinstance(text, str) else None
    code = match.group(1) if match else ""
    return code if error_class(code) is not KiokuError else "error"


def log_tool_call(scope: Scope, tool: str, outcome: str, seconds: float) -> None:
    """``127.0.0.1:50712 - MCP tools/call recall: ok in 12.3 ms`` (JSON lines carry the parts
    as fields): the tool the access line's ``POST /mcp`` was, never its arguments."""
    client = scope.get("client")
    where = f"{client[0]}:{client[1]}" if client else "-"
    milliseconds = round(seconds * 1000, 1)
    fields = {"client": where, "mcp_method": TOOL_CALL, "tool": tool, "outcome": outcome,
              "duration_ms": milliseconds}  # fmt: skip
    log.info(
        "%s - MCP %s %s: %s in %.1f ms", where, TOOL_CALL, tool, outcome, milliseconds,
        extra={"fields": fields},
    )  # fmt: skip


async def _read_body(receive: Receive) -> tuple[list[Message], bytes]:
    """The request's messages as received (to hand on unchanged) and its body."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    return messages, b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay


def _last_json(body: bytes) -> Any:
    """The JSON answer: the body itself, or the last ``data:`` line of an event stream."""
    try:
        return json.loads(body)
    except ValueError:
        pass
    for line in reversed(body.splitlines()):
        if line.startswith(b"data:"):
            try:
                return json.loads(line[5:])
            except ValueError:
                return None
    return None
