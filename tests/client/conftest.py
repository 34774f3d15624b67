"""Both SDK clients, in-process over the real app: one scenario drives Client and AsyncClient."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any, cast

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from kioku import AsyncClient, Client
from kioku.api import create_app
from kioku.runtime import Runtime


class Blocking:
    """An AsyncClient driven from sync test code: every call runs on the portal's event loop."""

    def __init__(self, portal: BlockingPortal, client: AsyncClient) -> None:
        self._portal = portal
        self._client = client

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        return lambda *args, **kwargs: self._portal.call(functools.partial(method, *args, **kwargs))


@pytest.fixture(params=["Client", "AsyncClient"])
def kioku(request: pytest.FixtureRequest, runtime: Runtime) -> Iterator[Client]:
    """The same calls through ``Client`` and through ``AsyncClient`` (typed as the former)."""
    app = create_app(runtime=runtime)
    if request.param == "Client":
        with Client(app=app) as client:
            yield client
        return
    with start_blocking_portal() as portal:
        async_client = AsyncClient(app=app)
        try:
            yield cast(Client, Blocking(portal, async_client))
        finally:
            portal.call(async_client.aclose)
