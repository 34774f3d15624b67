"""recall on PostgreSQL: the reads on the calling thread share transactions (issue 21: one
round trip where there were several), and the answer is the one separate reads give."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.models import BatchCreate, RecallRequest
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from tests.conftest import ManualClock, make_settings
from tests.postgres import empty_postgres_database

SESSIONS = [
    ["Alice likes green tea in the morning", "She switched to oolong tea last spring",
     "Bob prefers black coffee", "The coffee machine on floor 3 is broken"],
    ["The staging database listens on port 5433", "Production uses port 5432",
     "Backups of the staging database run nightly", "Alice owns the backup scripts"],
    ["アリスは毎朝緑茶を飲む", "ボブはコーヒーが好き", "会議は毎週月曜日の十時から",
     "会議室は三階にある"],
]  # fmt: skip
QUERIES = ["What tea does Alice drink?", "staging database port", "会議はいつ？", "coffee"]


@pytest.fixture
def rt(tmp_path: Path, clock: ManualClock, postgres_database: str) -> Iterator[Runtime]:
    empty_postgres_database(postgres_database)
    runtime = open_runtime(
        make_settings(tmp_path, database_url=postgres_database),
        embedder=FakeEmbedder(),
        clock=clock,
    )
    try:
        yield runtime
    finally:
        runtime.close()


@pytest.fixture
def me(rt: Runtime) -> Principal:
    principal = rt.local_principal("rest")
    for number, turns in enumerate(SESSIONS):
        items: list[dict[str, Any]] = [
            {"summary": text, "thread": f"session-{number}", "position": i}
            for i, text in enumerate(turns)
        ]
        rt.memories.remember_batch(principal, "default", BatchCreate(items=items, wait=True))
    return principal


def checkouts_on_this_thread(rt: Runtime, ask: Any) -> tuple[int, Any]:
    """How many connections ``ask()`` borrowed from the pool on the calling thread."""
    pool = rt.store.db.pool  # type: ignore[attr-defined]  # PostgreSQL's pool
    borrow = pool.connection
    mine = threading.get_ident()
    count = 0

    @contextlib.contextmanager
    def counted(*args: Any, **kwargs: Any) -> Iterator[Any]:
        nonlocal count
        if threading.get_ident() == mine:
            count += 1
        with borrow(*args, **kwargs) as conn:
            yield conn

    pool.connection = counted
    try:
        answer = ask()
    finally:
        del pool.connection
    return count, answer


def test_a_recall_borrows_two_connections_for_its_reads_not_one_per_read(
    rt: Runtime, me: Principal
) -> None:
    request = RecallRequest(query="What tea does Alice drink?", k=5)
    rt.recall.recall(me, "default", request)  # warm: languages, caches
    borrowed, result = checkouts_on_this_thread(
        rt, lambda: rt.recall.recall(me, "default", request)
    )
    assert result.results, "the recall must find something for the count to mean anything"
    # One transaction for the context, the lexical leg and every stage's signals; one for
    # the results' rows; at most one more for what the association graph learns from it.
    # Separate reads borrow one each: seven or more here.
    assert borrowed <= 3, borrowed


@pytest.mark.parametrize("query", QUERIES)
def test_shared_transactions_give_the_answer_separate_reads_give(
    rt: Runtime, me: Principal, query: str
) -> None:
    request = RecallRequest(query=query, k=8)
    together = rt.recall.recall(me, "default", request)
    store: Any = rt.store
    store.reads_together = lambda workspace_id: contextlib.nullcontext()
    try:
        apart = rt.recall.recall(me, "default", request)
    finally:
        del store.reads_together
    assert together.results
    assert [(h.id, h.score) for h in together.results] == [(h.id, h.score) for h in apart.results]
    assert together.confidence == apart.confidence
