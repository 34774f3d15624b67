"""One memory: full text, provenance, edges, feedback history and counts; and what can be done
to it from here (edit, pin/unpin, forget, give feedback)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from kioku.errors import KiokuError, http_status
from kioku.models import FeedbackCreate, MemoryUpdate
from kioku.ui.auth import UI_PREFIX, PostedDep, Viewer, ViewerDep, runtime_of
from kioku.ui.forms import FormError, validated
from kioku.ui.render import page
from kioku.ui.routes.context_page import memory_fields

router = APIRouter()
NOTICES = {
    "pinned": "Pinned: it is in the pinned set now.",
    "unpinned": "Unpinned: it is delivered on recall again.",
    "saved": "Saved.",
    "feedback": "Thanks: feedback recorded.",
}
FEEDBACK_SHOWN = 200
"""Feedback events shown (and counted) on a memory's page: the newest ones."""


def memory_url(context_id: str, memory_id: str) -> str:
    """The address of a memory's page."""
    return f"{UI_PREFIX}/contexts/{context_id}/memories/{memory_id}"


def memory_page(
    request: Request, who: Viewer, context_id: str, memory_id: str, *,
    error: FormError | None = None, status: int = 200, notice: str = "",
) -> Response:  # fmt: skip
    """Render a memory's page, with a notice or a form error."""
    runtime = runtime_of(request)
    context = runtime.contexts.get_context(who.principal, context_id)
    memory = runtime.memories.get_memory(who.principal, context.id, memory_id)
    # The summaries at the other end of each edge, from one hop of explore.
    near = runtime.graph.explore(who.principal, context.id, memory_id, depth=1, limit=50)
    summaries = {n.id: n.summary for n in near.neighbours}
    feedback = runtime.feedback.list_feedback(
        who.principal, context.id, memory_id=memory_id, limit=FEEDBACK_SHOWN
    )
    helpful = sum(1 for event in feedback.items if event.helpful)
    return page(
        request, "memory.html", title=f"Memory: {memory.summary}", viewer=who, status=status,
        context=context, memory=memory, summaries=summaries, feedback=feedback.items,
        feedback_more=feedback.next_cursor is not None, helpful=helpful,
        unhelpful=len(feedback.items) - helpful, error=error, notice=notice,
    )  # fmt: skip


@router.get("/contexts/{context_id}/memories/{memory_id}")
def show(request: Request, context_id: str, memory_id: str, who: ViewerDep) -> Response:
    """One memory in full (viewing it counts as an access, as ``get_memory`` does)."""
    notice = NOTICES.get(request.query_params.get("done", ""), "")
    return memory_page(request, who, context_id, memory_id, notice=notice)


def _changed(context_id: str, memory_id: str, done: str) -> Response:
    return RedirectResponse(f"{memory_url(context_id, memory_id)}?done={done}", 303)


def _with_error(
    request: Request, who: Viewer, context_id: str, memory_id: str, exc: KiokuError
) -> Response:
    """Show a bad-input error on the memory's page; anything else is an error page."""
    if http_status(exc) not in (422, 413, 409):
        raise exc
    return memory_page(
        request, who, context_id, memory_id, error=FormError.of(exc), status=http_status(exc)
    )


@router.post("/contexts/{context_id}/memories/{memory_id}/edit")
def edit(request: Request, context_id: str, memory_id: str, form: PostedDep) -> Response:
    """Save the edit form (text changes re-embed)."""
    who = form.viewer
    fields = {
        name: form.get(name)
        for name in ("summary", "content", "type", "tags", "importance")
        if name in form.fields
    }
    try:
        data = validated(MemoryUpdate, memory_fields(fields))
        runtime_of(request).memories.update_memory(who.principal, context_id, memory_id, data)
    except KiokuError as exc:
        return _with_error(request, who, context_id, memory_id, exc)
    return _changed(context_id, memory_id, "saved")


@router.post("/contexts/{context_id}/memories/{memory_id}/pin")
def pin(request: Request, context_id: str, memory_id: str, form: PostedDep) -> Response:
    """Pin (``delivery_mode=always``: in the pinned set every turn) or unpin (back to recall)."""
    pinned = form.get("pinned") == "1"
    data = MemoryUpdate(delivery_mode="always" if pinned else "on_recall")
    runtime_of(request).memories.update_memory(form.viewer.principal, context_id, memory_id, data)
    return _changed(context_id, memory_id, "pinned" if pinned else "unpinned")


@router.post("/contexts/{context_id}/memories/{memory_id}/forget")
def forget(request: Request, context_id: str, memory_id: str, form: PostedDep) -> Response:
    """Forget (soft-delete) the memory and go back to its context."""
    runtime_of(request).memories.forget(form.viewer.principal, context_id, memory_id)
    return RedirectResponse(f"{UI_PREFIX}/contexts/{context_id}?forgotten=1", 303)


@router.post("/contexts/{context_id}/memories/{memory_id}/feedback")
def feedback(request: Request, context_id: str, memory_id: str, form: PostedDep) -> Response:
    """Record whether the memory was helpful (viewers may, too)."""
    who = form.viewer
    helpful = form.get("helpful")
    try:
        data = validated(
            FeedbackCreate,
            {
                "memory_id": memory_id,
                "helpful": {"yes": True, "no": False}.get(helpful, helpful),
                "query": form.get("query").strip() or None,
                "note": form.get("note").strip() or None,
            },
        )
        runtime_of(request).feedback.feedback(who.principal, context_id, data)
    except KiokuError as exc:
        return _with_error(request, who, context_id, memory_id, exc)
    return _changed(context_id, memory_id, "feedback")
