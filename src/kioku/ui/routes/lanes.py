"""The lanes beside recall: the pinned set with upcoming triggers, the state lane with time to
expiry (set and delete keys), and feedback counted per memory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from kioku.errors import KiokuError, http_status
from kioku.models import RecallFilters, StateSet
from kioku.ui.auth import UI_PREFIX, PostedDep, Viewer, ViewerDep, runtime_of
from kioku.ui.forms import FormError, json_or_text, validated, whole_number
from kioku.ui.render import page

router = APIRouter()
FEEDBACK_COUNTED = 1000
"""Newest feedback events the statistics page counts (five pages of the service's 200)."""


@router.get("/contexts/{context_id}/pinned")
def pinned(request: Request, context_id: str, who: ViewerDep) -> Response:
    """The pinned set as delivered now, and the trigger windows of the next 7 days."""
    runtime = runtime_of(request)
    context = runtime.contexts.get_context(who.principal, context_id)
    pinned_set = runtime.delivery.load_pinned(who.principal, context.id)
    upcoming = runtime.delivery.upcoming(who.principal, context.id)
    return page(
        request, "pinned.html", title=f"{context.name}: pinned and upcoming", viewer=who,
        context=context, pinned=pinned_set, upcoming=upcoming,
    )  # fmt: skip


def state_page(
    request: Request, who: Viewer, context_id: str, *, error: FormError | None = None,
    status: int = 200, values: dict[str, str] | None = None,
) -> Response:  # fmt: skip
    """Render the state lane: live keys with their time to expiry."""
    runtime = runtime_of(request)
    context = runtime.contexts.get_context(who.principal, context_id)
    cursor = request.query_params.get("cursor") or None
    keys = runtime.state.list_state(who.principal, context.id, cursor=cursor, limit=100)
    return page(
        request, "state.html", title=f"{context.name}: state", viewer=who, status=status,
        context=context, keys=keys, error=error, values=values or {},
    )  # fmt: skip


@router.get("/contexts/{context_id}/state")
def state(request: Request, context_id: str, who: ViewerDep) -> Response:
    """The state lane of a context."""
    return state_page(request, who, context_id)


@router.post("/contexts/{context_id}/state")
def set_state(request: Request, context_id: str, form: PostedDep) -> Response:
    """Set a key from the form (JSON or text, TTL in seconds or blank)."""
    who = form.viewer
    try:
        ttl = form.get("ttl_seconds")
        data = validated(
            StateSet,
            {
                "value": json_or_text(form.get("value")),
                # Blank or "never": no expiry; the service clamps the rest to [1 s, 30 days].
                "ttl_seconds": None
                if ttl.strip() in ("", "never")
                else whole_number(ttl, "ttl_seconds"),
            },
        )
        runtime_of(request).state.set_state(who.principal, context_id, form.get("key"), data)
    except KiokuError as exc:
        if http_status(exc) not in (422, 413):
            raise
        return state_page(
            request, who, context_id, error=FormError.of(exc), status=http_status(exc),
            values=form.fields,
        )  # fmt: skip
    return RedirectResponse(f"{UI_PREFIX}/contexts/{context_id}/state", 303)


@router.post("/contexts/{context_id}/state/delete")
def delete_state(request: Request, context_id: str, form: PostedDep) -> Response:
    """Delete one key of the state lane."""
    runtime_of(request).state.delete_state(form.viewer.principal, context_id, form.get("key"))
    return RedirectResponse(f"{UI_PREFIX}/contexts/{context_id}/state", 303)


@dataclass
class MemoryFeedback:
    """Feedback on one memory: how often helpful or not, and the newest event's time."""

    memory_id: str
    summary: str | None
    helpful: int = 0
    unhelpful: int = 0
    last_at: datetime | None = None

    @property
    def total(self) -> int:
        """Every feedback event on this memory."""
        return self.helpful + self.unhelpful


@router.get("/contexts/{context_id}/feedback")
def feedback_stats(request: Request, context_id: str, who: ViewerDep) -> Response:
    """Feedback counted per memory, most first."""
    runtime = runtime_of(request)
    context = runtime.contexts.get_context(who.principal, context_id)
    counts: dict[str, MemoryFeedback] = {}
    cursor: str | None = None
    events = 0
    while events < FEEDBACK_COUNTED:
        batch = runtime.feedback.list_feedback(who.principal, context.id, cursor=cursor, limit=200)
        for event in batch.items:
            row = counts.setdefault(event.memory_id, MemoryFeedback(event.memory_id, None))
            row.helpful += event.helpful
            row.unhelpful += not event.helpful
            row.last_at = max(filter(None, (row.last_at, event.created_at)))
        events += len(batch.items)
        cursor = batch.next_cursor
        if cursor is None:
            break
    # Summaries from a listing, not get_memory: viewing statistics must not count as access.
    listed = runtime.memories.list_memories(
        who.principal, context.id, RecallFilters(include_deleted=True, include_superseded=True),
        limit=200,
    )  # fmt: skip
    for memory in listed.items:
        if memory.id in counts:
            counts[memory.id].summary = memory.summary
    rows = sorted(counts.values(), key=lambda r: (-r.total, r.memory_id))
    return page(
        request, "feedback.html", title=f"{context.name}: feedback", viewer=who,
        context=context, rows=rows, events=events, truncated=cursor is not None,
    )  # fmt: skip
