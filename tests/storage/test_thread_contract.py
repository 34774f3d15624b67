"""The thread primitives on both backends: where a thread ends, and a memory's neighbours
(the nearest lower and higher positions of its thread that the filter lets through)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kioku.storage.base import Store
from kioku.storage.records import MemoryFilter
from tests.storage.test_contract import LIVE, T0, new_context, new_memory


@pytest.fixture
def ws(store: Store) -> str:
    return store.ensure_workspace("alpha").id


def test_neighbours_are_the_nearest_places_of_the_same_thread(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "chat")
    other = new_context(store, ws, "other")
    turns = [new_memory(ctx.id, f"turn {i}", thread="s1", thread_position=i * 10) for i in range(4)]
    stray = new_memory(ctx.id, "elsewhere", thread="s2", thread_position=15)
    loose = new_memory(ctx.id, "no thread")
    foreign = new_memory(other.id, "same thread id, other context", thread="s1", thread_position=11)
    store.insert_memories(ws, [*turns, stray, loose])
    store.insert_memories(ws, [foreign])
    ids = [t.id for t in turns]

    pairs = store.thread_neighbours(ws, [ctx.id, other.id], [ids[1], loose.id], LIVE)
    assert sorted(pairs) == sorted([(ids[1], ids[0]), (ids[1], ids[2])])
    pairs = store.thread_neighbours(ws, [ctx.id], [ids[0], ids[3]], LIVE)
    assert sorted(pairs) == sorted([(ids[0], ids[1]), (ids[3], ids[2])])

    # A forgotten neighbour is skipped: the next one along takes its place.
    store.soft_delete_memory(ws, ids[2], T0 + timedelta(hours=1))
    assert sorted(store.thread_neighbours(ws, [ctx.id], [ids[1]], LIVE)) == sorted(
        [(ids[1], ids[0]), (ids[1], ids[3])]
    )
    # The filter applies to the neighbours; other contexts are out of scope.
    only_api = MemoryFilter(source_types=["import"])
    assert store.thread_neighbours(ws, [ctx.id], [ids[1]], only_api) == []
    assert store.thread_neighbours(ws, [other.id], [foreign.id], LIVE) == []
    # Another workspace sees nothing of it.
    beta = store.ensure_workspace("beta").id
    assert store.thread_neighbours(beta, [ctx.id], [ids[1]], LIVE) == []


def test_tails_count_forgotten_memories_and_stay_per_context(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "chat")
    other = new_context(store, ws, "other")
    rows = [new_memory(ctx.id, f"t{i}", thread="s1", thread_position=i) for i in (0, 4, 2)]
    store.insert_memories(ws, [*rows, new_memory(other.id, "x", thread="s1", thread_position=9)])
    store.soft_delete_memory(ws, rows[1].id, T0 + timedelta(hours=1))
    assert store.thread_tails(ws, ctx.id, ["s1", "nothing"]) == {"s1": 4}
    assert store.thread_tails(ws, other.id, ["s1"]) == {"s1": 9}
    got = store.get_memory(ws, rows[2].id)
    assert got is not None and (got.thread, got.thread_position) == ("s1", 2)


def test_ranking_signals_name_each_candidates_thread_with_its_context(
    store: Store, ws: str
) -> None:
    ctx = new_context(store, ws, "chat")
    other = new_context(store, ws, "other")
    turn = new_memory(ctx.id, "turn", thread="s1", thread_position=0)
    loose = new_memory(ctx.id, "no thread")
    foreign = new_memory(other.id, "same thread id, other context", thread="s1", thread_position=0)
    store.insert_memories(ws, [turn, loose])
    store.insert_memories(ws, [foreign])
    signals = store.ranking_signals(ws, [turn.id, loose.id, foreign.id])
    assert signals[turn.id].thread == (ctx.id, "s1")
    assert signals[foreign.id].thread == (other.id, "s1")
    assert signals[loose.id].thread is None
