"""kioku: a self-hostable memory server for AI agents.

The public surface is the SDK (``kioku.Client``, ``kioku.AsyncClient``), the wire models
(``kioku.models``) and the error classes the SDK raises.

The SDK (httpx) and the wire models (pydantic) load on first use of their name, not with the
package: ``kioku --version`` and the other quick commands of the CLI import ``kioku`` too, and
must start in a fraction of a second (``from kioku import Client`` works as before).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kioku._version import __version__
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
from kioku.lazy_names import lazy_names

if TYPE_CHECKING:
    from kioku import models
    from kioku.client import AsyncClient, Client

_LAZY = {"AsyncClient": "kioku.client", "Client": "kioku.client", "models": "kioku.models"}

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


__getattr__ = lazy_names(__name__, _LAZY)  # ``Client``, ``AsyncClient``, ``models``: on first use


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
