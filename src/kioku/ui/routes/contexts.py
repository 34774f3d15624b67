"""The workspace overview: every context with its counts per lane and last Sleep run, and
(for admins without a context allow-list) the form that creates a context."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from kioku.errors import ConflictError, InvalidInputError, http_status
from kioku.models import ContextCreate
from kioku.service.contexts import ContextService
from kioku.service.guard import admits
from kioku.ui.auth import UI_PREFIX, PostedDep, Viewer, ViewerDep, runtime_of
from kioku.ui.forms import FormError, validated
from kioku.ui.render import page

router = APIRouter()


def overview(
    request: Request, who: Viewer, *, error: FormError | None = None, status: int = 200,
    values: dict[str, str] | None = None,
) -> Response:  # fmt: skip
    """Render the overview: every visible context with its stats."""
    runtime = runtime_of(request)
    contexts = runtime.contexts.list_contexts(who.principal).items
    stats = [runtime.stats.stats(who.principal, context.id) for context in contexts]
    return page(
        request, "overview.html", title="Contexts", viewer=who, status=status,
        rows=list(zip(contexts, stats, strict=True)), error=error, values=values or {},
        can_create=admits(who.principal, ContextService.create_context),
    )  # fmt: skip


@router.get("/")
def index(request: Request, who: ViewerDep) -> Response:
    """The workspace overview."""
    return overview(request, who)


@router.post("/contexts")
def create_context(request: Request, form: PostedDep) -> Response:
    """Create a context from the overview's form (admins), then open it."""
    who = form.viewer
    data = {
        "name": form.get("name").strip(),
        "description": form.get("description"),
        "trust_tier": form.get("trust_tier", "trusted"),
        "sleep_mode": form.get("sleep_mode", "edges_only"),
    }
    try:
        created = runtime_of(request).contexts.create_context(
            who.principal, validated(ContextCreate, data)
        )
    except (InvalidInputError, ConflictError) as exc:
        return overview(
            request, who, error=FormError.of(exc), status=http_status(exc), values=form.fields
        )
    return RedirectResponse(f"{UI_PREFIX}/contexts/{created.id}", 303)
