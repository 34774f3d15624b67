"""How the SDK writes a request: URL paths, JSON bodies, query filters, the UNSET marker.

Two conventions decide what an operation sends:

- ``None`` means "not given" for creations and queries: the field is left out and the server
  applies its default (so defaults live in one place, the wire models);
- for partial updates and ``ttl_seconds``, where ``null`` means something, ``UNSET`` is the
  "not given" marker and ``None`` is sent as ``null``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast
from urllib.parse import quote

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from kioku.errors import InvalidInputError, first_error
from kioku.models import RecallFilters, TagFilter


class _Unset(enum.Enum):
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset.UNSET
"""Marks an argument that was not given (where ``None`` is a value: it is sent as null)."""
Unset = Literal[_Unset.UNSET]

Filters = RecallFilters | Mapping[str, Any]
"""Recall filters (docs/concepts.md, "Filters"), as the model or as a plain dict of its fields."""


def path(*segments: str) -> str:
    """``/api/v1/<segments>``, each segment percent-encoded (state keys may hold ``?`` or ``#``)."""
    return "/api/v1/" + "/".join(quote(segment, safe="") for segment in segments)


def jsonable(value: Any) -> Any:
    """A JSON-ready copy: models as the fields that were set, datetimes as ISO 8601."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in cast("Sequence[Any]", value)]
    if isinstance(value, dict):
        items = cast("dict[Any, Any]", value)
        if all(isinstance(key, str) for key in items):
            # Keys as they are (pydantic refuses a key it cannot encode; the server names it).
            return {key: jsonable(item) for key, item in items.items()}
    return to_jsonable_python(value)


def given(**fields: Any) -> dict[str, Any]:
    """The fields of a creation or query that were given (not ``None``)."""
    return {name: jsonable(value) for name, value in fields.items() if value is not None}


def changed(**fields: Any) -> dict[str, Any]:
    """The fields of a partial update that were given (not ``UNSET``); ``None`` stays null."""
    return {name: jsonable(value) for name, value in fields.items() if value is not UNSET}


# GET routes take a few filters as query parameters: field of RecallFilters → query name.
LIST_FILTERS = {
    "type": "type",
    "tags": "tag",
    "delivery_mode": "delivery_mode",
    "source_type": "source_type",
    "trust_tier": "trust_tier",
    "include_deleted": "include_deleted",
}
PINNED_FILTERS = {"type": "type", "tags": "tag", "trust_tier": "trust_tier"}


def filter_params(filters: Filters | None, supported: Mapping[str, str]) -> dict[str, Any]:
    """Query parameters for the filters a GET route supports; an error names any other one."""
    if filters is None:
        return {}
    try:
        model = RecallFilters.model_validate(filters)
    except ValidationError as exc:
        field, message = first_error(exc, "filters.")
        raise InvalidInputError(f"{field}: {message}", field=field) from None
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
