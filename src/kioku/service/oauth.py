"""OAuth 2.1 grants for MCP clients: the lifecycle of consent tickets, codes and tokens.

Every grant stands for an API key: a person proves who they are on the consent page by pasting
a key, and the token acts as that key's workspace and role, narrowed by the scopes granted
(``memory:read|write|admin``). Revoking or expiring the key ends the grant. Secrets (consent
tickets, codes, tokens) are random and stored as SHA-256 hashes; everything one consent
produced shares a ``family``, so a code or refresh token presented again (someone kept a copy)
ends the whole grant. The protocol itself (metadata, PKCE, redirect-URI checks, client
authentication) is the MCP SDK's, on the surface: ``kioku.mcp.oauth`` adapts it to this
service. See docs/security.md.
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kioku.clock import Clock, system_clock
from kioku.errors import ForbiddenError, UnauthorizedError
from kioku.service.keys import KeyService, hash_key
from kioku.service.principal import SCOPE_PERMISSIONS, Principal
from kioku.storage.records import OAuthGrant
from kioku.storage.shared.oauth import OAuthStore

SCOPES = ["memory:read", "memory:write", "memory:admin"]
CONSENT_TTL = timedelta(minutes=10)
CODE_TTL = timedelta(minutes=5)
ACCESS_TTL = timedelta(hours=1)
REFRESH_TTL = timedelta(days=30)
CONSENTS_PER_CLIENT = 10
"""Live consent tickets one OAuth client may hold; opening one more drops its oldest."""
CONSENTS_PER_ADDRESS = 50
"""Live consent tickets one address may hold, across clients; one more drops its oldest (an
office behind one NAT address shares it: generous, yet a stranger's flood stays bounded)."""


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def granted_scopes(principal: Principal, asked: list[str]) -> list[str]:
    """The scopes asked for (all, if none) that the key's role fully permits."""
    wanted = asked or SCOPES
    return [s for s in wanted if s in SCOPE_PERMISSIONS and all(
        principal.can(p) for p in SCOPE_PERMISSIONS[s]
    )]  # fmt: skip


class InvalidGrantError(Exception):
    """A code or refresh token that may not be exchanged (OAuth's ``invalid_grant``)."""


@dataclass(frozen=True)
class Tokens:
    """An access and a refresh token just issued (the secrets, shown once)."""

    access: str
    refresh: str
    scopes: list[str]
    expires_in: int


@dataclass(frozen=True)
class Bearer:
    """Who a bearer token (an OAuth access token or an API key) stands for, and how far."""

    principal: Principal
    client_id: str
    scopes: list[str]
    expires_at: datetime | None


class OAuthService:
    """Registered clients and the grants of their consents, over the store and API keys."""

    def __init__(
        self,
        store: OAuthStore,
        keys: KeyService,
        clock: Clock = system_clock,
        *,
        consents_per_client: int = CONSENTS_PER_CLIENT,
        consents_per_address: int = CONSENTS_PER_ADDRESS,
    ):
        self.store = store
        self.keys = keys
        self.clock = clock
        self.consents_per_client = consents_per_client
        self.consents_per_address = consents_per_address

    # ------------------------------------------------------------ clients

    def client(self, client_id: str) -> dict[str, Any] | None:
        """A registered client's metadata, as registered."""
        return self.store.get_oauth_client(client_id)

    def register_client(self, client_id: str, metadata: dict[str, Any]) -> None:
        self.store.insert_oauth_client(client_id, metadata, self.clock())

    # ------------------------------------------------------------ consent

    def open_consent(
        self,
        client_id: str,
        scopes: list[str],
        params: dict[str, Any],
        address: str | None = None,
    ) -> str:
        """Park an authorization request behind a one-time ticket (the consent page's).

        Anyone who knows a client id may ask, so the tickets are bounded: a client holds at
        most ``consents_per_client`` live ones and an address (``address``, the requester's)
        ``consents_per_address``; past either, the oldest of that client or address goes
        (the person who asked last is the one at the page), with its spent and expired ones.
        """
        ticket = new_secret("kct_")
        now = self.clock()
        grant = OAuthGrant(
            secret_hash=hash_key(ticket), kind="consent", client_id=client_id, workspace_id=None,
            key_id=None, scopes=scopes, params=params, family=str(uuid.uuid4()),
            expires_at=now + CONSENT_TTL, created_at=now,
        )  # fmt: skip
        self.store.open_consent_ticket(
            grant, address, self.consents_per_client, self.consents_per_address, now
        )
        return ticket

    def consent(self, ticket: str) -> OAuthGrant | None:
        """The request a ticket stands for, while it is unused and not expired."""
        grant = self.store.get_oauth_grant(hash_key(ticket))
        now = self.clock()
        if grant is None or grant.kind != "consent" or grant.revoked_at or grant.expires_at <= now:
            return None
        return grant

    def deny(self, ticket: str) -> None:
        """The person said no: the ticket is used up."""
        self._take(ticket, "consent")

    def allow(self, ticket: str, key: str) -> str | None:
        """The person said yes with ``key``: a one-time code for the scopes asked that the
        key's role permits, or ``None`` if the ticket was used meanwhile. A key that is not
        valid is ``UnauthorizedError`` (audited); one allowing none of the scopes,
        ``ForbiddenError``; the ticket stays usable for another try in both cases."""
        grant = self.consent(ticket)
        if grant is None:
            return None
        principal = self.keys.authenticate(key, "mcp")
        scopes = granted_scopes(principal, grant.scopes)
        if not scopes:
            raise ForbiddenError("that key's role allows none of these scopes")
        if self._take(ticket, "consent") is None:  # someone else used the ticket meanwhile
            return None
        code = new_secret("kac_")
        now = self.clock()
        self.store.insert_oauth_grants([OAuthGrant(
            secret_hash=hash_key(code), kind="code", client_id=grant.client_id,
            workspace_id=principal.workspace_id, key_id=principal.key_id, scopes=scopes,
            params=grant.params, family=grant.family, expires_at=now + CODE_TTL, created_at=now,
        )])  # fmt: skip
        return code

    # ------------------------------------------------------------ codes and refresh tokens

    def code(self, code: str, client_id: str) -> OAuthGrant | None:
        """A live code of ``client_id``. A code presented again (RFC 6749 §4.1.2): someone
        kept a copy; it is refused and what its first exchange issued is ended."""
        return self._unless_replayed(code, "code", client_id)

    def exchange_code(self, code: str) -> Tokens:
        grant = self.store.take_oauth_grant(hash_key(code), "code", self.clock())
        if grant is None or grant.revoked_at is not None:  # two exchanges raced: end both
            if grant is not None:
                self.store.revoke_oauth_family(grant.family, self.clock())
            raise InvalidGrantError("code already used")
        return self._issue(grant, grant.scopes)

    def refresh_token(self, token: str, client_id: str) -> OAuthGrant | None:
        """A live refresh token of ``client_id``; a rotated-out one that comes back (someone
        kept a copy) ends the grant."""
        return self._unless_replayed(token, "refresh", client_id)

    def exchange_refresh(self, token: str, scopes: list[str]) -> Tokens:
        """New tokens for a refresh token (rotated: the old grant ends), with the scopes
        asked for that the grant holds (all of them if none are asked)."""
        grant = self.store.take_oauth_grant(hash_key(token), "refresh", self.clock())
        if grant is None or grant.revoked_at is not None:
            if grant is not None:  # a rotated-out refresh token came back: assume theft
                self.store.revoke_oauth_family(grant.family, self.clock())
            raise InvalidGrantError("refresh token not valid")
        self.store.revoke_oauth_family(grant.family, self.clock())
        narrowed = [s for s in (scopes or grant.scopes) if s in grant.scopes]
        return self._issue(grant, narrowed)

    # ------------------------------------------------------------ bearer tokens

    def bearer(self, token: str) -> Bearer | None:
        """An OAuth access token, or an API key (so keys keep working on ``/mcp``)."""
        if token.startswith("kk_"):
            try:
                principal = self.keys.authenticate(token, "mcp")
            except UnauthorizedError:  # audited by the key service
                return None
            return Bearer(principal, principal.key_id or "", [], None)
        grant = self._live(token, "access", None)
        if grant is None or grant.workspace_id is None or grant.key_id is None:
            return None
        principal = self.keys.key_principal(grant.workspace_id, grant.key_id, "mcp")
        if principal is None:  # the key behind the grant was revoked or expired
            return None
        return Bearer(principal, grant.client_id, grant.scopes, grant.expires_at)

    def revoke(self, token: str) -> None:
        """RFC 7009: revoking either token of a grant ends the whole grant."""
        grant = self.store.get_oauth_grant(hash_key(token))
        if grant is not None:
            self.store.revoke_oauth_family(grant.family, self.clock())

    # ------------------------------------------------------------ helpers

    def _take(self, secret: str, kind: str) -> OAuthGrant | None:
        taken = self.store.take_oauth_grant(hash_key(secret), kind, self.clock())
        return None if taken is None or taken.revoked_at is not None else taken

    def _unless_replayed(self, secret: str, kind: str, client_id: str) -> OAuthGrant | None:
        used = self.store.get_oauth_grant(hash_key(secret))
        if used is not None and used.kind == kind and used.revoked_at is not None:
            self.store.revoke_oauth_family(used.family, self.clock())
            return None
        return self._live(secret, kind, client_id)

    def _live(self, secret: str, kind: str, client_id: str | None) -> OAuthGrant | None:
        """A grant of ``kind`` that is not revoked nor expired (of ``client_id``, if given)."""
        grant = self.store.get_oauth_grant(hash_key(secret))
        if grant is None or grant.kind != kind or grant.revoked_at is not None:
            return None
        if client_id is not None and grant.client_id != client_id:
            return None
        return grant if grant.expires_at > self.clock() else None

    def _issue(self, source: OAuthGrant, scopes: list[str]) -> Tokens:
        """New tokens for a code or refresh token just taken, if the key behind the grant
        still works; a revoked or expired key ends the grant (``InvalidGrantError``)."""
        now = self.clock()
        workspace_id, key_id = source.workspace_id, source.key_id
        key = None if workspace_id is None or key_id is None else (
            self.keys.key_principal(workspace_id, key_id, "mcp")
        )  # fmt: skip
        if key is None:
            self.store.revoke_oauth_family(source.family, now)
            raise InvalidGrantError("the API key behind this grant was revoked or has expired")
        access, refresh = new_secret("kat_"), new_secret("krt_")
        common = {
            "client_id": source.client_id, "workspace_id": source.workspace_id,
            "key_id": source.key_id, "scopes": scopes, "params": {}, "family": source.family,
            "created_at": now,
        }  # fmt: skip
        self.store.insert_oauth_grants([
            OAuthGrant(secret_hash=hash_key(access), kind="access",
                       expires_at=now + ACCESS_TTL, **common),
            OAuthGrant(secret_hash=hash_key(refresh), kind="refresh",
                       expires_at=now + REFRESH_TTL, **common),
        ])  # fmt: skip
        return Tokens(access, refresh, scopes, int(ACCESS_TTL.total_seconds()))
