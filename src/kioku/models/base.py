"""Shared field types and the request-body base class of every wire model."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, LiteralString

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from kioku.models.json_input import find_unstorable

CONTEXT_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
UUID_PATTERN = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MAX_SUMMARY_CHARS = 500
MAX_TAGS = 32
MAX_THREAD_CHARS = 300
MAX_THREAD_POSITION = 2**53 - 1
"""Positions may be timestamps (a Slack ts in microseconds); JSON numbers stay exact."""
MAX_QUERY_CHARS = 4000

Label = Annotated[StrictStr, Field(min_length=1, max_length=64)]

MIN_YEAR, MAX_YEAR = 1900, 9998


def _storable(value: datetime) -> datetime:
    # Far outside this range a timestamp is a mistake, and near year 1 or 9999 converting it
    # to UTC (as every backend stores it) overflows: refuse it here, with the field named.
    try:
        year = value.astimezone(UTC).year
    except OverflowError:
        year = value.year
    if not MIN_YEAR <= year <= MAX_YEAR:
        raise ValueError(f"must be between the years {MIN_YEAR} and {MAX_YEAR} (UTC)")
    return value


Timestamp = Annotated[AwareDatetime, AfterValidator(_storable)]
"""A client-given instant: with a time zone, within years 1900-9998."""
SERVER_STAMPED = ("source_type", "trust_tier")


def field_error(
    model: str, loc: tuple[str | int, ...], kind: LiteralString, message: str
) -> ValidationError:
    """A validation error located at ``loc`` (a plain ValueError in a model validator would
    name no field). The refused value is left out: it may not even be printable."""
    error = PydanticCustomError(kind, "{message}", {"message": message})
    details = InitErrorDetails(type=error, loc=loc, input=None)
    return ValidationError.from_exception_data(model, [details])


class InputModel(BaseModel):
    """Base of every request body (and of every MCP tool's arguments): unknown fields are an
    error, not silently dropped; provenance fields are the server's; text must be valid
    Unicode without NUL and JSON values at most ``MAX_JSON_DEPTH`` deep
    (``kioku.models.json_input``)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _reject_server_stamped(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in SERVER_STAMPED:
                if name in data and name not in cls.model_fields:
                    message = (
                        f"{name} is stamped by the server from the channel and the context; "
                        "a client cannot set it"
                    )
                    raise field_error(cls.__name__, (name,), "server_stamped", message)
        return data

    @model_validator(mode="before")
    @classmethod
    def _reject_unstorable(cls, data: Any) -> Any:
        found = find_unstorable(data) if isinstance(data, dict) else None
        if found is not None:
            loc, message = found
            raise field_error(cls.__name__, loc, "unstorable", message)
        return data


def clean_tags(tags: list[str]) -> list[str]:
    """Strip, drop duplicates, keep first-seen order."""
    seen: dict[str, None] = {}
    for tag in tags:
        tag = tag.strip()
        if not tag:
            raise ValueError("tags must be non-empty strings")
        seen.setdefault(tag, None)
    return list(seen)


def clean_summary(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("summary must not be empty or only whitespace")
    return value
