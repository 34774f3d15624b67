"""The Python SDK: ``Client`` (blocking) and ``AsyncClient`` over httpx.

Both speak to a kioku server over HTTP, or to an ASGI app in the same process (``app=``). Every
operation is written once (``_operations``) and becomes a method of both (``_dispatch``); they
share one error mapping (``_transport``), so the two differ only in ``await``.
"""

from kioku.client._wire import UNSET, Filters, Unset
from kioku.client.asynchronous import AsyncClient
from kioku.client.sync import Client

__all__ = ["UNSET", "AsyncClient", "Client", "Filters", "Unset"]
