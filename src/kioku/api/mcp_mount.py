"""The Remote MCP endpoint at ``/mcp``: streamable HTTP in the same app (one process, one
runtime) as REST."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl

from kioku.api.mcp_calls import McpCallMetrics, McpCalls
from kioku.api.mcp_get import NoListenStream
from kioku.api.mcp_sessions import SessionIds
from kioku.api.metrics import Metrics
from kioku.api.registration_limit import RegistrationGate
from kioku.mcp import build_mcp
from kioku.mcp.auth import token_principal
from kioku.mcp.consent import ConsentPage
from kioku.mcp.oauth import CONSENT_PATH, SCOPES, KiokuOAuthProvider, RequesterAddress
from kioku.mcp.revocation import PublicClientRevocation
from kioku.mcp.server import TOOLS
from kioku.runtime import Runtime
from kioku.settings import Settings

MCP_PATH = "/mcp"
# Host and Origin are checked for every route by ``kioku.api.hosts.HostGuard`` (one rule for
# REST, the UI and /mcp), so the SDK's own check is off; it still checks POST's Content-Type.
_NO_SDK_HOST_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def mount_mcp(app: FastAPI, settings: Settings, metrics: Metrics) -> MCPServer[Any]:
    """Mount the MCP app on ``app`` (call it last: the mount answers every path no earlier
    route took); the caller's lifespan must run ``session_manager.run()``. Its messages and
    tool calls are counted in ``metrics`` (``kioku.api.mcp_calls``).

    Stateless JSON mode: every request stands alone (no server-side session), so any replica
    behind a load balancer can answer it, and results come back as one JSON body. Outside
    ``--dev`` every request needs a bearer API key (the SDK's auth middleware checks it).
    """

    def runtime() -> Runtime:
        return app.state.runtime

    if settings.server.dev:
        mcp = build_mcp(runtime)
    else:
        # OAuth 2.1 (metadata, registration, PKCE, refresh, revocation) for MCP clients that
        # expect it; API keys work as bearer tokens too (the provider checks both).
        provider = KiokuOAuthProvider(runtime, settings.server.base_url)
        auth = AuthSettings(
            issuer_url=AnyHttpUrl(settings.server.base_url),
            resource_server_url=AnyHttpUrl(f"{settings.server.base_url}{MCP_PATH}"),
            validate_token_resource=False,  # grants are bound to a workspace, not a URL
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=SCOPES
            ),
            revocation_options=RevocationOptions(enabled=True),
        )
        mcp = build_mcp(
            runtime, principal_of=token_principal, auth=auth, auth_server_provider=provider
        )
        mcp.custom_route(CONSENT_PATH, methods=["GET", "POST"])(ConsentPage(provider).handle)
    http = mcp.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=_NO_SDK_HOST_CHECK,
        max_request_body_size=settings.limits.max_request_bytes,
    )
    measured = McpCalls(
        NoListenStream(http, MCP_PATH),
        MCP_PATH,
        McpCallMetrics(metrics.registry),
        (fn.__name__ for fn in TOOLS),
    )
    gated = RegistrationGate(
        SessionIds(measured, MCP_PATH),
        per_hour=settings.limits.oauth_registrations_per_hour,
    )
    app.mount("/", PublicClientRevocation(RequesterAddress(gated)))
    return mcp
