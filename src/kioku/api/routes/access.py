"""``/keys`` and ``/audit``: API keys of the workspace and its audit log (admins)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.models import ApiKeyCreated, ApiKeyPage, AuditPage, KeyCreate

router = APIRouter(tags=["access"])


@router.post("/keys", status_code=201, operation_id="create_key")
def create_key(body: KeyCreate, runtime: RuntimeDep, principal: PrincipalDep) -> ApiKeyCreated:
    """Create an API key (role at most yours). The secret `key` is in this answer only."""
    return runtime.keys.create_key(principal, body)


@router.get("/keys", operation_id="list_keys")
def list_keys(runtime: RuntimeDep, principal: PrincipalDep) -> ApiKeyPage:
    """Every key of the workspace, without secrets (a key with a context allow-list: the keys
    confined to its contexts)."""
    return runtime.keys.list_keys(principal)


@router.delete("/keys/{key_id}", status_code=204, operation_id="revoke_key")
def revoke_key(key_id: str, runtime: RuntimeDep, principal: PrincipalDep) -> Response:
    """Revoke a key: it stops working at once."""
    runtime.keys.revoke_key(principal, key_id)
    return Response(status_code=204)


@router.get("/audit", operation_id="list_audit")
def list_audit(
    runtime: RuntimeDep,
    principal: PrincipalDep,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> AuditPage:
    """The audit log, newest first: writes, deletes, key changes and denied attempts (a key
    with a context allow-list: the lines about its contexts and the keys it manages)."""
    return runtime.audit.list_audit(principal, cursor=cursor, limit=limit)
