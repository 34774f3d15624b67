"""``GET /contexts/{id}/memories/{memory_id}/explore``: the association graph around a memory."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.api.errors import query_model
from kioku.models import ExploreResult, RecallFilters, TrustTier

router = APIRouter(prefix="/contexts/{context_id}/memories", tags=["graph"])


@router.get("/{memory_id}/explore", operation_id="explore")
def explore(
    context_id: str,
    memory_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    depth: Annotated[int, Query(ge=1, le=3, description="Hops to spread.")] = 2,
    min_weight: Annotated[
        float, Query(ge=0, le=1, description="Weaker edges are not followed.")
    ] = 0.05,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    trust_tier: Annotated[
        TrustTier | None,
        Query(description="trusted: no external memory is returned or passed through."),
    ] = None,
    type: Annotated[list[str] | None, Query()] = None,
    tag: Annotated[list[str] | None, Query(description="Any of these tags.")] = None,
) -> ExploreResult:
    """Spreading activation from one memory: its neighbours up to ``depth`` hops, strongest
    first, each with ``activation`` (the product of edge weights on its path) and ``path``."""
    filters = query_model(
        RecallFilters, {"tags": "tag"}, trust_tier=trust_tier, type=type, tags=tag
    )
    return runtime.graph.explore(
        principal, context_id, memory_id, depth=depth, min_weight=min_weight, limit=limit,
        filters=filters,
    )  # fmt: skip
