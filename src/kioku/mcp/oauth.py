"""OAuth 2.1 for MCP clients: kioku as the authorization server, behind the MCP SDK's auth
endpoints (metadata, dynamic client registration, /authorize, /token with PKCE, /revoke).

The SDK does the protocol (PKCE verification, redirect-URI checks, client authentication);
this provider adapts it to ``kioku.service.oauth``, which keeps the grants and their rules
(every grant stands for an API key; codes and tokens are one-time and rotated; a replay ends
the grant). Only public clients register (PKCE, no client secret to store).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
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

from kioku.mcp.auth import principal_claims
from kioku.mcp.registration import check_registration, usable_redirect_uris
from kioku.runtime import Runtime
from kioku.service.oauth import (
    ACCESS_TTL,
    CODE_TTL,
    SCOPES,
    InvalidGrantError,
    OAuthService,
    Tokens,
    new_secret,
)

__all__ = ["ACCESS_TTL", "CODE_TTL", "CONSENT_PATH", "SCOPES", "KiokuOAuthProvider", "new_secret"]

CONSENT_PATH = "/oauth/consent"
T = TypeVar("T")


class KiokuOAuthProvider:
    """The SDK's ``OAuthAuthorizationServerProvider`` over kioku's OAuth service."""

    def __init__(self, runtime: Callable[[], Runtime], base_url: str) -> None:
        self.runtime = runtime
        self.base_url = base_url.rstrip("/")

    @property
    def oauth(self) -> OAuthService:
        return self.runtime().oauth

    async def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a blocking service call off the event loop."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))

    # ------------------------------------------------------------ clients

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        metadata = await self.run_sync(self.oauth.client, client_id)
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
        await self.run_sync(self.oauth.register_client, client_info.client_id, metadata)

    # ------------------------------------------------------------ consent and codes

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Park the request behind a one-time ticket; the person decides on the consent page."""
        request = {
            "state": params.state, "code_challenge": params.code_challenge,
            "redirect_uri": str(params.redirect_uri),
            "redirect_uri_provided_explicitly": params.redirect_uri_provided_explicitly,
            "resource": params.resource,
        }  # fmt: skip
        ticket = await self.run_sync(
            self.oauth.open_consent, client.client_id or "", params.scopes or [], request
        )
        return f"{self.base_url}{CONSENT_PATH}?ticket={ticket}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        grant = await self.run_sync(self.oauth.code, authorization_code, client.client_id or "")
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
        try:
            tokens = await self.run_sync(self.oauth.exchange_code, authorization_code.code)
        except InvalidGrantError as exc:
            raise TokenError(error="invalid_grant", error_description=str(exc)) from None
        return oauth_token(tokens)

    # ------------------------------------------------------------ tokens

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        grant = await self.run_sync(self.oauth.refresh_token, refresh_token, client.client_id or "")
        if grant is None:
            return None
        return RefreshToken(
            token=refresh_token, client_id=grant.client_id, scopes=grant.scopes,
            expires_at=int(grant.expires_at.timestamp()),
        )  # fmt: skip

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        try:
            tokens = await self.run_sync(self.oauth.exchange_refresh, refresh_token.token, scopes)
        except InvalidGrantError as exc:
            raise TokenError(error="invalid_grant", error_description=str(exc)) from None
        return oauth_token(tokens)

    async def load_access_token(self, token: str) -> AccessToken | None:
        """An OAuth access token, or an API key (so keys keep working on ``/mcp``)."""
        bearer = await self.run_sync(self.oauth.bearer, token)
        if bearer is None:
            return None
        expires_at = None if bearer.expires_at is None else int(bearer.expires_at.timestamp())
        return AccessToken(
            token=token, client_id=bearer.client_id, scopes=bearer.scopes, expires_at=expires_at,
            claims=principal_claims(bearer.principal),
        )  # fmt: skip

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """RFC 7009: revoking either token of a grant ends the whole grant."""
        await self.run_sync(self.oauth.revoke, token.token)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        """Enterprise identity assertions (SEP-990) are not accepted."""
        raise TokenError(error="unsupported_grant_type", error_description="not supported")


def oauth_token(tokens: Tokens) -> OAuthToken:
    """Tokens just issued, as the token endpoint answers them."""
    return OAuthToken(
        access_token=tokens.access, token_type="Bearer", expires_in=tokens.expires_in,
        scope=" ".join(tokens.scopes), refresh_token=tokens.refresh,
    )  # fmt: skip
