"""What a stranger can park through ``/authorize``, and what a grant of a dead key can still do
(issue 34, item 4 and the refresh of a revoked key), over the real app in-process on SQLite
and PostgreSQL: the consent tickets and grants live in the database.

- ``state`` (and the code challenge and resource indicator) are bounded in length: an
  over-long one is refused with OAuth's ``invalid_request`` and nothing is stored;
- consent tickets are bounded per client and per address: past a quota the oldest goes;
- spent and expired tickets are deleted at once, not kept a day like codes and tokens;
- a refresh token whose API key was revoked or expired is ``invalid_grant`` and ends the grant.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from anyio.from_thread import start_blocking_portal
from fastapi import FastAPI

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.mcp.oauth import MAX_STATE_CHARS
from kioku.models import KeyCreate
from kioku.runtime import Runtime, open_runtime
from kioku.service.keys import hash_key
from kioku.service.oauth import InvalidGrantError
from kioku.storage.shared.database import ALL_WORKSPACES
from tests.conftest import ManualClock, SyncASGIClient, make_settings
from tests.postgres import empty_postgres_database

REDIRECT = "http://127.0.0.1:9/callback"
HERE = "192.0.2.10"
ELSEWHERE = "198.51.100.20"


@pytest.fixture(params=["sqlite", "postgres"])
def rt(request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock) -> Iterator[Runtime]:
    """A runtime that needs keys (OAuth on), with no per-minute rate limit."""
    overrides: dict[str, object] = {}
    if request.param == "postgres":
        overrides["database_url"] = url = request.getfixturevalue("postgres_database")
        empty_postgres_database(url)
    settings = make_settings(tmp_path, dev=False, rate_limit_per_minute=0, **overrides)
    runtime = open_runtime(settings, embedder=FakeEmbedder(), clock=clock)
    try:
        yield runtime
    finally:
        runtime.close()


@pytest.fixture
def app(rt: Runtime) -> FastAPI:
    return create_app(runtime=rt)


@contextmanager
def http_from(app: FastAPI, address: str) -> Iterator[SyncASGIClient]:
    """A client of the app in-process, whose requests come from ``address``."""
    transport = httpx.ASGITransport(app=app, client=(address, 50_000))
    with start_blocking_portal() as portal:
        client = httpx.AsyncClient(transport=transport, base_url="http://testserver")
        try:
            yield SyncASGIClient(portal, client)
        finally:
            portal.call(client.aclose)


def register(http: SyncASGIClient) -> str:
    body = {"client_name": "agent", "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none"}  # fmt: skip
    answer = http.post("/register", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()["client_id"]


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorize(http: SyncASGIClient, client_id: str, **params: str) -> httpx.Response:
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
             "code_challenge": pkce()[1], "code_challenge_method": "S256", "state": "st",
             "scope": "memory:read", **params}  # fmt: skip
    answer = http.get("/authorize", params=query)
    assert answer.status_code == 302, answer.text
    return answer


def ticket_of(answer: httpx.Response) -> str:
    """The consent ticket a ``/authorize`` redirect carries."""
    location = urlsplit(answer.headers["location"])
    assert location.path == "/oauth/consent", answer.headers["location"]
    return parse_qs(location.query)["ticket"][0]


def redirect_params(answer: httpx.Response) -> dict[str, str]:
    location = answer.headers["location"]
    assert location.startswith(REDIRECT), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def consent_rows(rt: Runtime) -> int:
    with rt.store.sql.read(ALL_WORKSPACES) as tx:
        row = tx.execute("SELECT count(*) AS n FROM oauth_grants WHERE kind = 'consent'")
        return int(row.fetchone()["n"])


def live(http: SyncASGIClient, ticket: str) -> bool:
    """Whether the consent page still offers the ticket (else: expired, used or replaced)."""
    page = http.get("/oauth/consent", params={"ticket": ticket})
    assert page.status_code in (200, 400), page.text
    return page.status_code == 200


# ---------------------------------------------------------------- what one request may park


def test_an_over_long_state_is_refused_and_nothing_is_parked(rt: Runtime, app: FastAPI) -> None:
    with http_from(app, HERE) as http:
        client_id = register(http)
        refused = redirect_params(authorize(http, client_id, state="s" * (MAX_STATE_CHARS + 1)))
        assert refused["error"] == "invalid_request"
        assert f"longer than {MAX_STATE_CHARS}" in refused["error_description"]
        assert consent_rows(rt) == 0
        for field, value in (
            ("code_challenge", "c" * 129),
            ("resource", "https://x/" + "r" * 2000),
        ):
            answer = redirect_params(authorize(http, client_id, **{field: value}))
            assert answer["error"] == "invalid_request" and field in answer["error_description"]
        assert consent_rows(rt) == 0
        # At the bound, and with the same scope asked a thousand times (kept once), it parks.
        longest = "s" * MAX_STATE_CHARS
        ticket = ticket_of(authorize(http, client_id, state=longest, scope=" ".join(
            ["memory:read"] * 1000)))  # fmt: skip
        grant = rt.oauth.consent(ticket)
        assert grant is not None and grant.params["state"] == longest
        assert grant.scopes == ["memory:read"]
        assert consent_rows(rt) == 1


def test_consent_tickets_are_bounded_per_client_and_per_address(
    rt: Runtime, app: FastAPI, clock: ManualClock
) -> None:
    """Past a quota the oldest ticket of that client, or that address, goes: the person who
    asked last is the one at the consent page. Another address's tickets are not touched by
    this address's flood."""
    rt.oauth.consents_per_client = 2
    rt.oauth.consents_per_address = 3

    def ticket(http: SyncASGIClient, client_id: str, **params: str) -> str:
        clock.advance(seconds=1)  # one after the other, as people do
        return ticket_of(authorize(http, client_id, **params))

    with http_from(app, HERE) as here, http_from(app, ELSEWHERE) as elsewhere:
        a, b, c = register(here), register(here), register(elsewhere)
        theirs = ticket(elsewhere, c)
        a1, a2, a3 = (ticket(here, a) for _ in range(3))
        assert [live(here, t) for t in (a1, a2, a3)] == [False, True, True]  # per client
        b1 = ticket(here, b)
        b2 = ticket(here, b)  # the address's fourth live ticket: its oldest, a2, goes
        assert [live(here, t) for t in (a2, a3, b1, b2)] == [False, True, True, True]
        assert live(elsewhere, theirs)
        # The client's quota holds across addresses: b's third ticket, from elsewhere, drops
        # b's oldest (opened here), and leaves this address's other tickets alone.
        b3 = ticket(elsewhere, b)
        assert [live(here, t) for t in (a3, b1, b2, b3)] == [True, False, True, True]
        assert consent_rows(rt) == 4  # only live tickets are kept: theirs, a3, b2, b3
        flood = [ticket(here, a, state="f" * MAX_STATE_CHARS) for _ in range(40)]
        # The flood ends with its own quotas, no more: a's newest two, and b2 within this
        # address's three; elsewhere's two are as they were.
        assert [live(here, t) for t in flood[-3:]] == [False, True, True]
        assert live(here, b2) and live(elsewhere, theirs) and live(elsewhere, b3)
        assert consent_rows(rt) == 5


