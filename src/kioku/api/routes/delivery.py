"""``/contexts/{id}/pinned`` and ``/contexts/{id}/upcoming``: deterministic delivery."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.api.errors import query_model
from kioku.models import PinnedResult, RecallFilters, TrustTier, UpcomingResult
from kioku.models.base import Timestamp

router = APIRouter(prefix="/contexts/{context_id}", tags=["delivery"])


@router.get("/pinned", operation_id="load_pinned")
def load_pinned(
    context_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    cap: Annotated[int, Query(description="Clamped to [1, 1000].")] = 100,
    trust_tier: Annotated[
        TrustTier | None, Query(description="trusted: only what may be obeyed.")
    ] = None,
    type: Annotated[list[str] | None, Query()] = None,
    tag: Annotated[list[str] | None, Query(description="Any of these tags.")] = None,
) -> PinnedResult:
    """Every `always` memory plus the `on_trigger` ones whose window is open now, in a stable
    order (importance desc, created_at, id); `truncated` says when `cap` cut the set."""
    filters = query_model(
        RecallFilters, {"tags": "tag"}, trust_tier=trust_tier, type=type, tags=tag
    )
    return runtime.delivery.load_pinned(principal, context_id, cap=cap, filters=filters)


@router.get("/upcoming", operation_id="upcoming")
def upcoming(
    context_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    start: Annotated[Timestamp | None, Query(alias="from")] = None,
    end: Annotated[Timestamp | None, Query(alias="until")] = None,
    cap: Annotated[int, Query(description="Clamped to [1, 1000].")] = 100,
) -> UpcomingResult:
    """`on_trigger` memories whose window intersects [from, until) (default: the next 7 days)."""
    return runtime.delivery.upcoming(principal, context_id, start=start, end=end, cap=cap)
