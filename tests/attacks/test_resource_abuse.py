"""Resource abuse: a stranger filling the database through open OAuth client registration, a
stolen authorization code replayed, the consent page framed or misleading, and one tenant's
huge memories stalling every other tenant's embeddings (issue 18, items 5 and 6)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.attacks.conftest import Target
from tests.e2e.conftest import kioku_env, running_server
from tests.postgres import empty_postgres_database

pytestmark = pytest.mark.e2e
REDIRECT = "http://127.0.0.1:9/callback"


def register(base: str, **fields: Any) -> httpx.Response:
    body = {"client_name": "agent", "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none", **fields}  # fmt: skip
    return httpx.post(f"{base}/register", json=body, timeout=60)


def database_bytes(data: Path) -> int:
    return sum(path.stat().st_size for path in data.glob("kioku.db*"))


def test_oversized_registrations_are_refused_and_store_nothing(secured: Target) -> None:
    before = database_bytes(secured.data)
    started = time.monotonic()
    for _ in range(5):  # the reported attack: 5 names of 3 MiB each
        huge_name = register(secured.base, client_name="x" * (3 * 1024 * 1024))
        assert huge_name.status_code == 413
        assert huge_name.json()["error"] == "invalid_client_metadata"
    many = [f"http://127.0.0.1:9/cb{i}" for i in range(50_000)]
    assert register(secured.base, redirect_uris=many).status_code == 413
    # Under the body cap, the fields are bounded too (RFC 7591 §3.2.2 errors, 400).
    long_name = register(secured.base, client_name="y" * 201)
    assert long_name.status_code == 400
    assert long_name.json()["error"] == "invalid_client_metadata"
    eleven = register(secured.base, redirect_uris=[f"{REDIRECT}{i}" for i in range(11)])
    assert eleven.status_code == 400 and eleven.json()["error"] == "invalid_redirect_uri"
    assert time.monotonic() - started < 30
    assert database_bytes(secured.data) - before < 64 * 1024


@pytest.mark.parametrize(
    "uri",
    [
        "javascript:alert(document.domain)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "http://attacker.example/cb",  # cleartext to a non-loopback host
        "https://client.example/cb#frag",
        "https://trusted.example@attacker.example/cb",
    ],
)
def test_redirect_uris_that_could_leak_or_run_the_code_are_refused(
    secured: Target, uri: str
) -> None:
    answer = register(secured.base, redirect_uris=[uri])
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize(
    "uri",
    ["https://claude.ai/api/mcp/auth_callback", "http://[::1]:33418/cb",
     "cursor://anysphere.cursor-mcp/oauth/callback"],
)  # fmt: skip
def test_https_loopback_and_native_app_redirects_register(secured: Target, uri: str) -> None:
    assert register(secured.base, redirect_uris=[uri]).status_code == 201


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _consent_url(base: str, client_id: str, redirect: str, challenge: str) -> str:
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect,
             "code_challenge": challenge, "code_challenge_method": "S256", "state": "st",
             "scope": "memory:read"}  # fmt: skip
    to_consent = httpx.get(f"{base}/authorize", params=query, timeout=60)
    assert to_consent.status_code in (302, 307), to_consent.text
    return to_consent.headers["location"]


def _code(base: str, key: str, client_id: str, challenge: str) -> str:
    consent = _consent_url(base, client_id, REDIRECT, challenge)
    page = httpx.get(consent, timeout=60)
    ticket = re.search(r'name="ticket" value="([^"]+)"', page.text)
    assert ticket is not None
    form = {"ticket": ticket.group(1), "key": key, "decision": "allow"}
    answer = httpx.post(consent, data=form, timeout=60)
    assert answer.status_code == 302
    return parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]


def _mcp_status(base: str, token: str) -> int:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
    return httpx.post(f"{base}/mcp", json=body, headers=headers, timeout=60).status_code


def test_a_replayed_authorization_code_revokes_what_it_issued(secured: Target) -> None:
    client_id = register(secured.base).json()["client_id"]
    verifier, challenge = _pkce()
    code = _code(secured.base, secured.keys["member"], client_id, challenge)
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                "client_id": client_id, "code_verifier": verifier}  # fmt: skip
    first = httpx.post(f"{secured.base}/token", data=exchange, timeout=60)
    assert first.status_code == 200, first.text
    tokens = first.json()
    assert _mcp_status(secured.base, tokens["access_token"]) == 200
    # The attacker who intercepted the code redeems it again: refused, and the victim's
    # tokens from the first exchange stop working (the code is known to be compromised).
    replay = httpx.post(f"{secured.base}/token", data=exchange, timeout=60)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert _mcp_status(secured.base, tokens["access_token"]) == 401
    refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
               "client_id": client_id}  # fmt: skip
    assert httpx.post(f"{secured.base}/token", data=refresh, timeout=60).status_code == 400


def test_the_consent_page_cannot_be_framed_and_names_where_the_code_goes(
    secured: Target,
) -> None:
    destination = "https://collector.example:8443/oauth/cb"
    client_id = register(secured.base, redirect_uris=[destination]).json()["client_id"]
    _, challenge = _pkce()
    consent = _consent_url(secured.base, client_id, destination, challenge)
    for answer in (httpx.get(consent, timeout=60), httpx.get(f"{consent}x", timeout=60)):
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-frame-options"] == "DENY"
    page = httpx.get(consent, timeout=60).text
    host = re.search(r'id="redirect-host"[^>]*>([^<]+)<', page)
    assert host is not None and host.group(1) == "collector.example:8443"
    assert destination in page


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of its own: the flood below spends this address's registrations."""
    data = tmp_path_factory.mktemp("registration-flood")
    with running_server(data) as base:
        yield base


