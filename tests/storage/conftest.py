"""The storage contract runs on every backend; PostgreSQL joins in its own issue."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.storage import open_store
from kioku.storage.base import Store
from tests.storage.postgres_server import postgres_server

BACKENDS = ["sqlite"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    backend = request.param
    assert backend == "sqlite"
    opened = open_store(f"sqlite:///{tmp_path / 'contract.db'}")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL 18 + pgvector server for the whole session: KIOKU_TEST_DATABASE_URL, or
    a throwaway one started on first use and deleted at the end (see postgres_server.py)."""
    with postgres_server() as url:
        yield url
