"""The storage contract runs on every backend: SQLite files and PostgreSQL databases.

PostgreSQL tests share one migrated database per session, emptied before each test: TRUNCATE
takes ~0.05 s where copying a template database takes ~0.15 s and migrating a new one ~0.25 s.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.storage import open_store
from kioku.storage.base import Store
from kioku.storage.postgres import PostgresStore
from tests.postgres import APP_ROLE, empty_postgres_database
from tests.sql_distribution import SqlRecorder

__all__ = ["APP_ROLE", "BACKENDS", "empty_postgres_database"]

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(autouse=True)
def sql_stays_on_one_tenant(monkeypatch: pytest.MonkeyPatch) -> Iterator[SqlRecorder]:
    """Every statement kioku sends PostgreSQL during a storage test must be one Citus can run
    on one tenant's node (see tests/sql_distribution.py): pinned to a workspace, tenant tables
    joined on equal ``workspace_id``. A test that sends one that is not fails at teardown."""
    recorder = SqlRecorder()
    recorder.install(monkeypatch)
    yield recorder
    problems = recorder.problems()
    if problems:
        pytest.fail("statements that would leave one tenant's shard:\n" + "\n".join(problems))


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    backend = request.param
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'contract.db'}"
    else:
        assert backend == "postgres"
        url = request.getfixturevalue("postgres_database")
        empty_postgres_database(url)
    opened = open_store(url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def pg(postgres_database: str) -> Iterator[PostgresStore]:
    """A PostgreSQL store on the session's database, emptied first (the PostgreSQL-only tests)."""
    empty_postgres_database(postgres_database)
    store = open_store(postgres_database)
    assert isinstance(store, PostgresStore)
    try:
        yield store
    finally:
        store.close()