def test_a_registration_flood_from_one_address_is_slowed(fresh: str) -> None:
    answers = [register(fresh) for _ in range(30)]
    created = [a for a in answers if a.status_code == 201]
    refused = [a for a in answers if a.status_code == 429]
    assert len(created) == 20 and len(refused) == 10
    assert int(refused[0].headers["retry-after"]) > 0


def _remember(target: Target, who: str, summary: str, content: str = "") -> str:
    answer = httpx.post(
        f"{target.base}/api/v1/contexts/default/memories",
        json={"summary": summary, "content": content},
        headers=target.headers(who),
        timeout=120,
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def _embedded(target: Target, who: str, memory_id: str) -> bool:
    answer = httpx.get(
        f"{target.base}/api/v1/contexts/default/memories/{memory_id}",
        headers=target.headers(who),
        timeout=60,
    )
    return answer.json()["embedding_status"] == "ready"


@pytest.fixture(scope="module")
def secured_postgres(
    tmp_path_factory: pytest.TempPathFactory, postgres_database: str
) -> Iterator[Target]:
    """``kioku serve`` on PostgreSQL (as the non-superuser role kioku runs as), with an owner
    key in ``default`` and one in ``tenant-b``, made through the CLI."""
    empty_postgres_database(postgres_database)
    data = tmp_path_factory.mktemp("attacks-postgres")
    env = {**kioku_env(data), "KIOKU_DATABASE_URL": postgres_database}

    def key(*options: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "kioku.cli", "keys", "create", *options, "--json"],
            env=env, capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        return json.loads(done.stdout)["key"]

    keys = {"owner": key("a", "--role", "owner"),
            "tenant-b": key("b", "--role", "owner", "--workspace", "tenant-b")}  # fmt: skip
    with running_server(data, env={"KIOKU_DATABASE_URL": postgres_database}) as base:
        yield Target(base, data, keys)


@pytest.mark.parametrize("backend", ["secured", "secured_postgres"])
def test_one_tenants_huge_memories_do_not_stall_another_tenants(
    backend: str, request: pytest.FixtureRequest
) -> None:
    """Tenant A queues two 1 MiB memories and a backlog; tenant B's one memory is embedded
    within seconds (it once waited behind ~25 CPU-minutes per huge memory), and A's huge
    memories become vector-searchable in bounded time too. On SQLite and PostgreSQL."""
    secured: Target = request.getfixturevalue(backend)
    huge = "words of a very long transcript " * 32_000  # ~1 MiB
    made = httpx.post(f"{secured.base}/api/v1/contexts", json={"name": "default"},
                      headers=secured.headers("tenant-b"), timeout=60)  # fmt: skip
    assert made.status_code in (201, 409), made.text
    started = time.monotonic()
    big = [_remember(secured, "owner", f"huge {i}", huge) for i in range(2)]
    for i in range(40):
        _remember(secured, "owner", f"backlog item {i}")
    lone = _remember(secured, "tenant-b", "tenant b's only memory")
    deadline = time.monotonic() + 60
    while not _embedded(secured, "tenant-b", lone):
        assert time.monotonic() < deadline, "tenant B starved behind tenant A"
        time.sleep(0.2)
    while not all(_embedded(secured, "owner", memory_id) for memory_id in big):
        assert time.monotonic() < deadline + 60, "a 1 MiB memory was not embedded in 2 min"
        time.sleep(0.5)
    print(f"two 1 MiB memories and a backlog embedded in {time.monotonic() - started:.1f} s")
