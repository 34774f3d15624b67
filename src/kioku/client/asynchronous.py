"""``kioku.AsyncClient``: every operation of a kioku server as a coroutine method."""

from __future__ import annotations

from typing import Any, Self, TypeVar

import httpx

from kioku.client._dispatch import AsyncSender
from kioku.client._operations import Operations
from kioku.client._transport import Call, ExcInfo, HttpClient, read, request_options

T = TypeVar("T")


class AsyncClient(Operations, AsyncSender, HttpClient[httpx.AsyncClient]):
    """The asyncio twin of ``kioku.Client``: the same methods and arguments, awaited.

    Construction and defaults are those of ``Client`` (``$KIOKU_URL``, ``$KIOKU_API_KEY``);
    ``app=create_app(runtime=...)`` runs requests in-process through ``httpx.ASGITransport``.
    Use ``async with AsyncClient() as kioku:`` or ``await kioku.aclose()``. An error answer
    raises a ``KiokuError`` subclass with ``message``, ``field``, ``details`` and
    ``status_code``; a network failure raises the underlying ``httpx.TransportError``.
    """

    def _connect(self, app: Any, options: dict[str, Any]) -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=app) if app is not None else None
        return httpx.AsyncClient(transport=transport, **options)

    async def aclose(self) -> None:
        """Release the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        await self._http.__aenter__()
        return self

    async def __aexit__(self, *exc_info: *ExcInfo) -> None:
        await self._http.__aexit__(*exc_info)

    async def _send(self, call: Call[T]) -> T:
        response = await self._http.request(call.method, call.path, **request_options(call))
        return read(call, response)
