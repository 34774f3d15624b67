"""The OAuth provider's clock-bound rules, with the clock moved by hand (no waiting an hour)."""

from __future__ import annotations

from datetime import timedelta

import anyio
from mcp.server.auth.provider import AuthorizationParams
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from kioku.mcp.oauth import ACCESS_TTL, KiokuOAuthProvider, new_secret
from kioku.models import KeyCreate
from kioku.runtime import Runtime
from kioku.service.jobs import UNUSED_CLIENT_RETENTION
from kioku.service.keys import hash_key
from kioku.settings import Settings
from kioku.storage.records import OAuthGrant
from tests.conftest import ManualClock


def test_access_tokens_expire_and_consent_tickets_are_one_time(
    runtime: Runtime, clock: ManualClock
) -> None:
    owner = runtime.local_principal("cli")
    key = runtime.keys.create_key(owner, KeyCreate(name="k", role="member"))
    provider = KiokuOAuthProvider(lambda: runtime, "http://127.0.0.1:8765")
    client = OAuthClientInformationFull(
        client_id="c1", redirect_uris=[AnyUrl("http://127.0.0.1:9/cb")],
        token_endpoint_auth_method="none",
    )  # fmt: skip

    async def scenario() -> None:
        await provider.register_client(client)
        url = await provider.authorize(client, AuthorizationParams(
            state="s", scopes=["memory:read"], code_challenge="x" * 43,
            redirect_uri=AnyUrl("http://127.0.0.1:9/cb"), redirect_uri_provided_explicitly=True,
        ))  # fmt: skip
        ticket = url.split("ticket=")[1]
        assert runtime.store.take_oauth_grant(hash_key(ticket), "consent", clock.now) is not None
        again = runtime.store.take_oauth_grant(hash_key(ticket), "consent", clock.now)
        assert again is not None and again.revoked_at is not None  # the second use sees it used
        code = new_secret("kac_")
        runtime.store.insert_oauth_grants([OAuthGrant(
            secret_hash=hash_key(code), kind="code", client_id="c1",
            workspace_id=owner.workspace_id, key_id=key.id, scopes=["memory:read"],
            params={"code_challenge": "x" * 43, "redirect_uri": "http://127.0.0.1:9/cb",
                    "redirect_uri_provided_explicitly": True},
            family="f1", expires_at=clock.now + timedelta(minutes=5), created_at=clock.now,
        )])  # fmt: skip
        loaded = await provider.load_authorization_code(client, code)
        assert loaded is not None
        tokens = await provider.exchange_authorization_code(client, loaded)
        access = await provider.load_access_token(tokens.access_token)
        assert access is not None and access.scopes == ["memory:read"]
        assert access.claims and access.claims["role"] == "member"
        clock.advance(seconds=ACCESS_TTL.total_seconds())
        assert await provider.load_access_token(tokens.access_token) is None  # expired
        refresh = tokens.refresh_token
        assert (
            refresh is not None and await provider.load_refresh_token(client, refresh) is not None
        )

    anyio.run(scenario)


def test_the_oauth_sweep_job_forgets_clients_never_used(
    runtime: Runtime, clock: ManualClock, settings: Settings
) -> None:
    """Registration is open to anyone: a client that never got a grant is deleted a day
    after it registered, by the background job every replica runs (one wins each period)."""
    provider = KiokuOAuthProvider(lambda: runtime, "http://127.0.0.1:8765")
    client = OAuthClientInformationFull(
        client_id="idle", redirect_uris=[AnyUrl("http://127.0.0.1:9/cb")],
        token_endpoint_auth_method="none",
    )  # fmt: skip
    anyio.run(provider.register_client, client)
    jobs = runtime.jobs
    assert jobs is not None
    clock.advance(seconds=UNUSED_CLIENT_RETENTION.total_seconds() - 60)
    assert "oauth-sweep" in jobs.run_due()
    assert anyio.run(provider.get_client, "idle") is not None
    clock.advance(seconds=settings.jobs.oauth_sweep_seconds + 120)
    assert "oauth-sweep" in jobs.run_due()
    assert anyio.run(provider.get_client, "idle") is None


def test_a_redirect_uri_stored_before_the_rules_is_never_used(runtime: Runtime) -> None:
    """``/authorize`` checks the client's redirect URIs again: one registered before the
    rules existed (here written straight to the store) is dropped, so the SDK refuses it."""
    provider = KiokuOAuthProvider(lambda: runtime, "http://127.0.0.1:8765")
    runtime.store.insert_oauth_client(
        "legacy",
        {"client_id": "legacy", "token_endpoint_auth_method": "none",
         "redirect_uris": ["http://attacker.example/cb", "http://127.0.0.1:9/cb"]},
        runtime.clock(),
    )  # fmt: skip
    client = anyio.run(provider.get_client, "legacy")
    assert client is not None
    assert [str(uri) for uri in client.redirect_uris or []] == ["http://127.0.0.1:9/cb"]
