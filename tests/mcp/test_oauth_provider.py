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
from kioku.service.keys import hash_key
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
