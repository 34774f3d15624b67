"""Bearer authentication for the Remote MCP endpoint: what a verified token carries about its
principal (``principal_claims``), and the tool-side hook that turns it back into a
``Principal``. Tokens and API keys are checked by ``kioku.service.oauth`` (``bearer``)."""

from __future__ import annotations

from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context

from kioku.errors import UnauthorizedError
from kioku.service.principal import Principal


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
