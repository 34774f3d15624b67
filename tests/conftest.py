"""Shared fixtures: a Runtime on a temporary SQLite file with the fake embedder."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import settings as hypothesis_settings

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from kioku.settings import Settings
from kioku.settings.model import sections
from kioku.settings.sections import variable_of
from kioku.storage import open_store
from kioku.storage.postgres.throwaway import postgres_server, scratch_database
from tests.postgres import app_role_url, empty_postgres_database

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# A developer's own settings file (~/.config/kioku/config.toml) never reaches a test: tests that
# read a file name it in KIOKU_CONFIG themselves (tests/test_settings_sources.py).
os.environ["KIOKU_CONFIG"] = ""

# `make test` (and so CI) draws the same Hypothesis examples on every run: a gate that passes
# or fails by the seed of the day cannot gate. `make soak` explores with fresh random seeds
# (KIOKU_HYPOTHESIS_PROFILE=explore); whatever it finds is pinned as an example-based test.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
hypothesis_settings.register_profile("explore", derandomize=False)
hypothesis_settings.load_profile(os.environ.get("KIOKU_HYPOTHESIS_PROFILE", "ci"))


def make_settings(tmp_path: Path, **overrides: object) -> Settings:
    """Settings on a fresh SQLite file, embedding inline (deterministic tests). ``overrides``
    are named by their variable, lower case, without ``KIOKU_`` (``rate_limit_per_minute=0``
    sets ``limits.rate_limit_per_minute``, as KIOKU_RATE_LIMIT_PER_MINUTE would)."""
    values: dict[str, object] = {
        "database_url": f"sqlite:///{tmp_path / 'kioku.db'}",
        "embed_async": False,
        "dev": True,  # no key needed, as `kioku serve --dev`; auth tests send keys
        # httpx's in-process clients send Host: testserver; the product answers loopback only.
        "allowed_hosts": ["testserver"],
    }
    values.update(overrides)
    where = {
        variable_of(field).removeprefix("KIOKU_").lower(): (section, key)
        for section, fields in sections().items()
        for key, field in fields.items()
    }
    nested: dict[str, dict[str, object]] = {}
    for name, value in values.items():
        section, key = where[name]
        nested.setdefault(section, {})[key] = value
    return Settings(nested)


def backend_settings(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str | None = None
) -> Settings:
    """``make_settings`` on ``backend``, by default the one a ``params=["sqlite", "postgres"]``
    fixture's ``request.param`` names (PostgreSQL: the session's test database, emptied first)."""
    if (backend or request.param) == "sqlite":
        return make_settings(tmp_path)
    url = request.getfixturevalue("postgres_database")
    empty_postgres_database(url)
    return make_settings(tmp_path, database_url=url)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


class ManualClock:
    """A clock the test moves by hand: expiry is tested by advancing it, never by sleeping."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 6, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def runtime(settings: Settings, embedder: FakeEmbedder, clock: ManualClock) -> Iterator[Runtime]:
    rt = open_runtime(settings, embedder=embedder, clock=clock)
    try:
        yield rt
    finally:
        rt.close()


@pytest.fixture(params=["sqlite", "postgres"])
def runtime_on_each_backend(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[Runtime]:
    """A runtime with the fake embedder and the hand-moved clock, on SQLite and PostgreSQL
    (a module asks for it as its ``runtime``)."""
    rt = open_runtime(backend_settings(request, tmp_path), embedder=FakeEmbedder(), clock=clock)
    try:
        yield rt
    finally:
        rt.close()


@pytest.fixture
def principal(runtime: Runtime) -> Principal:
    return runtime.local_principal("rest")


@pytest.fixture
def other_principal(runtime: Runtime) -> Principal:
    """The owner of a second workspace: an attacker from the tenant next door."""
    workspace = runtime.store.ensure_workspace("intruder")
    return Principal(workspace_id=workspace.id, role="owner", channel="rest")


class SyncASGIClient:
    """httpx over ``ASGITransport`` (the real app, in-process), called from sync tests."""

    def __init__(self, portal: BlockingPortal, client: httpx.AsyncClient) -> None:
        self._portal = portal
        self._client = client

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self._portal.call(functools.partial(self._client.request, method, url, **kwargs))

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PATCH", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", url, **kwargs)


@contextmanager
def portal_client(app: Any) -> Iterator[SyncASGIClient]:
    """A sync httpx client over the app, in-process (the app's lifespan does not run)."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=True)
    with start_blocking_portal() as portal:
        async_client = httpx.AsyncClient(transport=transport, base_url="http://testserver")
        try:
            yield SyncASGIClient(portal, async_client)
        finally:
            portal.call(async_client.aclose)


@pytest.fixture
def client(runtime: Runtime) -> Iterator[SyncASGIClient]:
    with portal_client(create_app(runtime=runtime)) as sync_client:
        yield sync_client


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL 18 + pgvector server for the whole session: KIOKU_TEST_DATABASE_URL, or
    a throwaway one started on first use and deleted at the end (see postgres/throwaway.py)."""
    with postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_database(postgres_url: str) -> Iterator[str]:
    """A scratch database migrated to the newest schema, shared by the session's tests.

    kioku connects as ``kioku_app``, a role that owns the database but is neither a superuser
    nor BYPASSRLS, as in production: the row-level security policies apply to every query the
    tests make (a superuser would pass through them unseen)."""
    with scratch_database(postgres_url) as url:
        app_url = app_role_url(url)
        open_store(app_url).close()
        yield app_url
