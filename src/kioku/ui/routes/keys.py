"""API keys (admins): list them, create one (its secret shown once, on the page that answers
the form, never stored or shown again), revoke one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from kioku.errors import KiokuError, http_status
from kioku.models import ApiKeyCreated, KeyCreate
from kioku.ui.auth import UI_PREFIX, PostedDep, Viewer, ViewerDep, runtime_of
from kioku.ui.forms import FormError, moment, validated
from kioku.ui.render import page

router = APIRouter()


def keys_page(
    request: Request, who: Viewer, *, created: ApiKeyCreated | None = None,
    error: FormError | None = None, status: int = 200, values: dict[str, str] | None = None,
) -> Response:  # fmt: skip
    """Render the keys page (with a just-created secret, if any)."""
    runtime = runtime_of(request)
    keys = runtime.keys.list_keys(who.principal).items
    contexts = runtime.contexts.list_contexts(who.principal).items
    return page(
        request, "keys.html", title="API keys", viewer=who, status=status, keys=keys,
        contexts=contexts, created=created, error=error, values=values or {},
    )  # fmt: skip


@router.get("/keys")
def keys(request: Request, who: ViewerDep) -> Response:
    """The keys the admin manages (every key, or those within its allow-list) and the form."""
    return keys_page(request, who)


@router.post("/keys")
def create_key(request: Request, form: PostedDep) -> Response:
    """Create a key and show its secret, this once."""
    who = form.viewer
    try:
        data: dict[str, Any] = {"name": form.get("name").strip(), "role": form.get("role")}
        if form.lists.get("context_ids"):
            data["context_ids"] = form.lists["context_ids"]
        expires = moment(form.get("expires_at"), "expires_at")
        if expires is not None:
            data["expires_at"] = expires
        created = runtime_of(request).keys.create_key(who.principal, validated(KeyCreate, data))
    except KiokuError as exc:
        if http_status(exc) not in (422, 404):
            raise
        return keys_page(
            request, who, error=FormError.of(exc), status=http_status(exc), values=form.fields
        )
    # Answered with the page itself (not a redirect): the secret exists only in this answer.
    return keys_page(request, who, created=created)


@router.post("/keys/{key_id}/revoke")
def revoke_key(request: Request, key_id: str, form: PostedDep) -> Response:
    """Revoke a key: its sessions and requests stop working at once."""
    runtime_of(request).keys.revoke_key(form.viewer.principal, key_id)
    return RedirectResponse(f"{UI_PREFIX}/keys", 303)
