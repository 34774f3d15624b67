"""``soft_delete_memories``, the primitive under forget_by_query: all of a set, or none."""

from __future__ import annotations

from datetime import datetime, timedelta

from kioku.storage.base import Store
from kioku.storage.records import MemoryChanges, MemoryRow
from tests.storage.test_contract import LIVE, T0, foreign_ws, new_context, new_memory, vec, ws

__all__ = ["foreign_ws", "ws"]  # the contract suite's fixtures

LATER = T0 + timedelta(hours=1)


def live_ids(store: Store, ws: str, context_id: str) -> set[str]:
    return {row.id for row in store.list_memories(ws, [context_id], LIVE, None, 100)}


def versions(rows: list[MemoryRow | None]) -> dict[str, datetime]:
    return {row.id: row.updated_at for row in rows if row is not None}


def test_forgets_the_whole_set_in_one_go_and_leaves_the_vector_leg(store: Store, ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    rows = [new_memory(ctx.id, f"note {n}") for n in range(3)]
    store.insert_memories(ws, rows)
    store.store_embeddings(ws, ctx.id, "model-x", [(rows[0].id, vec(1, 0))])
    chosen = [store.get_memory(ws, rows[0].id), store.get_memory(ws, rows[1].id)]
    assert store.soft_delete_memories(ws, ctx.id, versions(chosen), LATER)
    assert live_ids(store, ws, ctx.id) == {rows[2].id}
    gone = store.get_memory(ws, rows[0].id)
    assert gone is not None and gone.deleted_at == LATER
    assert store.vector_search(ws, [ctx.id], vec(1, 0), LIVE, 5) == []


def test_one_stale_member_refuses_the_whole_set(store: Store, ws: str, foreign_ws: str) -> None:
    ctx = new_context(store, ws, "notes")
    other = new_context(store, ws, "other")
    rows = [new_memory(ctx.id, f"note {n}") for n in range(3)]
    elsewhere = new_memory(other.id, "elsewhere")
    store.insert_memories(ws, [*rows, elsewhere])
    expected = versions([store.get_memory(ws, row.id) for row in rows])

    edited = dict(expected)  # one of them changed since the caller looked
    store.update_memory(ws, rows[1].id, MemoryChanges({"importance": 0.9}), LATER)
    assert store.soft_delete_memories(ws, ctx.id, edited, LATER) is False

    fresh = versions([store.get_memory(ws, row.id) for row in rows])
    store.soft_delete_memory(ws, rows[2].id, LATER)  # one already forgotten
    assert store.soft_delete_memories(ws, ctx.id, fresh, LATER) is False

    live = {k: v for k, v in fresh.items() if k != rows[2].id}
    other_row = store.get_memory(ws, elsewhere.id)
    assert other_row is not None  # one of another context, or of another workspace
    mixed = {**live, elsewhere.id: other_row.updated_at}
    assert store.soft_delete_memories(ws, ctx.id, mixed, LATER) is False
    assert store.soft_delete_memories(foreign_ws, ctx.id, live, LATER) is False

    assert live_ids(store, ws, ctx.id) == {rows[0].id, rows[1].id}  # nothing half-done
    assert live_ids(store, ws, other.id) == {elsewhere.id}
