"""Recall on PostgreSQL through REST, with the real bundled model, when a pooled connection
was handed back in autocommit mode: the transaction-local scope and pgvector settings must
still hold for the next borrower (issue 21: one such connection silently searched with
pgvector's defaults; under row-level security it would find nothing at all)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from kioku.embeddings.bundled import BundledEmbedder
from kioku.runtime import Runtime, open_runtime
from kioku.storage.postgres import PostgresStore
from tests.conftest import SyncASGIClient, make_settings
from tests.postgres import empty_postgres_database

pytestmark = pytest.mark.integration

API = "/api/v1/contexts/default"
FACTS = [
    "The staging database listens on port 5433.",
    "Alice prefers green tea over coffee and brings her own cup.",
    "Nightly backups start at 03:00 JST and are kept for 35 days.",
]


@pytest.fixture(scope="module")
def bundled() -> BundledEmbedder:
    return BundledEmbedder()


@pytest.fixture
def runtime(postgres_database: str, tmp_path: Path, bundled: BundledEmbedder) -> Iterator[Runtime]:
    empty_postgres_database(postgres_database)
    rt = open_runtime(make_settings(tmp_path, database_url=postgres_database), embedder=bundled)
    try:
        yield rt
    finally:
        rt.close()


def test_recall_after_a_connection_came_back_in_autocommit(
    runtime: Runtime, client: SyncASGIClient
) -> None:
    for summary in FACTS:
        assert client.post(f"{API}/memories", json={"summary": summary}).status_code == 201
    store = runtime.store
    assert isinstance(store, PostgresStore)
    with ExitStack() as borrowed:  # every pooled connection, as a careless borrower leaves it
        size = max(store.db.pool.get_stats()["pool_size"], 2)
        for _ in range(size):
            borrowed.enter_context(store.db.pool.connection()).autocommit = True
    answer = client.post(f"{API}/recall", json={"query": "Which port does staging use?", "k": 3})
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert results[0]["summary"] == FACTS[0]
    assert results[0]["score_breakdown"]["vector"] is not None
    assert results[0]["score_breakdown"]["lexical"] is not None
