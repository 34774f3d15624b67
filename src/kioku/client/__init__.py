"""The Python SDK: ``Client`` (blocking) and ``AsyncClient`` over httpx.

Both speak to a kioku server over HTTP, or to an ASGI app in the same process (``app=``). Every
operation is written once (``_operations``) and becomes a method of both (``_dispatch``); they
share one error mapping (``_transport``), so the two differ only in ``await``.

``load_pinned_block`` / ``aload_pinned_block`` render the pinned set for a prompt with
``render_pinned_block`` (``kioku.client.pinned_block``), which is pure. The names load on first
use, so ``import kioku.client.pinned_block`` (a harness hook's) does not import httpx or
pydantic; ``from kioku.client import Client`` works as ever.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kioku.client._wire import UNSET, Filters, Unset
    from kioku.client.asynchronous import AsyncClient
    from kioku.client.pinned import aload_pinned_block, load_pinned_block
    from kioku.client.pinned_block import render_pinned_block
    from kioku.client.session import ThreadSession
    from kioku.client.sync import Client

_LAZY = {
    "UNSET": "kioku.client._wire",
    "Filters": "kioku.client._wire",
    "Unset": "kioku.client._wire",
    "AsyncClient": "kioku.client.asynchronous",
    "Client": "kioku.client.sync",
    "load_pinned_block": "kioku.client.pinned",
    "aload_pinned_block": "kioku.client.pinned",
    "render_pinned_block": "kioku.client.pinned_block",
    "ThreadSession": "kioku.client.session",
}

__all__ = [
    "UNSET",
    "AsyncClient",
    "Client",
    "Filters",
    "ThreadSession",
    "Unset",
    "aload_pinned_block",
    "load_pinned_block",
    "render_pinned_block",
]


def __getattr__(name: str) -> Any:
    """The SDK's names, imported when first asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kioku.client' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
