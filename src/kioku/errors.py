"""Domain errors: raised once in the service, translated once per surface."""

from __future__ import annotations


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
