"""The association graph's primitives, on every backend through the ``Store`` protocol."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from kioku.service.graph_writes import delete_edges, move_edges, set_edges, undo
from kioku.service.hebbian import declare_edges, strengthen_edges, weaken_edges
from kioku.storage.base import Store
from kioku.storage.records import EdgeRow, NewMemory
from tests.storage.test_contract import T0, new_context, new_memory

T1 = T0 + timedelta(hours=1)
T2 = T0 + timedelta(hours=2)


def _memories(store: Store, ws: str, ctx_id: str, *names: str, **kw: str) -> list[NewMemory]:
    rows = [new_memory(ctx_id, name, **kw) for name in names]
    store.insert_memories(ws, rows)
    return rows


def _weights(store: Store, ws: str, ctx_id: str) -> dict[tuple[str, str], float]:
    return {edge.pair: edge.weight for edge in store.list_edges(ws, ctx_id)}


def _pair(a: str, b: str) -> tuple[str, str]:
    return (min(a, b), max(a, b))


def test_strengthen_is_the_bounded_hebbian_update(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    a, b, c = (m.id for m in _memories(store, ws, ctx.id, "a", "b", "c"))
    changes = strengthen_edges(store, ws, ctx.id, [(b, a), (a, c), (a, b), (c, c)], 0.1, T0)
    assert [(ch.before, ch.after.weight if ch.after else None) for ch in changes] == [
        (None, 0.1),
        (None, 0.1),
    ]
    strengthen_edges(store, ws, ctx.id, [(a, b)], 0.1, T1)
    weights = _weights(store, ws, ctx.id)
    assert weights[_pair(a, b)] == pytest.approx(0.1 + 0.1 * 0.9)
    assert weights[_pair(a, c)] == 0.1
    for _ in range(200):
        strengthen_edges(store, ws, ctx.id, [(a, b)], 0.5, T1)
    [edge] = [e for e in store.list_edges(ws, ctx.id) if e.pair == _pair(a, b)]
    assert 0.0 < edge.weight <= 1.0
    assert (edge.origin, edge.trust_tier, edge.created_at, edge.updated_at) == (
        "hebbian", "trusted", T0, T1,
    )  # fmt: skip
    assert edge.source_id < edge.target_id


def test_edges_never_cross_contexts_or_workspaces_or_reach_deleted_memories(
    store: Store,
) -> None:
    ws = store.ensure_workspace("alpha").id
    other_ws = store.ensure_workspace("beta").id
    ctx = new_context(store, ws, "notes")
    other_ctx = new_context(store, ws, "other")
    foreign_ctx = new_context(store, other_ws, "notes")
    a, b, gone = (m.id for m in _memories(store, ws, ctx.id, "a", "b", "gone"))
    [elsewhere] = _memories(store, ws, other_ctx.id, "x")
    [foreign] = _memories(store, other_ws, foreign_ctx.id, "y")
    store.soft_delete_memory(ws, gone, T0)
    pairs = [(a, elsewhere.id), (a, foreign.id), (a, gone), (a, "no-such-id")]
    assert strengthen_edges(store, ws, ctx.id, pairs, 0.1, T0) == []
    assert declare_edges(store, ws, ctx.id, pairs, 0.5, T0) == []
    # Another context named as the edge's context, or the right pair from the wrong tenant.
    assert strengthen_edges(store, ws, other_ctx.id, [(a, b)], 0.1, T0) == []
    assert strengthen_edges(store, other_ws, ctx.id, [(a, b)], 0.1, T0) == []
    assert declare_edges(store, other_ws, foreign_ctx.id, [(foreign.id, a)], 0.5, T0) == []
    cross = EdgeRow(ws, ctx.id, *_pair(a, elsewhere.id), 0.5, "sleep", "trusted", T0, T0)
    assert set_edges(store, ws, [cross]) == []
    assert set_edges(store, other_ws, [replace(cross, source_id=_pair(a, b)[0])]) == []
    assert store.list_edges(ws, ctx.id) == [] and store.list_edges(ws, other_ctx.id) == []
    assert store.list_edges(other_ws, foreign_ctx.id) == []
    strengthen_edges(store, ws, ctx.id, [(a, b)], 0.1, T0)
    assert store.edges_touching(other_ws, [a, b]) == []
    assert store.list_edges(other_ws, ctx.id) == []
    assert delete_edges(store, other_ws, [(a, b)]) == []
    assert move_edges(store, other_ws, a, foreign.id, T0) == []
    assert len(store.list_edges(ws, ctx.id)) == 1


def test_trust_tier_is_external_when_either_end_is(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    a, b = (m.id for m in _memories(store, ws, ctx.id, "a", "b"))
    [ext] = _memories(store, ws, ctx.id, "planted", trust_tier="external", source_type="connector")
    declare_edges(store, ws, ctx.id, [(a, ext.id), (a, b)], 0.6, T0)
    tiers = {e.pair: e.trust_tier for e in store.list_edges(ws, ctx.id)}
    assert tiers == {_pair(a, ext.id): "external", _pair(a, b): "trusted"}
    # set_edges never lowers the tier of an edge with an external end.
    trusted = EdgeRow(ws, ctx.id, *_pair(a, ext.id), 0.2, "sleep", "trusted", T0, T0)
    [change] = set_edges(store, ws, [trusted])
    assert change.after is not None and change.after.trust_tier == "external"


def test_reads_report_the_current_tier_of_the_ends(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    a, b = (m.id for m in _memories(store, ws, ctx.id, "a", "b"))
    strengthen_edges(store, ws, ctx.id, [(a, b)], 0.1, T0)
    store.update_context(ws, ctx.id, {"trust_tier": "external"}, T1)
    assert [e.trust_tier for e in store.list_edges(ws, ctx.id)] == ["external"]
    assert [e.trust_tier for e in store.edges_touching(ws, [a])] == ["external"]


def test_declared_edges_keep_the_larger_weight_and_say_declared(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    a, b, c = (m.id for m in _memories(store, ws, ctx.id, "a", "b", "c"))
    strengthen_edges(store, ws, ctx.id, [(a, b)], 0.1, T0)
    declare_edges(store, ws, ctx.id, [(a, b), (c, a)], 0.5, T1)
    declare_edges(store, ws, ctx.id, [(c, a)], 0.3, T2)
    edges = {e.pair: e for e in store.list_edges(ws, ctx.id)}
    assert (edges[_pair(a, b)].weight, edges[_pair(a, b)].origin) == (0.5, "declared")
    assert edges[_pair(a, b)].created_at == T0
    assert (edges[_pair(a, c)].weight, edges[_pair(a, c)].updated_at) == (0.5, T2)
    # Hebbian strengthening of a declared edge keeps its origin.
    strengthen_edges(store, ws, ctx.id, [(a, c)], 0.1, T2)
    assert {e.origin for e in store.list_edges(ws, ctx.id)} == {"declared"}
    with pytest.raises(ValueError):
        declare_edges(store, ws, ctx.id, [(a, b)], 0.0, T0)
    with pytest.raises(ValueError):
        strengthen_edges(store, ws, ctx.id, [(a, b)], 1.5, T0)


def test_weaken_decays_and_deletes_below_the_floor(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    a, b, c = (m.id for m in _memories(store, ws, ctx.id, "a", "b", "c"))
    declare_edges(store, ws, ctx.id, [(a, b)], 0.5, T0)
    strengthen_edges(store, ws, ctx.id, [(a, c)], 0.1, T0)
    changes = weaken_edges(store, ws, ctx.id, [(b, a), (a, c), (b, c)], 0.5, 0.08, T1)
    survived = {c.before.pair: c.after is not None for c in changes if c.before}
    assert survived == {_pair(a, b): True, _pair(a, c): False}
    assert _weights(store, ws, ctx.id) == {_pair(a, b): 0.25}  # (b, c) was never created


def test_listing_is_ordered_and_keyset_paged_and_touching_filters_weight(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    ids = [m.id for m in _memories(store, ws, ctx.id, "a", "b", "c", "d")]
    pairs = [(x, y) for i, x in enumerate(ids) for y in ids[i + 1 :]]
    strengthen_edges(store, ws, ctx.id, pairs, 0.1, T0)
    declare_edges(store, ws, ctx.id, [(ids[0], ids[1])], 0.9, T0)
    listed = store.list_edges(ws, ctx.id)
    assert [e.pair for e in listed] == sorted(_pair(x, y) for x, y in pairs)
    first = store.list_edges(ws, ctx.id, limit=4)
    rest = store.list_edges(ws, ctx.id, after=first[-1].pair, limit=10)
    assert first + rest == listed
    strong = store.edges_touching(ws, [ids[0], ids[2]], 0.5)
    assert [e.pair for e in strong] == [_pair(ids[0], ids[1])]
    assert len(store.edges_touching(ws, [ids[0]])) == 3
    store.soft_delete_memory(ws, ids[1], T1)
    assert len(store.edges_touching(ws, [ids[0]])) == 2
    assert len(store.edges_touching(ws, [ids[0]], live_only=False)) == 3


def test_set_and_delete_write_exact_rows_and_undo_restores(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    a, b, c = (m.id for m in _memories(store, ws, ctx.id, "a", "b", "c"))
    strengthen_edges(store, ws, ctx.id, [(a, b), (b, c)], 0.1, T0)
    before = store.list_edges(ws, ctx.id)
    exact = EdgeRow(ws, ctx.id, *_pair(a, c), 0.123456789, "sleep", "trusted", T1, T2)
    changes = set_edges(store, ws, [exact, replace(before[0], weight=0.75, origin="sleep")])
    changes += delete_edges(store, ws, [(before[1].target_id, before[1].source_id)])
    after = {e.pair: e for e in store.list_edges(ws, ctx.id)}
    assert after[exact.pair] == exact
    assert after[before[0].pair].weight == 0.75 and before[1].pair not in after
    store.soft_delete_memory(ws, c, T2)  # a restore may name soft-deleted ends
    restore, delete = undo(changes)
    delete_edges(store, ws, delete)
    set_edges(store, ws, restore)
    assert store.list_edges(ws, ctx.id) == before
    bad = [replace(exact, source_id=exact.target_id, target_id=exact.source_id)]
    assert set_edges(store, ws, bad) == []  # not in source < target order


def test_move_edges_merges_by_max_weight_and_can_be_undone(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    other = new_context(store, ws, "other")
    a, b, x, y = (m.id for m in _memories(store, ws, ctx.id, "a", "b", "x", "y"))
    [far] = _memories(store, ws, other.id, "far")
    set_edges(
        store,
        ws,
        [
            EdgeRow(ws, ctx.id, *_pair(a, b), 0.9, "hebbian", "trusted", T0, T0),
            EdgeRow(ws, ctx.id, *_pair(a, x), 0.6, "declared", "trusted", T0, T2),
            EdgeRow(ws, ctx.id, *_pair(b, x), 0.3, "hebbian", "trusted", T1, T1),
            EdgeRow(ws, ctx.id, *_pair(a, y), 0.2, "sleep", "trusted", T1, T1),
        ],
    )
    before = store.list_edges(ws, ctx.id)
    assert move_edges(store, ws, a, far.id, T2) == []  # across contexts: nothing
    changes = move_edges(store, ws, a, b, T2)
    edges = {e.pair: e for e in store.list_edges(ws, ctx.id)}
    assert set(edges) == {_pair(b, x), _pair(b, y)}
    bx, by = edges[_pair(b, x)], edges[_pair(b, y)]
    assert (bx.weight, bx.origin, bx.created_at, bx.updated_at) == (0.6, "declared", T0, T2)
    assert (by.weight, by.origin, by.created_at) == (0.2, "sleep", T1)
    assert sum(1 for c in changes if c.after is None) == 3
    restore, delete = undo(changes)
    delete_edges(store, ws, delete)
    set_edges(store, ws, restore)
    assert store.list_edges(ws, ctx.id) == before


def test_purge_and_context_delete_take_the_edges(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    a, b, c = (m.id for m in _memories(store, ws, ctx.id, "a", "b", "c"))
    strengthen_edges(store, ws, ctx.id, [(a, b), (b, c), (a, c)], 0.1, T0)
    assert store.purge_memory(ws, b)
    assert [e.pair for e in store.list_edges(ws, ctx.id)] == [_pair(a, c)]
    assert store.delete_context(ws, ctx.id)
    assert store.list_edges(ws, ctx.id) == []


def test_feedback_memory_ids_are_the_co_helpful_memories_of_one_query(store: Store) -> None:
    from tests.storage.test_lanes_contract import _feedback

    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    a, b, c = (m.id for m in _memories(store, ws, ctx.id, "a", "b", "c"))
    for memory_id, helpful in ((a, True), (b, True), (c, False), (a, True)):
        store.insert_feedback(ws, _feedback(ctx.id, memory_id, helpful))
    assert store.feedback_memory_ids(ws, ctx.id, "q", helpful=True, limit=10) == [a, b]
    assert store.feedback_memory_ids(ws, ctx.id, "q", helpful=False, limit=10) == [c]
    assert store.feedback_memory_ids(ws, ctx.id, "other", helpful=True, limit=10) == []
    assert store.feedback_memory_ids(ws, ctx.id, "q", helpful=True, limit=1) == [a]
