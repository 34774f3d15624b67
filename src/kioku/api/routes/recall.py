"""``POST /contexts/{id}/recall``: hybrid search."""

from __future__ import annotations

from fastapi import APIRouter, Response

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.models import RecallRequest, RecallResult

router = APIRouter(tags=["recall"])


@router.post("/contexts/{context_id}/recall", operation_id="recall", response_model=RecallResult)
def recall(
    context_id: str, body: RecallRequest, runtime: RuntimeDep, principal: PrincipalDep
) -> Response:
    """Find the ``k`` memories that best answer ``query`` (BM25 + vectors, fused, re-ranked).

    The ``Server-Timing`` header says how long each stage of the ranking took."""
    result = runtime.recall.recall(principal, context_id, body)
    # Serialised here, on the worker thread: returned as a model, FastAPI would hand it to
    # another worker thread to validate it again before writing the same JSON.
    return Response(
        result.model_dump_json(by_alias=True),
        media_type="application/json",
        headers={"Server-Timing": result.server_timing()},
    )
