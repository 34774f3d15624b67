"""``/contexts/{id}/memories``: remember, batch, list, get, update, forget (by id or query)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.api.errors import query_model
from kioku.models import (
    BatchCreate,
    BatchResult,
    DeliveryMode,
    ForgetQuery,
    ForgetResult,
    Memory,
    MemoryCreate,
    MemoryDetail,
    MemoryPage,
    MemoryUpdate,
    RecallFilters,
    SourceType,
    TrustTier,
)

router = APIRouter(prefix="/contexts/{context_id}/memories", tags=["memories"])


@router.post("", status_code=201, operation_id="remember")
def remember(
    context_id: str,
    body: MemoryCreate,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    wait: Annotated[bool, Query(description="Return after the vector is stored.")] = False,
) -> Memory:
    """Write one memory. ``source_type`` is stamped by the server (``api`` here)."""
    return runtime.memories.remember(principal, context_id, body, wait=wait)


@router.post("/batch", operation_id="remember_batch")
def remember_batch(
    context_id: str, body: BatchCreate, runtime: RuntimeDep, principal: PrincipalDep
) -> BatchResult:
    """Write up to 100 memories with a result per item (``atomic``: all or nothing)."""
    return runtime.memories.remember_batch(principal, context_id, body)


@router.post("/forget", operation_id="forget_by_query")
def forget_by_query(
    context_id: str, body: ForgetQuery, runtime: RuntimeDep, principal: PrincipalDep
) -> ForgetResult:
    """Forget what a query or filters match, in two calls. Without ``confirmation``: a
    preview, nothing is forgotten; it lists exactly what would be and gives a
    ``confirmation``. The same body with that confirmation forgets exactly those (soft
    delete, all or nothing), or answers 409 if what the body matches changed since."""
    return runtime.forgetting.forget_by_query(principal, context_id, body)


@router.get("", operation_id="list_memories")
def list_memories(
    context_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    type: Annotated[list[str] | None, Query()] = None,
    tag: Annotated[list[str] | None, Query(description="Any of these tags.")] = None,
    delivery_mode: Annotated[list[DeliveryMode] | None, Query()] = None,
    source_type: Annotated[list[SourceType] | None, Query()] = None,
    trust_tier: TrustTier | None = None,
    include_deleted: bool = False,
) -> MemoryPage:
    """Newest first, keyset-paginated: pass ``next_cursor`` back as ``cursor``."""
    filters = query_model(
        RecallFilters,
        {"tags": "tag"},
        type=type,
        tags=tag,
        delivery_mode=delivery_mode,
        source_type=source_type,
        trust_tier=trust_tier,
        include_deleted=include_deleted,
    )
    return runtime.memories.list_memories(
        principal, context_id, filters, cursor=cursor, limit=limit
    )


@router.get("/{memory_id}", operation_id="get_memory")
def get_memory(
    context_id: str,
    memory_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    include_deleted: bool = False,
) -> MemoryDetail:
    """One memory in full, with its edges (counts as an access)."""
    return runtime.memories.get_memory(
        principal, context_id, memory_id, include_deleted=include_deleted
    )


@router.patch("/{memory_id}", operation_id="update_memory")
def update_memory(
    context_id: str,
    memory_id: str,
    body: MemoryUpdate,
    runtime: RuntimeDep,
    principal: PrincipalDep,
) -> Memory:
    """Partial update; re-embeds only if summary or content changed."""
    return runtime.memories.update_memory(principal, context_id, memory_id, body)


@router.delete("/{memory_id}", status_code=204, operation_id="forget")
def forget(
    context_id: str,
    memory_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    purge: Annotated[bool, Query(description="Erase for good instead of soft-deleting.")] = False,
) -> Response:
    """Forget a memory (soft delete); with ``purge=true`` erase it for good."""
    if purge:
        runtime.memories.purge(principal, context_id, memory_id)
    else:
        runtime.memories.forget(principal, context_id, memory_id)
    return Response(status_code=204)
