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

from typing import TYPE_CHECKING

from kioku.lazy_names import lazy_names

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

__getattr__ = lazy_names(__name__, _LAZY)  # the SDK's names: on first use


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
