"""OAuth 2.1 for MCP clients, end to end over real HTTP against ``kioku serve`` (no ``--dev``):
Authlib as the client (registration, authorization code + PKCE, token, refresh, revoke) and the
MCP SDK's client calling tools with the tokens it got."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client
from mcp import Client as MCPClient
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import cli, running_server

pytestmark = pytest.mark.e2e
REDIRECT = "http://127.0.0.1:9/callback"
_CLIENTS: list[OAuth2Client] = []


@pytest.fixture(autouse=True)
def close_clients() -> Iterator[None]:
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()  # type: ignore[attr-defined]  # httpx.Client underneath


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], Path]]:
    data = tmp_path_factory.mktemp("oauth")
    keys = {
        role: json.loads(cli(data, "keys", "create", f"o-{role}", "--role", role, "--json"))
        for role in ("owner", "viewer")
    }
    with running_server(data) as base:
        yield base, {r: k["key"] for r, k in keys.items()} | {"owner_id": keys["owner"]["id"]}, data


def tool(base: str, token: str, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    async def call() -> tuple[bool, str]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        async with http, MCPClient(streamable_http_client(f"{base}/mcp", http_client=http)) as mcp:
            result = await mcp.call_tool(name, arguments)
            return result.is_error, result.content[0].text  # type: ignore[union-attr]

    return anyio.run(call)


def status_of(base: str, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(f"{base}/mcp", json=body, headers=headers, timeout=30).status_code


def metadata(base: str) -> dict[str, Any]:
    return httpx.get(f"{base}/.well-known/oauth-authorization-server", timeout=30).json()


def register(base: str, **extra: Any) -> httpx.Response:
    body = {"client_name": "Agent <b>X</b>", "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none", **extra}  # fmt: skip
    return httpx.post(metadata(base)["registration_endpoint"], json=body, timeout=30)


def authorize(
    base: str, key: str, scope: str, decision: str = "allow"
) -> tuple[OAuth2Client, str, str]:
    """Register, go through /authorize and the consent page; returns (client, verifier, the
    redirect the browser would follow)."""
    meta = metadata(base)
    client_id = register(base).json()["client_id"]
    client = OAuth2Client(
        client_id, redirect_uri=REDIRECT, scope=scope,
        code_challenge_method="S256", token_endpoint_auth_method="none",
    )  # fmt: skip
    _CLIENTS.append(client)
    verifier = generate_token(48)
    url, _state = client.create_authorization_url(
        meta["authorization_endpoint"], code_verifier=verifier
    )
    to_consent = httpx.get(url, timeout=30)
    assert to_consent.status_code in (302, 307), to_consent.text
    page = httpx.get(to_consent.headers["location"], timeout=30)
    assert page.status_code == 200 and "Agent &lt;b&gt;X&lt;/b&gt;" in page.text
    ticket = re.search(r'name="ticket" value="([^"]+)"', page.text)
    assert ticket is not None
    form = {"ticket": ticket.group(1), "key": key, "decision": decision}
    answer = httpx.post(to_consent.headers["location"], data=form, timeout=30)
    assert answer.status_code == 302, answer.text
    return client, verifier, answer.headers["location"]


def test_metadata_and_public_only_registration(server: tuple[str, dict[str, str], Path]) -> None:
    base, _, _ = server
    meta = metadata(base)
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert {"memory:read", "memory:write", "memory:admin"} <= set(meta["scopes_supported"])
    assert (
        httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp", timeout=30).status_code == 200
    )
    assert register(base).status_code == 201
    secret_client = register(base, token_endpoint_auth_method="client_secret_post")
    assert secret_client.status_code == 400
    assert status_of(base, "") == 401


def test_code_pkce_token_refresh_revoke(server: tuple[str, dict[str, str], Path]) -> None:
    base, keys, _ = server
    meta = metadata(base)
    client, verifier, redirect = authorize(base, keys["owner"], "memory:read memory:write")
    # dict(): Authlib updates its token object in place when it refreshes.
    token = dict(client.fetch_token(
        meta["token_endpoint"], authorization_response=redirect, code_verifier=verifier
    ))  # fmt: skip
    assert token["scope"] == "memory:read memory:write" and token["token_type"] == "Bearer"
    error, text = tool(base, token["access_token"], "remember", {"summary": "Written via OAuth"})
    assert not error and json.loads(text)["source_type"] == "manual"
    # Refresh rotates; the old refresh token is dead, and its reuse ends the whole grant.
    fresh = dict(client.refresh_token(meta["token_endpoint"], refresh_token=token["refresh_token"]))
    assert fresh["access_token"] != token["access_token"]
    assert status_of(base, token["access_token"]) == 401
    assert status_of(base, fresh["access_token"]) == 200
    with pytest.raises(Exception, match="invalid_grant"):
        client.refresh_token(meta["token_endpoint"], refresh_token=token["refresh_token"])
    assert status_of(base, fresh["access_token"]) == 401


def test_a_replayed_code_is_refused_and_ends_what_it_issued(
    server: tuple[str, dict[str, str], Path],
) -> None:
    """RFC 6749 §4.1.2: a code used twice is refused, and the tokens its first exchange
    issued are revoked (someone else holds a copy of it)."""
    base, keys, _ = server
    meta = metadata(base)
    client, verifier, redirect = authorize(base, keys["owner"], "memory:read")
    token = dict(client.fetch_token(
        meta["token_endpoint"], authorization_response=redirect, code_verifier=verifier
    ))  # fmt: skip
    assert status_of(base, token["access_token"]) == 200
    with pytest.raises(Exception, match="invalid_grant"):
        client.fetch_token(
            meta["token_endpoint"], authorization_response=redirect, code_verifier=verifier
        )
    assert status_of(base, token["access_token"]) == 401
    with pytest.raises(Exception, match="invalid_grant"):
        client.refresh_token(meta["token_endpoint"], refresh_token=token["refresh_token"])


def test_revocation_and_wrong_scope(server: tuple[str, dict[str, str], Path]) -> None:
    base, keys, _ = server
    meta = metadata(base)
    client, verifier, redirect = authorize(base, keys["owner"], "memory:read")
    token = client.fetch_token(
        meta["token_endpoint"], authorization_response=redirect, code_verifier=verifier
    )
    error, _ = tool(base, token["access_token"], "recall", {"query": "anything"})
    assert not error
    error, text = tool(base, token["access_token"], "remember", {"summary": "not allowed"})
    assert error and "forbidden" in text  # read scope: writes refused whatever the key's role
    # As RFC 7009 says a public client revokes: token + client_id, no secret.
    revoked = client.revoke_token(meta["revocation_endpoint"], token=token["access_token"])
    assert revoked.status_code == 200, revoked.text
    assert status_of(base, token["access_token"]) == 401


def test_a_viewer_key_cannot_grant_write_and_deny_is_honoured(
    server: tuple[str, dict[str, str], Path],
) -> None:
    base, keys, _ = server
    meta = metadata(base)
    client, verifier, redirect = authorize(base, keys["viewer"], "memory:read memory:write")
    token = client.fetch_token(
        meta["token_endpoint"], authorization_response=redirect, code_verifier=verifier
    )
    assert token["scope"] == "memory:read"
    _, _, denied = authorize(base, keys["owner"], "memory:read", decision="deny")
    assert "error=access_denied" in denied and "code=" not in denied


def test_consent_tickets_and_codes_stay_out_of_the_access_log(
    server: tuple[str, dict[str, str], Path],
) -> None:
    base, keys, data = server
    authorize(base, keys["owner"], "memory:read")
    log = (data / "serve.log").read_text()
    assert "GET /oauth/consent?ticket=[redacted]" in log
    assert "kct_" not in log and "kac_" not in log


def test_revoking_the_key_ends_its_tokens(server: tuple[str, dict[str, str], Path]) -> None:
    base, keys, data = server
    meta = metadata(base)
    client, verifier, redirect = authorize(base, keys["owner"], "memory:read")
    token = client.fetch_token(
        meta["token_endpoint"], authorization_response=redirect, code_verifier=verifier
    )
    assert status_of(base, token["access_token"]) == 200
    cli(data, "keys", "revoke", keys["owner_id"])
    assert status_of(base, token["access_token"]) == 401
