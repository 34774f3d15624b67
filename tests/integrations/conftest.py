"""A real kioku app (in-process, on SQLite and on PostgreSQL) under LangGraph's real store API.

``store`` is a ``KiokuStore`` driven through LangGraph's sync API (``batch``, over
``kioku.Client``) or its async API (``abatch``, over ``kioku.AsyncClient``), so every scenario
runs on both backends through both entry points.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal

from kioku import AsyncClient, Client
from kioku.api import create_app
from kioku.integrations.langgraph import KiokuStore
from kioku.runtime import Runtime
from kioku.settings import Settings
from tests.conftest import backend_settings


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return backend_settings(request, tmp_path)


@pytest.fixture
def app(runtime: Runtime) -> Any:
    return create_app(runtime=runtime)


@pytest.fixture
def sdk(app: Any) -> Iterator[Client]:
    """The SDK on the same app: to look at what the store wrote, as kioku sees it."""
    with Client(app=app) as client:
        yield client


class AsyncDriven:
    """A KiokuStore used through LangGraph's async methods (``aget``, ``aput``, ...,
    ``abatch``), called from sync test code on the portal's event loop."""

    _ASYNC: ClassVar[dict[str, str]] = {
        "get": "aget",
        "put": "aput",
        "delete": "adelete",
        "search": "asearch",
        "list_namespaces": "alist_namespaces",
        "batch": "abatch",
    }

    def __init__(self, portal: BlockingPortal, store: KiokuStore) -> None:
        self._portal = portal
        self.store = store

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, self._ASYNC.get(name, name))
        if name not in self._ASYNC:
            return method
        return lambda *args, **kwargs: self._portal.call(functools.partial(method, *args, **kwargs))


@pytest.fixture(params=["sync", "async"])
def store(request: pytest.FixtureRequest, app: Any, sdk: Client) -> Iterator[KiokuStore]:
    """The store under test, driven through LangGraph's sync or async API."""
    if request.param == "sync":
        yield KiokuStore(sdk)
        return
    with start_blocking_portal() as portal:
        async_client = AsyncClient(app=app)
        try:
            yield cast(KiokuStore, AsyncDriven(portal, KiokuStore(async_client=async_client)))
        finally:
            portal.call(async_client.aclose)
