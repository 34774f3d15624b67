"""Every role against every operation (REST and MCP), generated from the operation table and
the permission each service operation declares."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import pytest
from mcp import Client as MCPClient

from kioku.mcp import build_mcp
from kioku.service.guard import permission_of
from kioku.service.principal import Principal
from tests.auth.conftest import Tenants
from tests.auth.operations import OPERATIONS
from tests.test_parity import SERVICES

ROLES = ("viewer", "member", "admin", "owner", "connector")
PERMISSIONS = {
    name: permission_of(method)
    for service in SERVICES
    for name, method in inspect.getmembers(service, inspect.isfunction)
    if permission_of(method) is not None
}
EXPECTED = {  # the role table of the issue, written out: viewer reads and gives feedback...
    "viewer": {"read", "feedback"},
    "member": {"read", "feedback", "write"},
    "admin": {"read", "feedback", "write", "admin", "ingest"},
    "owner": {"read", "feedback", "write", "admin", "ingest"},
    "connector": {"ingest"},  # ...and a connector key only ingests
}


def test_every_operation_declares_a_permission() -> None:
    assert set(PERMISSIONS) == set(OPERATIONS)
    assert {PERMISSIONS[name] for name in ("recall", "load_pinned", "get_state")} == {"read"}
    assert PERMISSIONS["feedback"] == "feedback"
    assert {PERMISSIONS[n] for n in ("remember", "set_state", "forget")} == {"write"}
    assert {PERMISSIONS[n] for n in ("create_context", "create_key", "list_audit")} == {"admin"}
    assert {PERMISSIONS[n] for n in ("purge", "purge_context", "purge_source")} == {"admin"}
    assert PERMISSIONS["ingest"] == "ingest"


def allowed(role: str, name: str) -> bool:
    return PERMISSIONS[name] in EXPECTED[role]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_rest_role_permissions(tenants: Tenants, role: str, name: str) -> None:
    t = tenants
    method, path, body = OPERATIONS[name].rest(t.ids)
    if name == "create_context":
        body = {"name": "gamma"}
    answer = t.client.request(method, f"/api/v1{path}", json=body, headers=t.as_(f"A:{role}"))
    if allowed(role, name):
        assert answer.status_code not in (401, 403), answer.text
        assert answer.status_code < 300 or name == "revoke_key", answer.text
    else:
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"]["code"] == "forbidden"
        denied = t.runtime.audit.list_audit(t.a_owner).items[0]
        assert (denied.action, denied.outcome) == (name, "denied")


@pytest.mark.parametrize("role", ("viewer", "member"))
@pytest.mark.parametrize("name", sorted(n for n, op in OPERATIONS.items() if op.mcp))
def test_mcp_role_permissions(tenants: Tenants, role: str, name: str) -> None:
    t = tenants
    principal: Principal = t.runtime.keys.authenticate(t.keys[f"A:{role}"], "mcp")
    mcp = OPERATIONS[name].mcp
    assert mcp is not None
    tool, arguments = mcp(t.ids)
    if name == "create_context":
        arguments = {"name": "gamma"}

    async def call() -> Any:
        async with MCPClient(build_mcp(t.runtime, principal_of=lambda ctx: principal)) as client:
            return await client.call_tool(tool, arguments)

    result = anyio.run(call)
    text = result.content[0].text
    if allowed(role, name):
        assert not result.is_error or "forbidden" not in text, text
    else:
        assert result.is_error and "forbidden" in text, text
