"""Integration fixtures: the real bundled model, loaded once per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.api import create_app
from kioku.embeddings.bundled import BundledEmbedder
from kioku.runtime import Runtime, open_runtime
from tests.conftest import SyncASGIClient, backend_settings, make_settings, portal_client


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


@pytest.fixture(params=["sqlite", "postgres"])
def client(
    request: pytest.FixtureRequest, tmp_path: Path, bundled: BundledEmbedder
) -> Iterator[SyncASGIClient]:
    """A REST client over the real bundled model, once on each backend (a module may define
    its own ``client`` instead)."""
    runtime = open_runtime(backend_settings(request, tmp_path), embedder=bundled)
    try:
        with portal_client(create_app(runtime=runtime)) as rest:
            yield rest
    finally:
        runtime.close()