def test_spent_and_expired_tickets_are_deleted_by_the_next_sweep(
    rt: Runtime, clock: ManualClock
) -> None:
    """Codes and tokens stay a day past expiry (to recognise a replay); tickets need not."""
    rt.oauth.register_client("c", {"client_id": "c", "token_endpoint_auth_method": "none"})
    request = {"code_challenge": "x" * 43, "redirect_uri": REDIRECT, "state": "s"}
    used = rt.oauth.open_consent("c", [], request)
    expiring = rt.oauth.open_consent("c", [], request)
    rt.oauth.deny(used)
    clock.advance(minutes=11)
    jobs = rt.jobs
    assert jobs is not None and "oauth-sweep" in jobs.run_due()
    assert rt.store.get_oauth_grant(hash_key(used)) is None
    assert rt.store.get_oauth_grant(hash_key(expiring)) is None
    assert consent_rows(rt) == 0


# ---------------------------------------------------------------- grants of a dead key


def _tokens(rt: Runtime, http: SyncASGIClient, key: str) -> tuple[str, dict[str, Any]]:
    """Through /authorize, the consent page and /token: (client id, the tokens answer)."""
    client_id = register(http)
    verifier, challenge = pkce()
    ticket = ticket_of(authorize(http, client_id, code_challenge=challenge))
    allowed = http.post(
        "/oauth/consent", params={"ticket": ticket},
        data={"ticket": ticket, "key": key, "decision": "allow"},
    )  # fmt: skip
    assert allowed.status_code == 302, allowed.text
    code = redirect_params(allowed)["code"]
    exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                "client_id": client_id, "code_verifier": verifier}  # fmt: skip
    answer = http.post("/token", data=exchange)
    assert answer.status_code == 200, answer.text
    return client_id, answer.json()


