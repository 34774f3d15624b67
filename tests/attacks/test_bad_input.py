"""Bad input from a misbehaving client, over a real ``kioku serve`` (docs/security.md, "Bad
input"): text that is not valid Unicode (lone UTF-16 surrogates, sent as ``\\udfff`` escapes)
in every place a client writes, a NUL character (in a body, the path, the query, OAuth
registration, an MCP argument), JSON nested deeper than 32, tool arguments the tool does not
take. Each is refused naming the field, the server never answers 5xx, and nothing is written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client as MCPClient
from mcp.client.streamable_http import streamable_http_client

from tests.attacks.conftest import Target
from tests.e2e.conftest import kioku_env

pytestmark = pytest.mark.e2e

API = "/api/v1/contexts/default"
BAD = "\\udfff"  # a lone low surrogate, as JSON text escapes it


def deep(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def send(target: Target, method: str, path: str, text: str) -> httpx.Response:
    return httpx.request(
        method,
        target.base + path,
        content=text.encode(),
        headers={**target.headers("owner"), "content-type": "application/json"},
        timeout=30,
    )


def written(target: Target) -> tuple[int, int]:
    """Memories and state keys in the default context (deleted memories too)."""
    owner = target.headers("owner")
    memories = httpx.get(f"{target.base}{API}/memories?limit=200", headers=owner).json()
    state = httpx.get(f"{target.base}{API}/state", headers=owner).json()
    return len(memories["items"]), len(state["items"])


REST = [
    ("POST", f"{API}/memories", f'{{"summary": "x", "content": "a{BAD}"}}', "content"),
    ("POST", f"{API}/memories", f'{{"summary": "x", "{BAD}": 1}}', "body"),
    (
        "POST",
        f"{API}/memories/batch",
        f'{{"items": [{{"summary": "a"}}, {{"summary": "b", "content": "{BAD}"}}]}}',
        "items[1].content",
    ),
    (
        "POST",
        f"{API}/memories/batch",
        f'{{"items": [{{"summary": "a"}}], "atomic": true, "{BAD}": 1}}',
        "body",
    ),
    (
        "POST",
        f"{API}/ingest",
        f'{{"ops": [{{"op": "upsert", "external_id": "e", "summary": "s", "content": "{BAD}"}}]}}',
        "ops[0].content",
    ),
    ("PUT", f"{API}/state/k", f'{{"value": "{BAD}"}}', "value"),
    ("PUT", f"{API}/state/k", f'{{"value": {{"a": [{{"b": "{BAD}"}}]}}}}', "value.a[0].b"),
    ("PUT", f"{API}/state/k", f'{{"value": {{"a": {{"{BAD}": 1}}}}}}', "value.a"),
    ("PUT", f"{API}/state/k", f'{{"value": {deep(255)}}}', "value" + ".a" * 32),
    ("POST", "/api/v1/contexts", f'{{"name": "c", "description": "{BAD}"}}', "description"),
    ("POST", f"{API}/memories", "{not json", "body"),
]


@pytest.mark.parametrize(("method", "path", "text", "field"), REST)
def test_rest_refuses_unstorable_input_naming_the_field(
    secured: Target, method: str, path: str, text: str, field: str
) -> None:
    before = written(secured)
    answer = send(secured, method, path, text)
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == field
    assert written(secured) == before


def test_update_memory_with_a_lone_surrogate_changes_nothing(secured: Target) -> None:
    owner = secured.headers("owner")
    made = httpx.post(f"{secured.base}{API}/memories", json={"summary": "as it was"}, headers=owner)
    memory = f"{secured.base}{API}/memories/{made.json()['id']}"
    answer = send(secured, "PATCH", memory.removeprefix(secured.base), f'{{"content": "{BAD}"}}')
    assert answer.status_code == 422 and answer.json()["error"]["field"] == "content"
    assert httpx.get(memory, headers=owner).json()["content"] == ""
    httpx.delete(memory, headers=owner)


def test_a_context_with_a_value_at_the_limit_stays_readable(secured: Target) -> None:
    owner = secured.headers("owner")
    stored = send(secured, "PUT", f"{API}/state/edge", f'{{"value": {deep(32)}}}')
    assert stored.status_code == 200, stored.text
    assert httpx.get(f"{secured.base}{API}/state/edge", headers=owner).status_code == 200
    assert httpx.get(f"{secured.base}{API}/state", headers=owner).status_code == 200
    httpx.delete(f"{secured.base}{API}/state/edge", headers=owner)


# ------------------------------------------------------------------ MCP


async def mcp_calls(target: Target, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Each call's text over one streamable-HTTP session (all must be tool errors)."""
    http = httpx2.AsyncClient(headers=target.headers("owner"), timeout=60)
    texts = []
    async with http, MCPClient(streamable_http_client(f"{target.base}/mcp", http_client=http)) as c:
        for tool, arguments in calls:
            result = await c.call_tool(tool, arguments)
            assert result.is_error, (tool, result.content)
            texts.append(result.content[0].text)  # type: ignore[union-attr]
    return texts


