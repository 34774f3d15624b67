"""``/contexts/{id}/feedback``: append-only retrieval feedback."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.models import Feedback, FeedbackCreate, FeedbackPage

router = APIRouter(prefix="/contexts/{context_id}/feedback", tags=["feedback"])


@router.post("", status_code=201, operation_id="feedback")
def feedback(
    context_id: str, body: FeedbackCreate, runtime: RuntimeDep, principal: PrincipalDep
) -> Feedback:
    """Say whether a memory helped (for a query). Appended, never updated, never recalled;
    net helpfulness nudges the bounded re-ranker."""
    return runtime.feedback.feedback(principal, context_id, body)


@router.get("", operation_id="list_feedback")
def list_feedback(
    context_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    memory_id: Annotated[str | None, Query(description="Only this memory's events.")] = None,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> FeedbackPage:
    """Feedback events, newest first: pass ``next_cursor`` back as ``cursor``."""
    return runtime.feedback.list_feedback(
        principal, context_id, memory_id=memory_id, cursor=cursor, limit=limit
    )
