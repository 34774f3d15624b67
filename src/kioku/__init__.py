"""kioku: a self-hostable memory server for AI agents.

The public surface is the SDK (``kioku.Client``, ``kioku.AsyncClient``), the wire models
(``kioku.models``) and the error classes the SDK raises.
"""

from kioku import models
from kioku._version import __version__
from kioku.client import AsyncClient, Client
from kioku.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    KiokuError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    UnauthorizedError,
)

__all__ = [
    "AsyncClient",
    "Client",
    "ConflictError",
    "ForbiddenError",
    "InvalidInputError",
    "KiokuError",
    "NotFoundError",
    "PayloadTooLargeError",
    "RateLimitedError",
    "UnauthorizedError",
    "__version__",
    "models",
]
