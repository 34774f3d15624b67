"""Claims: what several replicas on one database must not do twice (both backends)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from kioku.storage import open_store
from kioku.storage.base import Store
from kioku.storage.records import MemoryChanges
from tests.storage.test_contract import T0, new_context, new_memory, vec

PERIOD = timedelta(minutes=10)


def test_a_job_is_claimed_once_per_period(store: Store) -> None:
    assert store.claim_job("state-sweep", "replica-a", T0, T0 + PERIOD) is True
    # Nobody, the holder included, runs it again before the period is over...
    assert (
        store.claim_job("state-sweep", "replica-b", T0 + timedelta(minutes=5), T0 + PERIOD * 2)
        is False
    )
    assert (
        store.claim_job("state-sweep", "replica-a", T0 + timedelta(minutes=9), T0 + PERIOD * 2)
        is False
    )
    # ...another job is claimed on its own...
    assert store.claim_job("sleep", "replica-b", T0, T0 + PERIOD) is True
    # ...and from the claim's end on, whoever asks first runs the next period.
    assert store.claim_job("state-sweep", "replica-b", T0 + PERIOD, T0 + PERIOD * 2) is True
    assert store.claim_job("state-sweep", "replica-a", T0 + PERIOD, T0 + PERIOD * 2) is False


def test_of_concurrent_claimers_exactly_one_wins(store: Store) -> None:
    """Eight claimers, each through its own store (its own connections, as replicas have),
    released together: one True, seven False, for each of several periods."""
    stores = [open_store(store.url) for _ in range(4)] if "postgresql" in store.url else [store]
    try:
        for period in range(3):
            start = T0 + PERIOD * period
            barrier = threading.Barrier(8)

            def claim(index: int, start=start, barrier=barrier) -> bool:
                barrier.wait()
                return stores[index % len(stores)].claim_job(
                    "state-sweep", f"replica-{index}", start, start + PERIOD
                )

            with ThreadPoolExecutor(8) as pool:
                results = list(pool.map(claim, range(8)))
            assert sorted(results) == [False] * 7 + [True], period
    finally:
        for other in stores:
            if other is not store:
                other.close()


def test_embedding_claims_are_leased(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    rows = [new_memory(ctx.id, f"m{i}") for i in range(5)]
    store.insert_memories(ws, rows)
    lease = T0 + timedelta(minutes=5)

    first = store.claim_embeddings("model-x", 3, T0, lease)
    second = store.claim_embeddings("model-x", 3, T0, lease)
    assert [j.memory_id for j in first] == [r.id for r in rows[:3]]  # oldest first
    assert [j.memory_id for j in second] == [r.id for r in rows[3:]]  # never the same rows
    assert store.claim_embeddings("model-x", 3, T0 + timedelta(minutes=1), lease) == []

    # One claimed memory lands; the rest of the first claim is abandoned (a crashed worker).
    assert store.store_embeddings(ws, ctx.id, "model-x", [(rows[0].id, vec(1, 0))]) == 1
    # Pending memories stay visible to the plain queue listing while leased.
    assert len(store.pending_embeddings("model-x", 10)) == 4
    # When the lease runs out, the abandoned ones can be claimed again, the embedded one not.
    again = store.claim_embeddings("model-x", 10, lease, lease + timedelta(minutes=5))
    assert {j.memory_id for j in again} == {r.id for r in rows[1:]}
    # Another model never claims a context that already holds model-x vectors.
    assert store.claim_embeddings("model-y", 10, lease + PERIOD, lease + PERIOD * 2) == []


def test_an_edited_memory_can_be_claimed_again_at_once(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "draft")
    store.insert_memories(ws, [row])
    lease = T0 + timedelta(minutes=5)
    [job] = store.claim_embeddings("model-x", 1, T0, lease)
    assert job.text.startswith("draft")
    store.update_memory(
        ws,
        row.id,
        MemoryChanges({"summary": "final"}, lexical_tokens="final", text_changed=True),
        T0,
    )
    # The new text is new work: claimable now, not after the old text's lease.
    [again] = store.claim_embeddings("model-x", 1, T0, lease)
    assert again.text.startswith("final")


def test_released_embedding_claims_are_claimed_again_at_once(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    other_ws = store.ensure_workspace("beta").id
    ctx = new_context(store, ws, "notes")
    rows = [new_memory(ctx.id, f"m{i}") for i in range(3)]
    store.insert_memories(ws, rows)
    lease = T0 + timedelta(minutes=5)
    claimed = store.claim_embeddings("model-x", 10, T0, lease)
    assert len(claimed) == 3
    assert store.store_embeddings(ws, ctx.id, "model-x", [(rows[0].id, vec(1, 0))]) == 1

    # Another workspace's release names these ids but touches nothing of alpha's.
    store.release_embeddings(other_ws, [r.id for r in rows])
    assert store.claim_embeddings("model-x", 10, T0, lease) == []
    # The worker that failed gives its whole batch back: the landed one stays ready.
    store.release_embeddings(ws, [r.id for r in rows])
    again = store.claim_embeddings("model-x", 10, T0, lease)
    assert [j.memory_id for j in again] == [r.id for r in rows[1:]]
    store.release_embeddings(ws, [])  # nothing to release is not an error


def test_embedding_claims_take_turns_across_workspaces(store: Store) -> None:
    """One tenant's backlog (older, and larger than a batch) does not delay another's single
    memory: the next claim takes the oldest memory of every workspace first."""
    busy = store.ensure_workspace("busy").id
    quiet = store.ensure_workspace("quiet").id
    busy_ctx = new_context(store, busy, "bulk")
    quiet_ctx = new_context(store, quiet, "notes")
    backlog = [new_memory(busy_ctx.id, f"bulk {i}") for i in range(40)]
    store.insert_memories(busy, backlog)
    lone = new_memory(quiet_ctx.id, "the quiet tenant's one memory")
    store.insert_memories(quiet, [lone])
    lease = T0 + timedelta(minutes=5)

    first = store.claim_embeddings("model-x", 4, T0, lease)
    assert lone.id in {j.memory_id for j in first}
    # Within a workspace the oldest still come first.
    assert [j.memory_id for j in first if j.workspace_id == busy] == [r.id for r in backlog[:3]]
    rest = store.claim_embeddings("model-x", 100, T0, lease)
    assert {j.memory_id for j in rest} == {r.id for r in backlog[3:]}
