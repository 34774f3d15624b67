"""``kioku.Client``: every operation of a kioku server as a blocking method."""

from __future__ import annotations

from typing import Any, Self, TypeVar

import httpx

from kioku.client._dispatch import BlockingSender
from kioku.client._operations import Operations
from kioku.client._transport import (
    BlockingASGITransport,
    Call,
    ExcInfo,
    HttpClient,
    read,
    request_options,
)

T = TypeVar("T")


class Client(Operations, BlockingSender, HttpClient[httpx.Client]):
    """A kioku server over HTTP, or an ASGI app in this process (``app=``).

    ``base_url`` defaults to ``$KIOKU_URL``, then ``http://127.0.0.1:8765``; ``api_key`` to
    ``$KIOKU_API_KEY`` (sent as ``Authorization: Bearer``). ``app=create_app(runtime=...)``
    serves requests in-process, without a network (the app is not started: give it a runtime).

    Methods are named like the REST operations and return ``kioku.models`` objects. An error
    answer raises a ``KiokuError`` subclass (``NotFoundError``, ``InvalidInputError``, ...)
    carrying ``message``, ``field``, ``details`` and ``status_code``; a network failure raises
    the underlying ``httpx.TransportError`` (e.g. ``httpx.ConnectError``).
    """

    def _connect(self, app: Any, options: dict[str, Any]) -> httpx.Client:
        transport = BlockingASGITransport(app) if app is not None else None
        return httpx.Client(transport=transport, **options)

    def close(self) -> None:
        """Release the connections (or the in-process event loop)."""
        self._http.close()

    def __enter__(self) -> Self:
        self._http.__enter__()
        return self

    def __exit__(self, *exc_info: *ExcInfo) -> None:
        self._http.__exit__(*exc_info)

    def _send(self, call: Call[T]) -> T:
        response = self._http.request(call.method, call.path, **request_options(call))
        return read(call, response)
