"""OAuth 2.1 for MCP clients: kioku as the authorization server, behind the MCP SDK's auth
endpoints (metadata, dynamic client registration, /authorize, /token with PKCE, /revoke).

The SDK does the protocol (PKCE verification, redirect-URI checks, client authentication);
this provider adapts it to ``kioku.service.oauth``, which keeps the grants and their rules
(every grant stands for an API key; codes and tokens are one-time and rotated; a replay ends
the grant). Only public clients register (PKCE, no client secret to store). What
``/authorize`` parks behind a consent ticket is bounded: ``state`` and the other fields in
length here, the number of live tickets per client and per address by the service.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, TypeVar

import anyio.to_thread
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    IdentityAssertionParams,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl
from starlette.types import ASGIApp, Receive, Scope, Send

from kioku.mcp.auth import principal_claims
from kioku.mcp.registration import (
    MAX_REDIRECT_URI_CHARS,
    check_registration,
    usable_redirect_uris,
)
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

__all__ = [
    "ACCESS_TTL", "CODE_TTL", "CONSENT_PATH", "MAX_STATE_CHARS", "REQUESTER", "SCOPES",
    "KiokuOAuthProvider", "RequesterAddress", "new_secret",
]  # fmt: skip

CONSENT_PATH = "/oauth/consent"
T = TypeVar("T")

MAX_STATE_CHARS = 1024
"""The longest ``state`` an authorization request may carry. OAuth sets no length; clients
send a random nonce (the MCP SDKs and Authlib: 30 to 43 characters) or a small encoded
blob. It is stored with the consent ticket, so it is bounded like everything a stranger
parks there."""
MAX_CODE_CHALLENGE_CHARS = 128
"""RFC 7636 §4.2: an S256 challenge is 43 characters, a verifier at most 128."""
MAX_RESOURCE_CHARS = MAX_REDIRECT_URI_CHARS
"""An RFC 8707 resource indicator is a URI, bounded like a redirect URI."""

REQUESTER: ContextVar[str | None] = ContextVar("kioku_oauth_requester", default=None)
"""The address of the client whose ``/authorize`` request is being answered (set by
``RequesterAddress``): consent tickets are bounded per address."""


def authorization_problem(params: AuthorizationParams) -> str | None:
    """What makes an authorization request too big to park behind a ticket, or ``None``."""
    if params.state is not None and len(params.state) > MAX_STATE_CHARS:
        return f"state is longer than {MAX_STATE_CHARS} characters"
    if len(params.code_challenge) > MAX_CODE_CHALLENGE_CHARS:
        return f"code_challenge is longer than {MAX_CODE_CHALLENGE_CHARS} characters"
    if params.resource is not None and len(params.resource) > MAX_RESOURCE_CHARS:
        return f"resource is longer than {MAX_RESOURCE_CHARS} characters"
    return None


class RequesterAddress:
    """ASGI middleware: on ``/authorize``, tell the provider the client's address
    (``REQUESTER``), the same one the rate limits count by."""

    def __init__(self, app: ASGIApp, path: str = "/authorize") -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        token = REQUESTER.set(client[0] if client else "unknown")
        try:
            await self.app(scope, receive, send)
        finally:
            REQUESTER.reset(token)


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
        """Park the request behind a one-time ticket; the person decides on the consent page.
        An over-long ``state`` (or challenge, or resource) is refused (``invalid_request``)
        before anything is stored; a scope asked twice is kept once."""
        problem = authorization_problem(params)
        if problem is not None:
            raise AuthorizeError(error="invalid_request", error_description=problem)
        request = {
            "state": params.state, "code_challenge": params.code_challenge,
            "redirect_uri": str(params.redirect_uri),
            "redirect_uri_provided_explicitly": params.redirect_uri_provided_explicitly,
            "resource": params.resource,
        }  # fmt: skip
        scopes = list(dict.fromkeys(params.scopes or []))
        ticket = await self.run_sync(
            self.oauth.open_consent, client.client_id or "", scopes, request, REQUESTER.get()
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
