"""The graph's exact writes, written once for both backends: Sleep's edge changes and their
undoing (rows with their weight, origin and timestamps as given; a merge's move of one
memory's edges to another), over a store's ``edge_transaction`` or, inside Sleep's own
transaction, ``within(tx.edges())``. Every write keeps an edge inside one context of one
workspace (``storage/graph.py``'s ``confined``) and returns what it changed, pair by pair, so
it can be undone (``undo``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import datetime

from kioku.service.hebbian import EdgeWriter
from kioku.storage.graph import (
    ORIGINS,
    EdgeTransaction,
    Pair,
    confined,
    joint_tier,
    ordered_pairs,
)
from kioku.storage.records import EdgeChange, EdgeRow


class _Within:
    """An ``EdgeWriter`` over a transaction that is already open."""

    def __init__(self, tx: EdgeTransaction) -> None:
        self._tx = tx

    def edge_transaction(self, workspace_id: str) -> AbstractContextManager[EdgeTransaction]:
        del workspace_id  # the open transaction is already the workspace's
        return nullcontext(self._tx)


def within(tx: EdgeTransaction) -> EdgeWriter:
    """Writes that run inside the caller's transaction (Sleep's), so an edge change and the
    action logging it commit together."""
    return _Within(tx)


def set_edges(store: EdgeWriter, workspace_id: str, rows: Sequence[EdgeRow]) -> list[EdgeChange]:
    """Write these exact rows (weight, origin, timestamps), replacing any edge of the same
    pair: Sleep's writes and its rollback. A row whose ends are not both memories (live or
    not) of its ``context_id`` in this workspace is skipped, as is one not in
    ``source_id < target_id`` order or with an invalid weight or origin. ``trust_tier`` is
    raised to ``external`` if either end is (never lowered)."""
    with store.edge_transaction(workspace_id) as tx:
        candidates = {
            row.pair: row
            for row in rows
            if row.source_id < row.target_id
            and 0.0 < row.weight <= 1.0
            and row.origin in ORIGINS
            and row.trust_tier in ("trusted", "external")
        }
        kept, ends = confined(tx, None, sorted(candidates), live=False)
        kept = [p for p in kept if ends[p[0]].context_id == candidates[p].context_id]
        existing = tx.edges_of_pairs(kept)
        changes = []
        for a, b in kept:
            row = candidates[(a, b)]
            tier = joint_tier(row.trust_tier, ends[a].trust_tier, ends[b].trust_tier)
            changes.append(
                EdgeChange(
                    existing.get((a, b)),
                    replace(row, workspace_id=workspace_id, trust_tier=tier),
                )
            )
        tx.upsert([c.after for c in changes if c.after is not None])
    return changes


def delete_edges(store: EdgeWriter, workspace_id: str, pairs: Sequence[Pair]) -> list[EdgeChange]:
    """Delete the edges of these pairs (either order) in this workspace."""
    with store.edge_transaction(workspace_id) as tx:
        existing = tx.edges_of_pairs(ordered_pairs(pairs))
        tx.delete(sorted(existing))
    return [EdgeChange(row, None) for _, row in sorted(existing.items())]


def move_edges(
    store: EdgeWriter, workspace_id: str, from_id: str, to_id: str, now: datetime
) -> list[EdgeChange]:
    """Give ``from_id``'s edges to ``to_id`` (a merge): an edge A–X becomes B–X, combined
    with an existing B–X by the larger weight (the origin of the larger, B's on a tie;
    the earlier ``created_at``, the later ``updated_at``); A–B itself is dropped. Both
    must be memories of one context of this workspace, else nothing changes. Returns
    every change, deletions of A's edges first, so the move can be undone exactly."""
    del now  # moving keeps each edge's own timestamps: a merge is not a co-recall
    with store.edge_transaction(workspace_id) as tx:
        ends = tx.ends(sorted({from_id, to_id}))
        source, target = ends.get(from_id), ends.get(to_id)
        if (
            from_id == to_id
            or source is None
            or target is None
            or source.context_id != target.context_id
        ):
            return []
        moving = tx.edges_of_memory(from_id)
        others = sorted({edge.other(from_id) for edge in moving} - {to_id})
        other_ends = tx.ends(others)
        existing = tx.edges_of_pairs(ordered_pairs((to_id, x) for x in others))
        removed = [EdgeChange(edge, None) for edge in moving]
        written = []
        for edge in sorted(moving, key=lambda e: e.other(from_id)):
            other = edge.other(from_id)
            if other == to_id or other not in other_ends:
                continue
            pair = (min(to_id, other), max(to_id, other))
            tier = joint_tier(target.trust_tier, other_ends[other].trust_tier)
            moved = replace(edge, source_id=pair[0], target_id=pair[1], trust_tier=tier)
            old = existing.get(pair)
            if old is not None:
                winner = moved if moved.weight > old.weight else old
                moved = replace(
                    old,
                    weight=winner.weight,
                    origin=winner.origin,
                    trust_tier=tier,
                    created_at=min(old.created_at, edge.created_at),
                    updated_at=max(old.updated_at, edge.updated_at),
                )
            written.append(EdgeChange(old, moved))
        tx.delete([change.before.pair for change in removed if change.before])
        tx.upsert([change.after for change in written if change.after])
    return removed + written


def undo(changes: Sequence[EdgeChange]) -> tuple[list[EdgeRow], list[Pair]]:
    """What restores the state before ``changes``: (rows to ``set_edges``, pairs to
    ``delete_edges``). Apply the deletions first."""
    restore: dict[Pair, EdgeRow] = {}
    delete: set[Pair] = set()
    for change in reversed(changes):
        if change.before is not None:
            restore[change.before.pair] = change.before
            delete.discard(change.before.pair)
        elif change.after is not None:
            delete.add(change.after.pair)
            restore.pop(change.after.pair, None)
    return [restore[p] for p in sorted(restore)], sorted(delete)
