"""Shared field types and the request-body base class of every wire model."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

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

DeliveryMode = Literal["on_recall", "always", "on_trigger"]
SourceType = Literal["manual", "api", "import", "connector", "sleep"]
TrustTier = Literal["trusted", "external"]
SleepMode = Literal["off", "edges_only", "full"]
EmbeddingStatus = Literal["pending", "ready", "failed"]
Confidence = Literal["high", "moderate", "low", "none"]

CONTEXT_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
UUID_PATTERN = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
MAX_SUMMARY_CHARS = 500
MAX_TAGS = 32
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


class InputModel(BaseModel):
    """Base of every request body: unknown fields are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _reject_server_stamped(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in SERVER_STAMPED:
                if name in data and name not in cls.model_fields:
                    # An error located at the field (a plain ValueError here would name none).
                    message = (
                        f"{name} is stamped by the server from the channel and the context; "
                        "a client cannot set it"
                    )
                    error = PydanticCustomError("server_stamped", message)
                    details = InitErrorDetails(type=error, loc=(name,), input=data[name])
                    raise ValidationError.from_exception_data(cls.__name__, [details])
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
