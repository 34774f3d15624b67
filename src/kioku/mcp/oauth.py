"""OAuth 2.1 for MCP clients: kioku as the authorization server, behind the MCP SDK's auth
endpoints (metadata, dynamic client registration, /authorize, /token with PKCE, /revoke).

The SDK does the protocol (PKCE verification, redirect-URI checks, client authentication);
this provider stores and checks grants. Every grant stands for an API key: a person proves
who they are on the consent page by pasting a key, and the token acts as that key's workspace
and role, narrowed by the scopes granted (``memory:read|write|admin``). Revoking or expiring
the key ends the grant. Only public clients register (PKCE, no client secret to store).
Secrets (consent tickets, codes, tokens) are random and stored as SHA-256 hashes.
"""

from __future__ import annotations

import functools
import secrets
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from kioku.errors import UnauthorizedError
from kioku.mcp.auth import principal_claims
from kioku.mcp.registration import check_registration, usable_redirect_uris
from kioku.runtime import Runtime
from kioku.service.keys import hash_key
from kioku.storage.records import OAuthGrant

SCOPES = ["memory:read", "memory:write", "memory:admin"]
CONSENT_TTL = timedelta(minutes=10)
CODE_TTL = timedelta(minutes=5)
ACCESS_TTL = timedelta(hours=1)
REFRESH_TTL = timedelta(days=30)
CONSENT_PATH = "/oauth/consent"
T = TypeVar("T")


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


