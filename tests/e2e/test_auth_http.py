"""``kioku serve`` without ``--dev``: every REST and MCP request needs a key, over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client as MCPClient
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import cli, running_server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("secured")


@pytest.fixture(scope="module")
def secured(data: Path) -> Iterator[tuple[str, dict[str, str]]]:
    keys = {
        role: json.loads(cli(data, "keys", "create", f"e2e-{role}", "--role", role, "--json"))[
            "key"
        ]
        for role in ("owner", "viewer", "connector")
    }
    keys["tenant-b"] = json.loads(
        cli(data, "keys", "create", "b", "--role", "owner", "--workspace", "tenant-b", "--json")
    )["key"]
    with running_server(data) as base:
        yield base, keys


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def test_a_connector_key_ingests_over_http_and_does_nothing_else(
    secured: tuple[str, dict[str, str]],
) -> None:
    base, keys = secured
    url = f"{base}/api/v1/contexts/default/ingest"
    body = {"ops": [{"op": "upsert", "external_id": "e2e-1", "summary": "Pushed by a worker"}]}
    headers = {**bearer(keys["connector"]), "Idempotency-Key": "e2e-batch-1"}
    first = httpx.post(url, json=body, headers=headers)
    assert first.status_code == 200, first.text
    assert first.json()["created"] == 1
    again = httpx.post(url, json=body, headers=headers)
    assert again.status_code == 200 and again.json() == first.json()
    recall = {"query": "pushed by a worker"}
    refused = httpx.post(
        f"{base}/api/v1/contexts/default/recall", json=recall, headers=bearer(keys["connector"])
    )
    assert refused.status_code == 403
    found = httpx.post(
        f"{base}/api/v1/contexts/default/recall", json=recall, headers=bearer(keys["owner"])
    ).json()["results"]
    hit = next(r for r in found if r["external_id"] == "e2e-1")
    assert (hit["source_type"], hit["trust_tier"]) == ("connector", "external")


def test_rest_needs_a_key(secured: tuple[str, dict[str, str]]) -> None:
    base, keys = secured
    assert httpx.get(f"{base}/api/v1/contexts").status_code == 401
    assert httpx.get(f"{base}/health").status_code == 200
    owner = httpx.get(f"{base}/api/v1/contexts", headers=bearer(keys["owner"]))
    assert owner.status_code == 200 and [c["name"] for c in owner.json()["items"]] == ["default"]


def test_mcp_needs_a_key_and_acts_as_its_owner(secured: tuple[str, dict[str, str]]) -> None:
    base, keys = secured
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    assert httpx.post(f"{base}/mcp", json=body, headers=headers).status_code == 401
    wrong = {**headers, **bearer("kk_" + "x" * 43)}
    assert httpx.post(f"{base}/mcp", json=body, headers=wrong).status_code == 401

    async def session(key: str, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        http = httpx2.AsyncClient(headers=bearer(key), timeout=60)  # the SDK's own httpx
        transport = streamable_http_client(f"{base}/mcp", http_client=http)
        async with http, MCPClient(transport) as client:
            result = await client.call_tool(tool, arguments)
            return result.is_error, result.content[0].text  # type: ignore[union-attr]

    error, text = anyio.run(session, keys["owner"], "remember", {"summary": "Owner's note"})
    assert not error and json.loads(text)["source_type"] == "manual"
    memory_id = json.loads(text)["memory_id"]
    error, text = anyio.run(session, keys["viewer"], "remember", {"summary": "Viewer's note"})
    assert error and "forbidden" in text
    error, text = anyio.run(session, keys["viewer"], "recall", {"query": "owner note"})
    assert not error and memory_id in text
    error, text = anyio.run(session, keys["tenant-b"], "get_memory", {"memory_id": memory_id})
    assert error and "not_found" in text


def test_keys_never_reach_the_server_log(secured: tuple[str, dict[str, str]], data: Path) -> None:
    base, keys = secured
    for key in keys.values():  # used, refused, in headers of REST and MCP requests
        httpx.get(f"{base}/api/v1/contexts", headers=bearer(key))
        httpx.get(f"{base}/api/v1/contexts", headers=bearer(key + "x"))
    log = (data / "serve.log").read_text()
    assert "GET /api/v1/contexts" in log  # the log is being written...
    for key in keys.values():
        assert key not in log and key[10:] not in log  # ...and holds no key, not even in part
