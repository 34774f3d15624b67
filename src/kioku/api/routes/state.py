"""``/contexts/{id}/state``: the TTL key/value lane for an agent loop's run-state."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.models import State, StatePage, StateSet

router = APIRouter(prefix="/contexts/{context_id}/state", tags=["state"])


@router.put("/{key}", operation_id="set_state")
def set_state(
    context_id: str, key: str, body: StateSet, runtime: RuntimeDep, principal: PrincipalDep
) -> State:
    """Upsert a JSON value under ``key`` (last writer wins). ``ttl_seconds`` defaults to 24 h and
    is clamped to [1 s, 30 days]; send ``null`` explicitly to keep the key forever."""
    return runtime.state.set_state(principal, context_id, key, body)


@router.get("/{key}", operation_id="get_state")
def get_state(context_id: str, key: str, runtime: RuntimeDep, principal: PrincipalDep) -> State:
    """One live key; an expired key answers 404 like a missing one."""
    return runtime.state.get_state(principal, context_id, key)


@router.get("", operation_id="list_state")
def list_state(
    context_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> StatePage:
    """Every live key of the context, in key order: pass ``next_cursor`` back as ``cursor``."""
    return runtime.state.list_state(principal, context_id, cursor=cursor, limit=limit)


@router.delete("/{key}", status_code=204, operation_id="delete_state")
def delete_state(
    context_id: str, key: str, runtime: RuntimeDep, principal: PrincipalDep
) -> Response:
    """Remove a key; 404 if it is missing or expired."""
    runtime.state.delete_state(principal, context_id, key)
    return Response(status_code=204)
