"""kioku: a self-hostable memory server for AI agents."""

from kioku.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    KiokuError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
)

__version__ = "0.1.0"

__all__ = [
    "ConflictError",
    "ForbiddenError",
    "InvalidInputError",
    "KiokuError",
    "NotFoundError",
    "PayloadTooLargeError",
    "RateLimitedError",
    "__version__",
]
