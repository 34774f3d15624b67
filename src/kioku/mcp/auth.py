"""Bearer authentication for the Remote MCP endpoint: API keys checked by the key service, and
the tool-side hook that turns the verified token back into a ``Principal``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio.to_thread
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context

from kioku.errors import UnauthorizedError
from kioku.runtime import Runtime
from kioku.service.principal import Principal


class KeyTokenVerifier:
    """The MCP SDK's ``TokenVerifier`` over kioku API keys (``Authorization: Bearer kk_...``).

    A refused key is audited by the key service; the SDK answers 401 with
    ``WWW-Authenticate``. The principal travels in the token's claims to the tools.
    """

    def __init__(self, runtime: Callable[[], Runtime]) -> None:
        self.runtime = runtime

    async def verify_token(self, token: str) -> AccessToken | None:
        check = functools.partial(self.runtime().keys.authenticate, token, "mcp")
        try:
            principal = await anyio.to_thread.run_sync(check)
        except UnauthorizedError:
            return None
        return AccessToken(
            token=token,
            client_id=principal.key_id or "local",
            scopes=[],
            claims=principal_claims(principal),
        )


def principal_claims(principal: Principal) -> dict[str, Any]:
    """What a verified token carries to the tools about its principal."""
    allowed = principal.allowed_context_ids
    return {
        "workspace_id": principal.workspace_id,
        "role": principal.role,
        "context_ids": None if allowed is None else sorted(allowed),
        "key_id": principal.key_id,
    }


def token_principal(ctx: Context) -> Principal:
    """The caller of a tool on an authenticated endpoint, from its verified token."""
    token = get_access_token()
    if token is None or not token.claims:  # the SDK's middleware lets no such request through
        raise UnauthorizedError("an API key is required: send 'Authorization: Bearer kk_...'")
    context_ids = token.claims.get("context_ids")
    return Principal(
        workspace_id=token.claims["workspace_id"],
        role=token.claims["role"],
        channel="mcp",
        allowed_context_ids=None if context_ids is None else frozenset(context_ids),
        key_id=token.claims.get("key_id"),
        scopes=frozenset(token.scopes) if token.scopes else None,
    )
