"""``/contexts``: named memory spaces. A context is addressed by id or by name."""

from __future__ import annotations

from fastapi import APIRouter, Response

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.models import Context, ContextCreate, ContextPage, ContextStats, ContextUpdate

router = APIRouter(prefix="/contexts", tags=["contexts"])


@router.post("", status_code=201, operation_id="create_context")
def create_context(body: ContextCreate, runtime: RuntimeDep, principal: PrincipalDep) -> Context:
    """Create a context (409 if the name is taken)."""
    return runtime.contexts.create_context(principal, body)


@router.get("", operation_id="list_contexts")
def list_contexts(runtime: RuntimeDep, principal: PrincipalDep) -> ContextPage:
    """Every context of the workspace, by name."""
    return runtime.contexts.list_contexts(principal)


@router.get("/{context_id}", operation_id="get_context")
def get_context(context_id: str, runtime: RuntimeDep, principal: PrincipalDep) -> Context:
    """One context, by id or name."""
    return runtime.contexts.get_context(principal, context_id)


@router.patch("/{context_id}", operation_id="update_context")
def update_context(
    context_id: str, body: ContextUpdate, runtime: RuntimeDep, principal: PrincipalDep
) -> Context:
    """Change a context's name, description, trust tier, sleep mode or search config."""
    return runtime.contexts.update_context(principal, context_id, body)


@router.delete("/{context_id}", status_code=204, operation_id="delete_context")
def delete_context(context_id: str, runtime: RuntimeDep, principal: PrincipalDep) -> Response:
    """Delete a context and all its memories, for good."""
    runtime.contexts.delete_context(principal, context_id)
    return Response(status_code=204)


@router.get("/{context_id}/stats", operation_id="stats")
def stats(context_id: str, runtime: RuntimeDep, principal: PrincipalDep) -> ContextStats:
    """Counts per lane (memories, pinned, external, embeddings, state keys, feedback)."""
    return runtime.stats.stats(principal, context_id)
