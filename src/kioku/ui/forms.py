"""From form fields (all strings) to the service's input models, and back to a message.

Every problem becomes an ``InvalidInputError`` naming the field, so a page can show it next to
the form instead of failing: the service's own errors already have that shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from kioku.errors import InvalidInputError, KiokuError, first_error

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class FormError:
    """What to show above a form: the message and the field it is about."""

    message: str
    field: str | None

    @classmethod
    def of(cls, exc: KiokuError) -> FormError:
        """The message and field of a service error."""
        return cls(message=exc.message, field=exc.field)

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


def validated(model: type[M], data: dict[str, Any]) -> M:
    """``model`` built from ``data``; a validation problem names its field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, message = first_error(exc)
        message = message.removeprefix("Value error, ")
        raise InvalidInputError(message, field=field or None) from exc


def tag_list(text: str) -> list[str]:
    """Tags typed as ``a, b c``: split on commas and spaces, blanks dropped, order kept."""
    seen: list[str] = []
    for tag in text.replace(",", " ").split():
        if tag not in seen:
            seen.append(tag)
    return seen


def number(text: str, field: str) -> float | None:
    """A number typed into ``field``; blank is ``None``."""
    if not text.strip():
        return None
    try:
        return float(text)
    except ValueError:
        raise InvalidInputError(f"{text!r} is not a number", field=field) from None


def whole_number(text: str, field: str) -> int | None:
    """A whole number typed into ``field``; blank is ``None``."""
    if not text.strip():
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidInputError(f"{text!r} is not a whole number", field=field) from None


def moment(text: str, field: str) -> datetime | None:
    """A ``datetime-local`` value (read as UTC) or an ISO timestamp; blank is ``None``."""
    if not text.strip():
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInputError(f"{text!r} is not a date and time", field=field) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def json_or_text(text: str) -> Any:
    """A state value: JSON when it parses as JSON, else the text itself as a string."""
    try:
        return json.loads(text)
    except ValueError:
        return text
