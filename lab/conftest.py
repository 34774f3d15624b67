"""What the lab's tests share: a runtime on a scratch SQLite file with the fake embedder, as
``tests/conftest.py`` builds one for the product's tests (the lab does not import the suite).

Reads kioku internals: ``open_runtime``, ``Settings``, ``embeddings.fake.FakeEmbedder``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    """A runtime on a fresh SQLite file, embedding inline (deterministic)."""
    database = {"url": f"sqlite:///{tmp_path / 'kioku.db'}"}
    settings = Settings(
        {"database": database, "embedder": {"background": False}, "server": {"dev": True}}
    )
    opened = open_runtime(settings, embedder=FakeEmbedder())
    try:
        yield opened
    finally:
        opened.close()
