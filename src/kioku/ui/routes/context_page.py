"""One context: search (recall with its score breakdown) or browse (the newest-first listing,
page by page), both narrowed by filters; and the form that adds a memory."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from kioku.errors import KiokuError, http_status
from kioku.models import MemoryCreate, RecallFilters, RecallRequest
from kioku.ui.auth import UI_PREFIX, PostedDep, Viewer, ViewerDep, runtime_of
from kioku.ui.forms import FormError, moment, number, tag_list, validated
from kioku.ui.render import page

router = APIRouter()
PAGE_SIZE = 20
SEARCH_FIELDS = ("q", "k", "min_confidence")
FILTER_FIELDS = ("type", "tags", "trust_tier", "source_type")


def filters_of(params: dict[str, str]) -> RecallFilters:
    """The filter form's fields (blank: no filter) as the service's filters."""
    data: dict[str, Any] = {}
    if params.get("type", "").strip():
        data["type"] = params["type"].strip()
    if tag_list(params.get("tags", "")):
        data["tags"] = tag_list(params["tags"])
    for name in ("trust_tier", "source_type"):
        if params.get(name):
            data[name] = params[name]
    return validated(RecallFilters, data)


def context_page(
    request: Request, who: Viewer, context_id: str, *, error: FormError | None = None,
    status: int = 200, values: dict[str, str] | None = None,
) -> Response:  # fmt: skip
    """Render a context's page: search results or the listing, filters, the add form."""
    runtime = runtime_of(request)
    context = runtime.contexts.get_context(who.principal, context_id)
    known = (*SEARCH_FIELDS, *FILTER_FIELDS, "cursor")
    params = {k: v for k, v in request.query_params.items() if k in known}
    query = params.get("q", "").strip()
    search_error: FormError | None = None
    hits, listing, confidence, withheld = None, None, None, 0
    timing = None
    try:
        filters = filters_of(params)
        if query:
            typed = number(params.get("k", ""), "k")
            k = 10 if typed is None else int(typed)
            asked = {"query": query, "k": k, "filters": filters.model_dump()}
            if params.get("min_confidence"):
                asked["min_confidence"] = params["min_confidence"]
            request_model = validated(RecallRequest, asked)
            result = runtime.recall.recall(who.principal, context.id, request_model)
            hits, confidence, withheld = result.results, result.confidence, result.withheld
            timing = result.server_timing()
        else:
            listing = runtime.memories.list_memories(
                who.principal, context.id, filters, cursor=params.get("cursor") or None,
                limit=PAGE_SIZE,
            )  # fmt: skip
    except KiokuError as exc:
        if http_status(exc) != 422:
            raise
        search_error, status = FormError.of(exc), 422
    filter_query = urlencode({n: params[n] for n in FILTER_FIELDS if params.get(n)})
    rendered = page(
        request, "context.html", title=f"{context.name}: memories", viewer=who, status=status,
        context=context, params=params, query=query, hits=hits, listing=listing,
        confidence=confidence, withheld=withheld, search_error=search_error, error=error,
        values=values or {}, filter_query=filter_query,
    )  # fmt: skip
    if timing:
        rendered.headers["Server-Timing"] = timing
    return rendered


@router.get("/contexts/{context_id}")
def show(request: Request, context_id: str, who: ViewerDep) -> Response:
    """A context: search with ``q``, else browse newest first."""
    return context_page(request, who, context_id)


def memory_fields(form: dict[str, str]) -> dict[str, Any]:
    """The add/edit memory form's fields as the service's input (blank fields left out)."""
    data: dict[str, Any] = {"summary": form.get("summary", "")}
    if "content" in form:
        data["content"] = form["content"]
    if form.get("type", "").strip():
        data["type"] = form["type"].strip()
    if "tags" in form:
        data["tags"] = tag_list(form["tags"])
    importance = number(form.get("importance", ""), "importance")
    if importance is not None:
        data["importance"] = importance
    if form.get("delivery_mode"):
        data["delivery_mode"] = form["delivery_mode"]
    for name in ("trigger_from", "trigger_until"):
        when = moment(form.get(name, ""), name)
        if when is not None:
            data[name] = when
    if form.get("source_uri", "").strip():
        data["source_uri"] = form["source_uri"].strip()
    return data


@router.post("/contexts/{context_id}/memories")
def add_memory(request: Request, context_id: str, form: PostedDep) -> Response:
    """Write a memory from the form, then show it."""
    who = form.viewer
    runtime = runtime_of(request)
    try:
        data = validated(MemoryCreate, memory_fields(form.fields))
        memory = runtime.memories.remember(who.principal, context_id, data)
    except KiokuError as exc:
        if http_status(exc) not in (422, 413):
            raise
        return context_page(
            request, who, context_id, error=FormError.of(exc), status=http_status(exc),
            values=form.fields,
        )  # fmt: skip
    return RedirectResponse(f"{UI_PREFIX}/contexts/{context_id}/memories/{memory.id}", 303)
