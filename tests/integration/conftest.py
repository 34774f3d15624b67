"""Integration fixtures: the real bundled model, loaded once per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.embeddings.bundled import BundledEmbedder
from kioku.runtime import Runtime, open_runtime
from tests.conftest import make_settings


@pytest.fixture(scope="session")
def bundled() -> BundledEmbedder:
    return BundledEmbedder()


@pytest.fixture
def real_runtime(tmp_path: Path, bundled: BundledEmbedder) -> Iterator[Runtime]:
    runtime = open_runtime(make_settings(tmp_path), embedder=bundled)
    try:
        yield runtime
    finally:
        runtime.close()
