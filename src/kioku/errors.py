"""Domain errors: raised once in the service, translated once per surface.

The one status table (``HTTP_STATUS``) and the one reading of a validation failure
(``first_error``) live here, for every surface: REST, UI, CLI, MCP and the SDK.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol


class KiokuError(Exception):
    """Base of every error kioku raises on purpose."""

    code: str = "error"
    status_code: int | None = None
    """The HTTP status, when the SDK received this error from a server."""

    def __init__(
        self, message: str, *, field: str | None = None, details: list[dict] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details or []


class NotFoundError(KiokuError):
    """The thing does not exist, or exists in another workspace (never leak which)."""

    code = "not_found"


class InvalidInputError(KiokuError):
    """A field is wrong; ``field`` names it."""

    code = "invalid_input"


class ForbiddenError(KiokuError):
    """The caller may not do this."""

    code = "forbidden"


class ConflictError(KiokuError):
    """The write collides with existing state (e.g. a duplicate context name)."""

    code = "conflict"


class PayloadTooLargeError(KiokuError):
    """A field or request exceeds its size cap; ``field`` names it."""

    code = "payload_too_large"


class RateLimitedError(KiokuError):
    """Too many requests; try again later."""

    code = "rate_limited"


class UnauthorizedError(KiokuError):
    """No valid credentials: a missing, unknown, revoked or expired key or token."""

    code = "unauthorized"


HTTP_STATUS: dict[type[KiokuError], int] = {
    NotFoundError: 404,
    InvalidInputError: 422,
    ForbiddenError: 403,
    ConflictError: 409,
    PayloadTooLargeError: 413,
    RateLimitedError: 429,
    UnauthorizedError: 401,
}
"""The HTTP status of each error kioku raises on purpose."""

_BY_CODE = {cls.code: cls for cls in HTTP_STATUS}


def http_status(exc: KiokuError) -> int:
    """The status an error is answered with (400 for a ``KiokuError`` not in the table)."""
    return next((status for cls, status in HTTP_STATUS.items() if isinstance(exc, cls)), 400)


def error_class(code: str) -> type[KiokuError]:
    """The exception class of an error ``code`` (``KiokuError`` for a code not known here)."""
    return _BY_CODE.get(code, KiokuError)


def error_from_answer(status_code: int, reason: str, body: bytes) -> KiokuError:
    """The exception of a server's error answer: ``{"error": {code, message, field, details}}``
    read back into its class (the SDK and the CLI's quick commands both raise it)."""
    try:
        error = json.loads(body)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        # Not kioku's error shape (a proxy page, a wrong URL): keep what little there is.
        exc = KiokuError(f"HTTP {status_code} {reason}".strip())
    else:
        cls = error_class(code)
        exc = cls(message, field=error.get("field"), details=error.get("details") or [])
        exc.code = code
    exc.status_code = status_code
    return exc


class Reported(Protocol):
    """A validation failure: pydantic's ``ValidationError`` or FastAPI's request one."""

    def errors(self) -> Sequence[Any]: ...


def field_path(loc: Sequence[int | str], prefix: str = "") -> str:
    """``items.0.summary``: a validation error's location as a dotted path after ``prefix``;
    an error about the whole value is ``prefix`` alone, without its trailing dot."""
    path = ".".join(str(part) for part in loc)
    return prefix + path if path else prefix.rstrip(".")


def first_error(exc: Reported, prefix: str = "", *, sourced: bool = False) -> tuple[str, str]:
    """The first problem of a validation failure as (dotted field path, message).
    ``sourced``: the location starts with where the value came from (``query``, ``path``),
    which is not part of the field's name."""
    error = exc.errors()[0]
    loc = tuple(error["loc"])
    return field_path(loc[1:] if sourced else loc, prefix), str(error["msg"])
