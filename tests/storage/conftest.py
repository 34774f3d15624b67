"""The storage contract runs on every backend; PostgreSQL joins in its own issue."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.storage import open_store
from kioku.storage.base import Store

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
