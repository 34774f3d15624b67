"""kioku: a self-hostable memory server for AI agents.

The public surface is the SDK (``kioku.Client``, ``kioku.AsyncClient``), the wire models
(``kioku.models``) and the error classes the SDK raises.

The SDK (httpx) and the wire models (pydantic) load on first use of their name, not with the
package: ``kioku --version`` and the other quick commands of the CLI import ``kioku`` too, and
must start in a fraction of a second (``from kioku import Client`` works as before).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    """``kioku.Client``, ``kioku.AsyncClient``, ``kioku.models``: imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kioku' has no attribute {name!r}")
    value = importlib.import_module(module)
    if name != "models":
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
