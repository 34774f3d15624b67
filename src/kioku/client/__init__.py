"""The Python SDK: ``Client`` (blocking) and ``AsyncClient`` over httpx.

Both speak to a kioku server over HTTP, or to an ASGI app in the same process (``app=``), and
share one request builder per operation (``_operations``) and one error mapping
(``_transport``), so the two differ only in ``await``.
"""

from kioku.client._operations import UNSET, Filters, Unset
from kioku.client.asynchronous import AsyncClient
from kioku.client.sync import Client

__all__ = ["UNSET", "AsyncClient", "Client", "Filters", "Unset"]
