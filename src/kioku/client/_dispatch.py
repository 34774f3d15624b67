"""How one definition of an operation serves both clients.

Each operation is written once, as a method of ``Operations`` that builds its ``Call``, and
decorated with ``@operation``. The decorator makes it a descriptor: read from a ``Client`` it is a
blocking method returning the result, read from an ``AsyncClient`` a coroutine method; both keep
the definition's parameters, defaults and docstring, for type checkers (the overloads of
``__get__``), for ``inspect`` and ``help()`` (real functions, ``functools.wraps``) and for IDEs.
A client only says how it sends a ``Call``: ``BlockingSender._send`` or ``AsyncSender._send``.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from kioku.client._transport import Call

P = ParamSpec("P")
T = TypeVar("T")


class BlockingSender(ABC):
    """A client whose operations block until the answer is read."""

    @abstractmethod
    def _send(self, call: Call[T]) -> T:
        """Send one request and read its answer."""


class AsyncSender(ABC):
    """A client whose operations are coroutines."""

    @abstractmethod
    async def _send(self, call: Call[T]) -> T:
        """Send one request and read its answer."""


class Operation(Generic[P, T]):
    """One REST operation as a method of both clients (see the module docstring)."""

    def __init__(self, build: Callable[Concatenate[Any, P], Call[T]]) -> None:
        self._build = build

        # The clients' `_send` is their one hook, private to this package: not public API.
        @functools.wraps(build)
        def blocking(client: Any, /, *args: Any, **kwargs: Any) -> Any:
            return client._send(build(client, *args, **kwargs))

        @functools.wraps(build)
        async def asynchronous(client: Any, /, *args: Any, **kwargs: Any) -> Any:
            return await client._send(build(client, *args, **kwargs))

        self._blocking: Callable[..., Any] = blocking
        self._async: Callable[..., Any] = asynchronous

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Callable[..., Any]: ...
    @overload
    def __get__(self, client: BlockingSender, owner: type[Any] | None = None) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, client: AsyncSender, owner: type[Any] | None = None
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, client: object, owner: type[Any] | None = None) -> Callable[..., Any]:
        cls = owner if client is None else type(client)
        method = self._async if cls is not None and issubclass(cls, AsyncSender) else self._blocking
        return method if client is None else method.__get__(client, cls)


def operation(build: Callable[Concatenate[Any, P], Call[T]]) -> Operation[P, T]:
    """Make a ``Call`` builder a method of both clients (its ``self`` is the client)."""
    return Operation(build)
