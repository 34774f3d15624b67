"""Sleep: run it on a context, read a run's report action by action, roll a run back.

There is no operation that lists every run, so the context's page shows its last run (from
``stats``) and each run's report links the context back; a run is opened by its id.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from kioku.errors import KiokuError, NotFoundError, http_status
from kioku.models.sleep import SleepRequest
from kioku.ui.auth import UI_PREFIX, PostedDep, Viewer, ViewerDep, runtime_of
from kioku.ui.forms import FormError, validated
from kioku.ui.render import page
from kioku.ui.sleep_words import ROUTINE_DECAY, summary_words, tell

router = APIRouter()


@router.get("/contexts/{context_id}/sleep")
def sleep_page(request: Request, context_id: str, who: ViewerDep) -> Response:
    """Run Sleep on a context, and its last run."""
    runtime = runtime_of(request)
    context = runtime.contexts.get_context(who.principal, context_id)
    stats = runtime.stats.stats(who.principal, context.id)
    last = (
        runtime.sleep.sleep_report(who.principal, stats.last_sleep_run_id)
        if stats.last_sleep_run_id
        else None
    )
    return page(
        request, "sleep.html", title=f"{context.name}: Sleep", viewer=who, context=context,
        last=last,
    )  # fmt: skip


@router.post("/contexts/{context_id}/sleep")
def run_sleep(request: Request, context_id: str, form: PostedDep) -> Response:
    """Run Sleep now, then show the run's report."""
    mode = form.get("mode") or None
    data = validated(SleepRequest, {"mode": mode})
    report = runtime_of(request).sleep.sleep(form.viewer.principal, context_id, data)
    return RedirectResponse(f"{UI_PREFIX}/sleep/{report.run_id}", 303)


def run_page(
    request: Request, who: Viewer, run_id: str, *, notice: str = "",
    error: FormError | None = None, status: int = 200,
) -> Response:  # fmt: skip
    """Render a run's report, with the rollback button when it applies."""
    runtime = runtime_of(request)
    report = runtime.sleep.sleep_report(who.principal, run_id)
    context = runtime.contexts.get_context(who.principal, report.context_id)
    latest = runtime.stats.stats(who.principal, context.id).last_sleep_run_id
    names: dict[str, str] = {}

    def summary_of(memory_id: str) -> str:
        """A memory's summary, cut to a line; one the run erased (or rolled back) says so."""
        if memory_id not in names:
            try:
                memory = runtime.memories.get_memory(
                    who.principal, context.id, memory_id, include_deleted=True
                )
                names[memory_id] = _clip(memory.summary, 80)
            except NotFoundError:
                names[memory_id] = "a memory since erased"
        return names[memory_id]

    return page(
        request, "sleep_run.html", title=f"Sleep run {report.started_at:%Y-%m-%d %H:%M}",
        viewer=who, status=status, context=context, report=report, notice=notice, error=error,
        can_roll_back=report.status == "done" and latest == report.run_id,
        told=tell(report.actions, summary_of), summary=summary_words(report.summary),
        routine_decay=ROUTINE_DECAY, changed=changed_fields,
    )  # fmt: skip


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def changed_fields(before: Any, after: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Only the fields an action changed (the rest of the logged row is the same)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return before, after
    keys = [k for k in {*before, *after} if before.get(k) != after.get(k) and k != "updated_at"]
    return {k: before.get(k) for k in keys}, {k: after.get(k) for k in keys}


@router.get("/sleep/{run_id}")
def show_run(
    request: Request, run_id: str, who: ViewerDep, undone: int | None = None, skipped: int = 0
) -> Response:
    """One Sleep run, action by action (and what a rollback just did)."""
    notice = (
        f"Rolled back: {undone} changes undone, {skipped} left alone." if undone is not None else ""
    )
    return run_page(request, who, run_id, notice=notice)


@router.post("/sleep/{run_id}/rollback")
def roll_back(request: Request, run_id: str, form: PostedDep) -> Response:
    """Roll a run back (admins), then show it again."""
    who = form.viewer
    try:
        outcome = runtime_of(request).sleep.rollback_sleep(who.principal, run_id)
    except KiokuError as exc:
        if http_status(exc) != 409:
            raise
        return run_page(request, who, run_id, error=FormError.of(exc), status=409)
    return RedirectResponse(
        f"{UI_PREFIX}/sleep/{run_id}?undone={outcome.undone}&skipped={len(outcome.skipped)}", 303
    )
