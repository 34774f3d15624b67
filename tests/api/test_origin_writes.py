"""A write from a browser page of another origin is refused on every state-changing route, a
page on another port of the same machine included (issue 34, item 2). Before, only the host
name was compared: ``Origin: http://localhost:3000`` could purge a ``--dev`` server's context
with a body-less POST (``fetch`` in ``no-cors`` mode needs no preflight)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.routing import Mount, Route

from kioku.api import create_app
from kioku.runtime import Runtime
from kioku.settings import Settings
from tests.conftest import SyncASGIClient, backend_settings, portal_client

OWN = "http://testserver"  # what the test client addresses (Host: testserver)
FOREIGN = [
    "http://localhost:3000",
    "http://testserver:3000",
    "http://127.0.0.1:8765",
    "https://localhost",
    "http://evil.example",
    "null",
    "http://testserver.evil.example",
    "file://",
]


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return backend_settings(request, tmp_path)


# The MCP SDK's app is mounted whole at the root: its endpoints (MCP itself and OAuth).
MCP_AND_OAUTH = [
    ("POST", p) for p in ("/mcp", "/register", "/token", "/authorize", "/revoke", "/oauth/consent")
]


def writes(routes: list[Any], prefix: str = "") -> list[tuple[str, str]]:
    """Every (method, path) of the app that is not GET/HEAD/OPTIONS, included routers and
    mounts followed."""
    found: list[tuple[str, str]] = []
    for route in routes:
        if hasattr(route, "original_router"):  # FastAPI's included router
            found += writes(route.original_router.routes, prefix + route.include_context.prefix)
        elif isinstance(route, Mount) and route.routes:
            found += writes(list(route.routes), prefix + route.path)
        elif isinstance(route, Route):
            for method in sorted((route.methods or set()) - {"GET", "HEAD", "OPTIONS"}):
                found.append((method, prefix + route.path))
    return found + (MCP_AND_OAUTH if not prefix else [])


def concrete(path: str) -> str:
    """A path template with each parameter filled in (the guard answers before routing)."""
    path = path.replace("{context_id}", "default").replace("{path:path}", "v1/x")
    return path.replace("{", "x").replace("}", "")


def test_every_write_route_is_listed(runtime: Runtime) -> None:
    listed = writes(list(create_app(runtime=runtime).routes))
    assert ("POST", "/api/v1/contexts/{context_id}/purge") in listed
    assert ("POST", "/ui/contexts/{context_id}/sleep") in listed
    assert ("POST", "/api/v1/sleep/{run_id}/rollback") in listed
    assert len(listed) > 40


def test_no_write_route_accepts_another_origin(runtime: Runtime) -> None:
    app = create_app(runtime=runtime)
    with portal_client(app) as client:
        for method, path in writes(list(app.routes)):
            for origin in FOREIGN:
                answer = client.request(method, concrete(path), headers={"Origin": origin})
                assert answer.status_code == 403, (method, path, origin, answer.text[:200])
                error = answer.json()["error"]
                assert (error["code"], error["field"]) == ("forbidden_origin", "Origin")


def remember(client: SyncASGIClient, **headers: str) -> Any:
    body = {"summary": "The launch moves to May"}
    return client.post("/api/v1/contexts/default/memories", json=body, headers=headers)


def test_a_body_less_purge_from_another_port_erases_nothing(client: SyncASGIClient) -> None:
    assert remember(client).status_code == 201
    for origin in ("http://localhost:3000", "http://testserver:3000", "https://testserver:444"):
        refused = client.post("/api/v1/contexts/default/purge", headers={"Origin": origin})
        assert refused.status_code == 403, refused.text
    listed = client.get("/api/v1/contexts/default/memories").json()["items"]
    assert [m["summary"] for m in listed] == ["The launch moves to May"]


def test_a_browser_saying_another_site_sent_it_is_refused(client: SyncASGIClient) -> None:
    for site in ("cross-site", "same-site"):
        refused = remember(client, **{"Sec-Fetch-Site": site})
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["field"] == "Sec-Fetch-Site"
    assert remember(client, **{"Sec-Fetch-Site": "same-origin", "Origin": OWN}).status_code == 201


@pytest.mark.parametrize("origin", [OWN, "http://TestServer", "http://testserver:80"])
def test_the_servers_own_origin_still_writes(client: SyncASGIClient, origin: str) -> None:
    assert remember(client, Origin=origin).status_code == 201
    # Reads are not checked: a page of another origin cannot read the answer (no CORS).
    listed = client.get("/api/v1/contexts/default/memories", headers={"Origin": FOREIGN[0]})
    assert listed.status_code == 200


def test_behind_a_tls_proxy_https_at_the_same_authority_writes(client: SyncASGIClient) -> None:
    # A proxy ends TLS and forwards the browser's Host: the page's origin is https.
    assert remember(client, Origin="https://testserver").status_code == 201


def test_the_public_url_origin_writes(tmp_path: Path, runtime: Runtime) -> None:
    server = runtime.settings.server.model_copy(
        update={"public_url": "https://memory.example.test"}
    )
    settings = runtime.settings.model_copy(update={"server": server})
    with portal_client(create_app(settings, runtime=runtime)) as client:
        assert remember(client, Origin="https://memory.example.test").status_code == 201
        assert remember(client, Origin="https://memory.example.test:8443").status_code == 403
        assert remember(client, Origin="http://memory.example.test").status_code == 403