class KiokuOAuthProvider:
    """The SDK's ``OAuthAuthorizationServerProvider`` over kioku's store and API keys."""

    def __init__(self, runtime: Callable[[], Runtime], base_url: str) -> None:
        self.runtime = runtime
        self.base_url = base_url.rstrip("/")

    async def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking store call off the event loop."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))

    def now(self) -> datetime:
        """The runtime's clock (a test moves it by hand)."""
        return self.runtime().clock()

    # ------------------------------------------------------------ clients

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        metadata = await self.run_sync(self.runtime().store.get_oauth_client, client_id)
        if metadata is None:
            return None
        # Only redirect URIs that may receive codes now (one stored under older rules is not).
        return usable_redirect_uris(OAuthClientInformationFull.model_validate(metadata))

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        if client_info.token_endpoint_auth_method != "none":
            raise RegistrationError(
                error="invalid_client_metadata",
                error_description="kioku registers public clients only: use "
                "token_endpoint_auth_method 'none' (with PKCE)",
            )
        check_registration(client_info)
        metadata = client_info.model_dump(mode="json", exclude_none=True)
        assert client_info.client_id is not None
        await self.run_sync(
            self.runtime().store.insert_oauth_client, client_info.client_id, metadata, self.now()
        )

    # ------------------------------------------------------------ consent and codes

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Park the request behind a one-time ticket; the person decides on the consent page."""
        ticket = new_secret("kct_")
        now = self.now()
        grant = OAuthGrant(
            secret_hash=hash_key(ticket), kind="consent", client_id=client.client_id or "",
            workspace_id=None, key_id=None, scopes=params.scopes or [],
            params={
                "state": params.state, "code_challenge": params.code_challenge,
                "redirect_uri": str(params.redirect_uri),
                "redirect_uri_provided_explicitly": params.redirect_uri_provided_explicitly,
                "resource": params.resource,
            },
            family=str(uuid.uuid4()), expires_at=now + CONSENT_TTL, created_at=now,
        )  # fmt: skip
        await self.run_sync(self.runtime().store.insert_oauth_grants, [grant])
        return f"{self.base_url}{CONSENT_PATH}?ticket={ticket}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        store = self.runtime().store
        used = await self.run_sync(store.get_oauth_grant, hash_key(authorization_code))
        if used is not None and used.kind == "code" and used.revoked_at is not None:
            # A code presented again (RFC 6749 §4.1.2): someone kept a copy. Refuse it and
            # end what its first exchange issued (the tokens share its family).
            await self.run_sync(store.revoke_oauth_family, used.family, self.now())
            return None
        grant = await self._live(authorization_code, "code", client)
        if grant is None:
            return None
        return AuthorizationCode(
            code=authorization_code, scopes=grant.scopes,
            expires_at=grant.expires_at.timestamp(), client_id=grant.client_id,
            code_challenge=grant.params["code_challenge"],
            redirect_uri=AnyUrl(grant.params["redirect_uri"]),
            redirect_uri_provided_explicitly=grant.params["redirect_uri_provided_explicitly"],
            resource=grant.params.get("resource"),
        )  # fmt: skip

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        store = self.runtime().store
        grant = await self.run_sync(
            store.take_oauth_grant, hash_key(authorization_code.code), "code", self.now()
        )
        if grant is None or grant.revoked_at is not None:  # two exchanges raced: end both
            if grant is not None:
                await self.run_sync(store.revoke_oauth_family, grant.family, self.now())
            raise TokenError(error="invalid_grant", error_description="code already used")
        return await self._issue(grant, grant.scopes)

    # ------------------------------------------------------------ tokens

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        store = self.runtime().store
        grant = await self.run_sync(store.get_oauth_grant, hash_key(refresh_token))
        if grant is not None and grant.kind == "refresh" and grant.revoked_at is not None:
            # A rotated-out refresh token came back: someone kept a copy. End the grant.
            await self.run_sync(store.revoke_oauth_family, grant.family, self.now())
            return None
        grant = await self._live(refresh_token, "refresh", client)
        if grant is None:
            return None
        return RefreshToken(
            token=refresh_token, client_id=grant.client_id, scopes=grant.scopes,
            expires_at=int(grant.expires_at.timestamp()),
        )  # fmt: skip

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        store = self.runtime().store
        grant = await self.run_sync(
            store.take_oauth_grant, hash_key(refresh_token.token), "refresh", self.now()
        )
        if grant is None or grant.revoked_at is not None:
            if grant is not None:  # a rotated-out refresh token came back: assume theft
                await self.run_sync(store.revoke_oauth_family, grant.family, self.now())
            raise TokenError(error="invalid_grant", error_description="refresh token not valid")
        await self.run_sync(store.revoke_oauth_family, grant.family, self.now())
        narrowed = [s for s in (scopes or grant.scopes) if s in grant.scopes]
        return await self._issue(grant, narrowed)

    async def load_access_token(self, token: str) -> AccessToken | None:
        """An OAuth access token, or an API key (so keys keep working on ``/mcp``)."""
        runtime = self.runtime()
        if token.startswith("kk_"):
            try:
                principal = await self.run_sync(runtime.keys.authenticate, token, "mcp")
            except UnauthorizedError:
                return None
            return AccessToken(
                token=token, client_id=principal.key_id or "", scopes=[],
                claims=principal_claims(principal),
            )  # fmt: skip
        grant = await self._live(token, "access", None)
        if grant is None or grant.workspace_id is None or grant.key_id is None:
            return None
        principal = await self.run_sync(
            runtime.keys.key_principal, grant.workspace_id, grant.key_id, "mcp"
        )
        if principal is None:  # the key behind the grant was revoked or expired
            return None
        return AccessToken(
            token=token, client_id=grant.client_id, scopes=grant.scopes,
            expires_at=int(grant.expires_at.timestamp()), claims=principal_claims(principal),
        )  # fmt: skip

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """RFC 7009: revoking either token of a grant ends the whole grant."""
        store = self.runtime().store
        grant = await self.run_sync(store.get_oauth_grant, hash_key(token.token))
        if grant is not None:
            await self.run_sync(store.revoke_oauth_family, grant.family, self.now())

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        """Enterprise identity assertions (SEP-990) are not accepted."""
        raise TokenError(error="unsupported_grant_type", error_description="not supported")

    # ------------------------------------------------------------ helpers

    async def _live(
        self, secret: str, kind: str, client: OAuthClientInformationFull | None
    ) -> OAuthGrant | None:
        grant = await self.run_sync(self.runtime().store.get_oauth_grant, hash_key(secret))
        if grant is None or grant.kind != kind or grant.revoked_at is not None:
            return None
        if client is not None and grant.client_id != client.client_id:
            return None
        return grant if grant.expires_at > self.now() else None

    async def _issue(self, source: OAuthGrant, scopes: list[str]) -> OAuthToken:
        access, refresh = new_secret("kat_"), new_secret("krt_")
        now = self.now()
        common = {
            "client_id": source.client_id, "workspace_id": source.workspace_id,
            "key_id": source.key_id, "scopes": scopes, "params": {}, "family": source.family,
            "created_at": now,
        }  # fmt: skip
        await self.run_sync(
            self.runtime().store.insert_oauth_grants,
            [
                OAuthGrant(secret_hash=hash_key(access), kind="access",
                           expires_at=now + ACCESS_TTL, **common),
                OAuthGrant(secret_hash=hash_key(refresh), kind="refresh",
                           expires_at=now + REFRESH_TTL, **common),
            ],
        )  # fmt: skip
        return OAuthToken(
            access_token=access, token_type="Bearer",
            expires_in=int(ACCESS_TTL.total_seconds()), scope=" ".join(scopes),
            refresh_token=refresh,
        )  # fmt: skip