def refresh(http: SyncASGIClient, client_id: str, token: str) -> httpx.Response:
    return http.post(
        "/token",
        data={"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id},
    )


def test_a_refresh_after_the_key_is_revoked_is_invalid_grant_and_ends_the_grant(
    rt: Runtime, app: FastAPI, clock: ManualClock
) -> None:
    clock.now = datetime.now(UTC)  # the SDK checks a code's expiry by the real clock
    owner = rt.local_principal("cli")
    made = rt.keys.create_key(owner, KeyCreate(name="agent", role="member"))
    with http_from(app, HERE) as http:
        client_id, tokens = _tokens(rt, http, made.key)
        rotated = refresh(http, client_id, tokens["refresh_token"])  # the key works: rotates
        assert rotated.status_code == 200, rotated.text
        tokens = rotated.json()
        rt.keys.revoke_key(owner, made.id)
        refused = refresh(http, client_id, tokens["refresh_token"])
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_grant"
        assert "revoked or has expired" in refused.json()["error_description"]
        for secret in (tokens["refresh_token"], tokens["access_token"]):  # the grant ended
            grant = rt.store.get_oauth_grant(hash_key(secret))
            assert grant is not None and grant.revoked_at is not None
        assert refresh(http, client_id, tokens["refresh_token"]).status_code == 400


def test_a_grant_of_an_expired_key_issues_nothing_more(rt: Runtime, clock: ManualClock) -> None:
    owner = rt.local_principal("cli")
    brief = rt.keys.create_key(
        owner, KeyCreate(name="brief", role="member", expires_at=clock.now + timedelta(hours=1))
    )
    oauth = rt.oauth
    oauth.register_client("c", {"client_id": "c", "token_endpoint_auth_method": "none"})
    request = {"code_challenge": "x" * 43, "redirect_uri": REDIRECT, "state": "s"}
    code = oauth.allow(oauth.open_consent("c", [], request), brief.key)
    assert code is not None
    tokens = oauth.exchange_code(code)
    late_code = oauth.allow(oauth.open_consent("c", [], request), brief.key)
    assert late_code is not None
    clock.advance(hours=1)
    with pytest.raises(InvalidGrantError, match="revoked or has expired"):
        oauth.exchange_refresh(tokens.refresh, [])
    with pytest.raises(InvalidGrantError):  # and the grant is over, not just this try
        oauth.exchange_refresh(tokens.refresh, [])
    with pytest.raises(InvalidGrantError, match="revoked or has expired"):
        oauth.exchange_code(late_code)  # a code minted before the key expired: nothing
    family = rt.store.get_oauth_grant(hash_key(late_code))
    assert family is not None and family.revoked_at is not None
