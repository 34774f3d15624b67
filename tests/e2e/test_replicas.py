"""Two ``kioku serve`` replicas on one PostgreSQL database behave as one server.

Four client threads interleave writes, recalls, state upserts and feedback across both
replicas; afterwards every write is there exactly once, seen alike from either replica.
Both replicas run the embedding worker and the periodic state sweep: every memory gets its
vector, and the sweep runs once per period across the two (claimed in ``job_claims``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from kioku import Client
from kioku.models import ContextStats
from tests.e2e.conftest import running_server
from tests.postgres import empty_postgres_database

THREADS = 4
ROUNDS = 15
SWEEP_SECONDS = 2.0


LOGS = ("replica-a.log", "replica-b.log")


@pytest.fixture
def replicas(postgres_database: str, tmp_path: Path) -> Iterator[tuple[str, str, float]]:
    """Two replicas on one database; yields their URLs and when the first one was started."""
    empty_postgres_database(postgres_database)
    env = {
        "KIOKU_DATABASE_URL": postgres_database,
        "KIOKU_STATE_SWEEP_SECONDS": str(SWEEP_SECONDS),
        # Every client thread comes from 127.0.0.1: the per-address budget is not under test
        # here (tests/api/test_ratelimit.py), and the run now outpaces its burst.
        "KIOKU_RATE_LIMIT_PER_MINUTE": "0",
    }
    started = time.monotonic()
    with (
        running_server(tmp_path, "--dev", env=env, log_name=LOGS[0]) as a,
        running_server(tmp_path, "--dev", env=env, log_name=LOGS[1]) as b,
    ):
        yield a, b, started


def _client_round(
    clients: list[Client], context_id: str, worker: int, written: list[str], lock: threading.Lock
) -> None:
    for i in range(ROUNDS):
        # Each step goes to the other replica than the one before.
        writer, reader = clients[(worker + i) % 2], clients[(worker + i + 1) % 2]
        tag = f"w{worker}r{i}"
        memory = writer.remember(context_id, f"replica fact {tag}: the harbour crane is blue")
        with lock:
            written.append(memory.id)
        # Read-your-write across replicas: the lexical leg is searchable on commit.
        hits = reader.recall(context_id, f"replica fact {tag}", k=5)
        assert memory.id in [hit.id for hit in hits.results], tag
        reader.feedback(context_id, memory.id, helpful=i % 3 != 0, query=tag)
        # One shared key, upserted from every thread on both replicas, and one per thread.
        writer.set_state(context_id, "last-writer", {"worker": worker, "round": i})
        reader.set_state(context_id, f"progress-{worker}", {"round": i})


def test_two_replicas_on_one_database_act_as_one_server(
    replicas: tuple[str, str, float], postgres_database: str, tmp_path: Path
) -> None:
    *bases, started = replicas
    clients = [Client(base_url=base, timeout=60) for base in bases]
    try:
        context = clients[0].create_context("shared", description="written by two replicas")
        assert clients[1].get_context(context.id).name == "shared"
        expiring = clients[1].set_state(context.id, "ephemeral", "gone soon", ttl_seconds=1)
        assert expiring.expires_at is not None

        written: list[str] = []
        lock = threading.Lock()
        failures: list[BaseException] = []

        def run(worker: int) -> None:
            try:
                _client_round(clients, context.id, worker, written, lock)
            except BaseException as exc:  # surfaced below, with the thread's assertion
                failures.append(exc)

        threads = [threading.Thread(target=run, args=(w,)) for w in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []

        # Nothing lost, nothing doubled, the same view from both replicas.
        expected = THREADS * ROUNDS
        assert len(set(written)) == expected
        for client in clients:
            ids = _all_memory_ids(client, context.id)
            assert sorted(ids) == sorted(written)
            feedback = _all_feedback(client, context.id)
            assert len(feedback) == expected and {f.memory_id for f in feedback} == set(written)
            keys = {s.key: s.value for s in _all_state(client, context.id)}
            assert set(keys) == {"last-writer", *(f"progress-{w}" for w in range(THREADS))}
            for worker in range(THREADS):
                assert keys[f"progress-{worker}"] == {"round": ROUNDS - 1}
        # Both replicas' embedding workers drained the one queue: every memory has a vector.
        stats = _wait_for_embeddings(clients[1], context.id, expected)
        assert stats.embeddings == {"ready": expected, "pending": 0, "failed": 0}
        hybrid = clients[0].recall(context.id, "what colour is the harbour crane", k=3)
        assert len(hybrid.results) == 3

        # The sweep: it deleted the expired key's row (reads only hid it), and across both
        # replicas it ran at most once per period: each run is a won claim, so the claim
        # count bounds the runs both logs report.
        _wait_for_sweep(postgres_database, context.id)
        time.sleep(SWEEP_SECONDS)  # let a few more periods pass with both replicas idle
        elapsed = time.monotonic() - started
        with psycopg.connect(postgres_database) as conn:
            conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
            claims = conn.execute(
                "SELECT runs FROM job_claims WHERE name = 'state-sweep'"
            ).fetchone()
        assert claims is not None
        logged = {name: _sweep_runs(tmp_path / name) for name in LOGS}
        # +1: the first period starts with the first replica; a log line may trail its claim.
        assert sum(logged.values()) <= claims[0] <= elapsed / SWEEP_SECONDS + 1, (logged, elapsed)
        assert sum(logged.values()) >= claims[0] - 1
    finally:
        for client in clients:
            client.close()


def _sweep_runs(log: Path) -> int:
    return sum("job state-sweep ran on" in line for line in log.read_text().splitlines())


def _all_memory_ids(client: Client, context_id: str) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = client.list_memories(context_id, cursor=cursor, limit=50)
        ids += [memory.id for memory in page.items]
        if page.next_cursor is None:
            return ids
        cursor = page.next_cursor


def _all_feedback(client: Client, context_id: str) -> list:
    events: list = []
    cursor = None
    while True:
        page = client.list_feedback(context_id, cursor=cursor, limit=50)
        events += page.items
        if page.next_cursor is None:
            return events
        cursor = page.next_cursor


def _all_state(client: Client, context_id: str) -> list:
    return client.list_state(context_id, limit=100).items


def _wait_for_embeddings(client: Client, context_id: str, expected: int) -> ContextStats:
    deadline = time.monotonic() + 180
    while True:
        stats = client.stats(context_id)
        if stats.embeddings.get("ready", 0) == expected or time.monotonic() > deadline:
            return stats
        time.sleep(0.5)


def _wait_for_sweep(database_url: str, context_id: str) -> None:
    """Until no row of the expired key is left in the table (not just hidden from reads)."""
    deadline = time.monotonic() + timedelta(seconds=SWEEP_SECONDS * 10).total_seconds()
    while True:
        with psycopg.connect(database_url) as conn:
            conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
            left = conn.execute(
                "SELECT count(*) FROM agent_states WHERE context_id = %s AND key = 'ephemeral'",
                (context_id,),
            ).fetchone()
        if left == (0,):
            return
        assert time.monotonic() < deadline, "the expired key was never swept"
        time.sleep(0.25)
