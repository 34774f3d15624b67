"""What Client and AsyncClient share below the operations: options, errors, in-process serving."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio.from_thread
import httpx

from kioku._version import __version__
from kioku.errors import KiokuError, error_from_answer
from kioku.settings import client as client_settings

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from anyio.from_thread import BlockingPortal

T = TypeVar("T")
H = TypeVar("H", httpx.Client, httpx.AsyncClient)
ExcInfo = tuple[type[BaseException] | None, BaseException | None, TracebackType | None]
"""What ``__exit__`` receives."""

DEFAULT_URL = client_settings.DEFAULT_URL
# Requests to an in-process app never leave the process; a loopback name, which the app's
# Host check (kioku.api.hosts) accepts in every configuration.
IN_PROCESS_URL = "http://localhost"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One REST request, and how to read the body of its successful answer."""

    method: str
    path: str
    parse: Callable[[bytes], T]
    params: dict[str, Any] | None = None
    body: Any = None
    headers: dict[str, str] | None = None


def request_options(call: Call[Any]) -> dict[str, Any]:
    """The httpx ``request`` keyword arguments of a call. The body is compact UTF-8 JSON, as
    httpx's ``json=`` writes it, except that text holding a lone UTF-16 surrogate (which UTF-8
    cannot carry: httpx would fail to encode it) is sent ``\\u``-escaped, so that the server
    refuses it with a 422 naming the field rather than the client crashing."""
    headers = dict(call.headers or {})
    options: dict[str, Any] = {"params": call.params, "headers": headers}
    if call.body is not None:
        try:
            text = json.dumps(call.body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            content = text.encode("utf-8")
        except UnicodeEncodeError:
            content = json.dumps(call.body, separators=(",", ":"), allow_nan=False).encode()
        headers["Content-Type"] = "application/json"
        options["content"] = content
    return options


def http_options(
    base_url: str | None, api_key: str | None, timeout: float, *, in_process: bool
) -> dict[str, Any]:
    """The httpx.Client / httpx.AsyncClient keyword arguments both clients are built with."""
    if in_process:
        url = base_url or IN_PROCESS_URL
    else:
        url = base_url or client_settings.server_url() or DEFAULT_URL
    headers = {"User-Agent": f"kioku-python/{__version__}"}
    key = api_key or client_settings.api_key()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return {"base_url": url, "headers": headers, "timeout": timeout}


class HttpClient(Generic[H]):
    """Construction, shared by both clients: where the server is, how to authenticate."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        app: Any = None,
        timeout: float = 30.0,
    ) -> None:
        options = http_options(base_url, api_key, timeout, in_process=app is not None)
        self._http = self._connect(app, options)

    def _connect(self, app: Any, options: dict[str, Any]) -> H:
        """The httpx client, given the options of ``http_options`` (an app: served in-process)."""
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        """The server this client talks to."""
        return str(self._http.base_url)


def read(call: Call[T], response: httpx.Response) -> T:
    """The parsed result of a successful answer; a KiokuError subclass for an error answer."""
    if response.is_success:
        return call.parse(response.content)
    raise to_error(response)


def to_error(response: httpx.Response) -> KiokuError:
    """Map the server's ``{"error": {code, message, field, details}}`` to its exception class."""
    return error_from_answer(response.status_code, response.reason_phrase, response.content)


def nothing(_: bytes) -> None:
    """The parser of answers without a body (204)."""
    return None


class BlockingASGITransport(httpx.BaseTransport):
    """Serve a sync httpx.Client from an ASGI app in this process.

    httpx's ASGITransport is async only, so requests run on an anyio event loop in a worker
    thread: one loop for the client's whole ``with`` block, else one per request (so a client
    that is never closed leaves no thread behind).
    """

    def __init__(self, app: Any) -> None:
        self._inner = httpx.ASGITransport(app=app)
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None

    def __enter__(self) -> BlockingASGITransport:
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop the event loop thread, if one is running."""
        portal_cm, self._portal_cm, self._portal = self._portal_cm, None, None
        if portal_cm is not None:
            portal_cm.__exit__(None, None, None)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Run the request through the app and return the fully read response."""
        if self._portal is not None:
            return self._portal.call(self._send, request)
        with anyio.from_thread.start_blocking_portal() as portal:
            return portal.call(self._send, request)

    async def _send(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        # The raw bytes: the sync client decodes them against the headers, as for any server.
        raw = b"".join([part async for part in response.aiter_raw()])
        await response.aclose()
        return httpx.Response(
            response.status_code, headers=response.headers, stream=httpx.ByteStream(raw)
        )