def test_every_mcp_tool_refuses_an_unknown_argument_by_name(secured: Target) -> None:
    async def scenario() -> list[tuple[str, dict[str, Any]]]:
        http = httpx2.AsyncClient(headers=secured.headers("owner"), timeout=60)
        transport = streamable_http_client(f"{secured.base}/mcp", http_client=http)
        async with http, MCPClient(transport) as client:
            tools = (await client.list_tools()).tools
        calls = []
        for tool in tools:
            assert tool.input_schema.get("additionalProperties") is False, tool.name
            types = {"string": "x", "boolean": True, "integer": 1, "number": 1}
            props = tool.input_schema["properties"]
            required = {
                name: types.get(str(props[name].get("type")), 1)
                for name in tool.input_schema.get("required", [])
            }
            calls.append((tool.name, {**required, "not_an_argument": 1}))
        return calls

    before = written(secured)
    calls = anyio.run(scenario)
    assert len(calls) >= 19
    for (tool, _), text in zip(calls, anyio.run(mcp_calls, secured, calls), strict=True):
        assert "invalid_input (not_an_argument): unknown argument(s)" in text, (tool, text)
    assert written(secured) == before


def test_mcp_refuses_a_misspelt_or_provenance_argument(secured: Target) -> None:
    before = written(secured)
    ttl, provenance, deep_value = anyio.run(
        mcp_calls,
        secured,
        [
            ("set_state", {"key": "k", "value": 1, "ttl": 5}),
            ("remember", {"summary": "x", "source_type": "manual", "trust_tier": "trusted"}),
            # 40, not 255: the SDK's client cannot serialize ~255 levels (REST sends those).
            ("set_state", {"key": "k", "value": json.loads(deep(40))}),
        ],
    )
    assert "invalid_input (ttl): unknown argument(s) ttl" in ttl
    assert "invalid_input (source_type): source_type is stamped by the server" in provenance
    assert f"invalid_input (value{'.a' * 32}): nests arrays/objects deeper than 32" in deep_value
    assert written(secured) == before


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("remember", f'{{"summary": "x", "content": "{BAD}"}}'),
        ("remember_batch", f'{{"items": [{{"summary": "x", "{BAD}": 1}}]}}'),
        ("set_state", f'{{"key": "k", "value": {{"a": {{"{BAD}": 1}}}}}}'),
        ("update_memory", f'{{"memory_id": "m", "content": "{BAD}"}}'),
    ],
)
def test_mcp_over_http_refuses_a_lone_surrogate_without_a_5xx(
    secured: Target, tool: str, arguments: str
) -> None:
    # The SDK's client cannot even encode such a request; a hand-made one is refused when the
    # JSON-RPC message is parsed, before any tool runs.
    headers = {
        **secured.headers("owner"),
        "Accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }
    body = (
        f'{{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
        f'"params": {{"name": "{tool}", "arguments": {arguments}}}}}'
    )
    before = written(secured)
    answer = httpx.post(f"{secured.base}/mcp", content=body.encode(), headers=headers, timeout=30)
    assert answer.status_code < 500, answer.text
    error = answer.json().get("error") or answer.json()["result"]
    assert error, answer.text
    assert written(secured) == before


def test_a_nul_is_refused_on_every_channel_without_a_5xx(secured: Target) -> None:
    """A NUL (``\\u0000`` in JSON, ``%00`` in a URL) through a real server, whose HTTP layer
    decodes the path and the query before the app (tests/api/test_nul_input.py and
    tests/mcp/test_nul_arguments.py cover every field on both backends, in-process)."""
    owner = secured.headers("owner")
    before = written(secured)
    body = send(secured, "POST", f"{API}/memories", '{"summary": "x", "content": "a\\u0000"}')
    viewer = secured.headers("viewer")
    path = httpx.get(f"{secured.base}/api/v1/contexts/de%00fault", headers=viewer, timeout=30)
    query = httpx.get(f"{secured.base}{API}/memories?tag=%00", headers=owner, timeout=30)
    for answer, field in ((body, "content"), (path, "path"), (query, "tag")):
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["field"] == field, answer.text
    registration = httpx.post(
        f"{secured.base}/register",
        json={"client_name": "a\x00", "redirect_uris": ["http://127.0.0.1:9/cb"],
              "token_endpoint_auth_method": "none"},
        timeout=30,
    )  # fmt: skip
    assert registration.status_code == 400, registration.text
    assert registration.json()["error_description"].startswith("client_name holds a NUL")
    [text] = anyio.run(mcp_calls, secured, [("remember", {"summary": "x", "content": "\x00"})])
    assert "invalid_input (content): holds a NUL character" in text, text
    assert written(secured) == before


# ------------------------------------------------------------------ CLI


def test_cli_with_bytes_that_are_not_utf8_is_refused_naming_the_field(secured: Target) -> None:
    # Python decodes such argv bytes to lone surrogates; the CLI used to crash encoding them.
    before = written(secured)
    done = subprocess.run(
        [
            sys.executable.encode(), b"-m", b"kioku.cli", b"remember", b"ok",
            b"--content", b"caf\xe9", b"--url", secured.base.encode(),
        ],
        env={**kioku_env(secured.data), "KIOKU_API_KEY": secured.keys["owner"]},
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert b"error (content): is not valid Unicode text" in done.stderr
    assert b"Traceback" not in done.stderr
    assert written(secured) == before


def test_the_server_logged_no_crash(secured: Target) -> None:
    assert "Traceback" not in secured.log()
