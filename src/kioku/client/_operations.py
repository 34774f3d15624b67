"""Every REST operation as a request builder: the one place the SDK knows routes and shapes.

Client and AsyncClient only add the method signature and send the built ``Call``. Builders take
every argument by keyword and receive the caller's defaults; two conventions decide what is sent:

- ``None`` means "not given" for creations and queries: the field is left out and the server
  applies its default (so defaults live in one place, the wire models);
- for partial updates and ``ttl_seconds``, where ``null`` means something, ``UNSET`` is the
  "not given" marker and ``None`` is sent as ``null``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from kioku.client._transport import Call, nothing
from kioku.errors import InvalidInputError
from kioku.models import (
    ApiKeyCreated,
    ApiKeyPage,
    AuditPage,
    BatchResult,
    Context,
    ContextPage,
    ContextStats,
    ExploreResult,
    Feedback,
    FeedbackPage,
    ForgetMatch,
    ForgetResult,
    Health,
    IngestResult,
    Memory,
    MemoryDetail,
    MemoryPage,
    PinnedResult,
    PurgeResult,
    RecallFilters,
    RecallResult,
    State,
    StatePage,
    TagFilter,
    UpcomingResult,
)
from kioku.models.sleep import SleepReport, SleepRollback


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset.UNSET
"""Marks an argument that was not given (where ``None`` is a value: it is sent as null)."""
Unset = Literal[_Unset.UNSET]

Filters = RecallFilters | Mapping[str, Any]
"""Recall filters (SPEC §5.4), as the model or as a plain dict of its fields."""


def path(*segments: str) -> str:
    """``/api/v1/<segments>``, each segment percent-encoded (state keys may hold ``?`` or ``#``)."""
    return "/api/v1/" + "/".join(quote(segment, safe="") for segment in segments)


def jsonable(value: Any) -> Any:
    """A JSON-ready copy: models as the fields that were set, datetimes as ISO 8601."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        # Keys copied as they are (pydantic refuses a key it cannot encode; the server names it).
        return {key: jsonable(item) for key, item in value.items()}
    return to_jsonable_python(value)


def given(**fields: Any) -> dict[str, Any]:
    """The fields of a creation or query that were given (not ``None``)."""
    return {name: jsonable(value) for name, value in fields.items() if value is not None}


def changed(**fields: Any) -> dict[str, Any]:
    """The fields of a partial update that were given (not ``UNSET``); ``None`` stays null."""
    return {name: jsonable(value) for name, value in fields.items() if value is not UNSET}


# GET routes take a few filters as query parameters: field of RecallFilters → query name.
_LIST_FILTERS = {
    "type": "type",
    "tags": "tag",
    "delivery_mode": "delivery_mode",
    "source_type": "source_type",
    "trust_tier": "trust_tier",
    "include_deleted": "include_deleted",
}
_PINNED_FILTERS = {"type": "type", "tags": "tag", "trust_tier": "trust_tier"}


def filter_params(filters: Filters | None, supported: Mapping[str, str]) -> dict[str, Any]:
    """Query parameters for the filters a GET route supports; an error names any other one."""
    if filters is None:
        return {}
    try:
        model = RecallFilters.model_validate(filters)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(["filters", *(str(p) for p in error["loc"])])
        raise InvalidInputError(f"{field}: {error['msg']}", field=field) from None
    params: dict[str, Any] = {}
    for name in sorted(model.model_fields_set):  # a stable query string
        value = getattr(model, name)
        if isinstance(value, TagFilter) and not value.all:
            value = value.any  # any-of is what the tag query parameter means
        if value is None or value == RecallFilters.model_fields[name].default:
            continue  # the route's default too: nothing to send
        if name not in supported or isinstance(value, TagFilter):
            allowed = ", ".join(sorted(supported))
            raise InvalidInputError(
                f"this operation filters only by {allowed} (tags as a list, any-of); "
                "recall takes every filter",
                field=f"filters.{name}",
            )
        params[supported[name]] = value
    return params


# ---------------------------------------------------------------- contexts


def create_context(**fields: Any) -> Call[Context]:
    return Call("POST", path("contexts"), Context.model_validate_json, body=given(**fields))


def list_contexts() -> Call[ContextPage]:
    return Call("GET", path("contexts"), ContextPage.model_validate_json)


def get_context(context_id: str) -> Call[Context]:
    return Call("GET", path("contexts", context_id), Context.model_validate_json)


def update_context(context_id: str, **fields: Any) -> Call[Context]:
    url = path("contexts", context_id)
    return Call("PATCH", url, Context.model_validate_json, body=changed(**fields))


def delete_context(context_id: str) -> Call[None]:
    return Call("DELETE", path("contexts", context_id), nothing)


def stats(context_id: str) -> Call[ContextStats]:
    return Call("GET", path("contexts", context_id, "stats"), ContextStats.model_validate_json)


# ---------------------------------------------------------------- sleep


def sleep(context_id: str, *, mode: str | None) -> Call[SleepReport]:
    url = path("contexts", context_id, "sleep")
    return Call("POST", url, SleepReport.model_validate_json, body=given(mode=mode))


def sleep_report(run_id: str) -> Call[SleepReport]:
    return Call("GET", path("sleep", run_id), SleepReport.model_validate_json)


def rollback_sleep(run_id: str) -> Call[SleepRollback]:
    return Call("POST", path("sleep", run_id, "rollback"), SleepRollback.model_validate_json)


# ---------------------------------------------------------------- memories


def remember(context_id: str, *, wait: bool, **fields: Any) -> Call[Memory]:
    url = path("contexts", context_id, "memories")
    params = {"wait": True} if wait else None
    return Call("POST", url, Memory.model_validate_json, params=params, body=given(**fields))


def remember_batch(
    context_id: str, *, items: Sequence[Any], atomic: bool, wait: bool
) -> Call[BatchResult]:
    url = path("contexts", context_id, "memories", "batch")
    body = {"items": jsonable(items), "atomic": atomic, "wait": wait}
    return Call("POST", url, BatchResult.model_validate_json, body=body)


def list_memories(
    context_id: str, *, filters: Filters | None, cursor: str | None, limit: int | None
) -> Call[MemoryPage]:
    params = {**filter_params(filters, _LIST_FILTERS), **given(cursor=cursor, limit=limit)}
    url = path("contexts", context_id, "memories")
    return Call("GET", url, MemoryPage.model_validate_json, params=params)


def get_memory(context_id: str, memory_id: str, *, include_deleted: bool) -> Call[MemoryDetail]:
    url = path("contexts", context_id, "memories", memory_id)
    params = {"include_deleted": True} if include_deleted else None
    return Call("GET", url, MemoryDetail.model_validate_json, params=params)


def update_memory(context_id: str, memory_id: str, **fields: Any) -> Call[Memory]:
    url = path("contexts", context_id, "memories", memory_id)
    return Call("PATCH", url, Memory.model_validate_json, body=changed(**fields))


def forget(context_id: str, memory_id: str, *, purge: bool = False) -> Call[None]:
    url = path("contexts", context_id, "memories", memory_id)
    return Call("DELETE", url, nothing, params={"purge": True} if purge else None)


def forget_by_query(
    context_id: str,
    *,
    query: str | None,
    filters: Filters | None,
    match: ForgetMatch | None,
    k: int | None,
    confirmation: str | None,
) -> Call[ForgetResult]:
    url = path("contexts", context_id, "memories", "forget")
    body = given(query=query, filters=filters, match=match, k=k, confirmation=confirmation)
    return Call("POST", url, ForgetResult.model_validate_json, body=body)


# ---------------------------------------------------------------- connectors and purge


def ingest(
    context_id: str, *, ops: Sequence[Any], wait: bool, idempotency_key: str | None
) -> Call[IngestResult]:
    url = path("contexts", context_id, "ingest")
    headers = None if idempotency_key is None else {"Idempotency-Key": idempotency_key}
    body = {"ops": jsonable(ops), "wait": wait}
    return Call("POST", url, IngestResult.model_validate_json, body=body, headers=headers)


def purge_context(context_id: str) -> Call[PurgeResult]:
    return Call("POST", path("contexts", context_id, "purge"), PurgeResult.model_validate_json)


def purge_source(*, source_uri_prefix: str, context_id: str | None) -> Call[PurgeResult]:
    body = given(source_uri_prefix=source_uri_prefix, context_id=context_id)
    return Call("POST", path("purge"), PurgeResult.model_validate_json, body=body)


# ---------------------------------------------------------------- recall and delivery


def recall(
    context_id: str,
    *,
    query: str,
    k: int | None,
    filters: Filters | None,
    include_related: bool = False,
) -> Call[RecallResult]:
    url = path("contexts", context_id, "recall")
    body = given(query=query, k=k, filters=filters, include_related=include_related or None)
    return Call("POST", url, RecallResult.model_validate_json, body=body)


def load_pinned(context_id: str, *, cap: int | None, filters: Filters | None) -> Call[PinnedResult]:
    params = {**filter_params(filters, _PINNED_FILTERS), **given(cap=cap)}
    url = path("contexts", context_id, "pinned")
    return Call("GET", url, PinnedResult.model_validate_json, params=params)


def upcoming(
    context_id: str, *, start: datetime | None, end: datetime | None, cap: int | None
) -> Call[UpcomingResult]:
    params = given(**{"from": start, "until": end, "cap": cap})
    url = path("contexts", context_id, "upcoming")
    return Call("GET", url, UpcomingResult.model_validate_json, params=params)


def explore(
    context_id: str,
    memory_id: str,
    *,
    depth: int | None,
    min_weight: float | None,
    limit: int | None,
    filters: Filters | None,
) -> Call[ExploreResult]:
    params = {
        **filter_params(filters, _PINNED_FILTERS),
        **given(depth=depth, min_weight=min_weight, limit=limit),
    }
    url = path("contexts", context_id, "memories", memory_id, "explore")
    return Call("GET", url, ExploreResult.model_validate_json, params=params)


# ---------------------------------------------------------------- feedback


def feedback(context_id: str, **fields: Any) -> Call[Feedback]:
    url = path("contexts", context_id, "feedback")
    return Call("POST", url, Feedback.model_validate_json, body=given(**fields))


def list_feedback(
    context_id: str, *, memory_id: str | None, cursor: str | None, limit: int | None
) -> Call[FeedbackPage]:
    params = given(memory_id=memory_id, cursor=cursor, limit=limit)
    url = path("contexts", context_id, "feedback")
    return Call("GET", url, FeedbackPage.model_validate_json, params=params)


# ---------------------------------------------------------------- agent state


def set_state(
    context_id: str, key: str, *, value: Any, ttl_seconds: int | Unset | None
) -> Call[State]:
    body = {"value": jsonable(value), **changed(ttl_seconds=ttl_seconds)}
    return Call(
        "PUT", path("contexts", context_id, "state", key), State.model_validate_json, body=body
    )


def get_state(context_id: str, key: str) -> Call[State]:
    return Call("GET", path("contexts", context_id, "state", key), State.model_validate_json)


def list_state(context_id: str, *, cursor: str | None, limit: int | None) -> Call[StatePage]:
    url = path("contexts", context_id, "state")
    return Call("GET", url, StatePage.model_validate_json, params=given(cursor=cursor, limit=limit))


def delete_state(context_id: str, key: str) -> Call[None]:
    return Call("DELETE", path("contexts", context_id, "state", key), nothing)


# ---------------------------------------------------------------- access: keys and audit


def create_key(**fields: Any) -> Call[ApiKeyCreated]:
    return Call("POST", path("keys"), ApiKeyCreated.model_validate_json, body=given(**fields))


def list_keys() -> Call[ApiKeyPage]:
    return Call("GET", path("keys"), ApiKeyPage.model_validate_json)


def revoke_key(key_id: str) -> Call[None]:
    return Call("DELETE", path("keys", key_id), nothing)


def list_audit(*, cursor: str | None, limit: int | None) -> Call[AuditPage]:
    params = given(cursor=cursor, limit=limit)
    return Call("GET", path("audit"), AuditPage.model_validate_json, params=params)


def health() -> Call[Health]:
    return Call("GET", path("health"), Health.model_validate_json)
