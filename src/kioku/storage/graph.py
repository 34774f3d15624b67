"""Writes to the association graph, computed once for every backend.

The SQL is one small transaction handle (``EdgeTransaction``: read the ends, read edges,
upsert, delete), written once in ``shared/graph.py`` for both backends; the rules (pair
order, the bounded Hebbian update, the confinement of an edge to one context of one
workspace, merging) live here, so SQLite and PostgreSQL compute the same weights bit for bit
(the arithmetic runs in Python, not in two SQL dialects). An edge joins two memories of one
context of one workspace; a write whose ends are not (or, for Hebbian and declared writes,
are not live) is dropped for that pair. Every write returns what it changed, pair by pair, so
it can be undone (``undo``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from kioku.storage.records import EdgeChange, EdgeRow

Pair = tuple[str, str]

ORIGINS = ("hebbian", "declared", "sleep")


@dataclass(frozen=True)
class EdgeEnd:
    """What a graph write needs to know about a memory at one end of an edge."""

    context_id: str
    trust_tier: str
    live: bool


class EdgeTransaction(Protocol):
    """One write transaction on one workspace's edges (a backend's handle)."""

    def ends(self, memory_ids: Sequence[str]) -> dict[str, EdgeEnd]:
        """The memories among ``memory_ids`` that exist in this workspace, locked against a
        concurrent purge until the transaction ends."""
        ...

    def edges_of_pairs(self, pairs: Sequence[Pair]) -> dict[Pair, EdgeRow]: ...

    def edges_of_memory(self, memory_id: str) -> list[EdgeRow]:
        """Every edge with ``memory_id`` at either end, by (source_id, target_id)."""
        ...

    def upsert(self, rows: Sequence[EdgeRow]) -> None: ...

    def delete(self, pairs: Sequence[Pair]) -> None: ...


def ordered_pairs(pairs: Iterable[Pair]) -> list[Pair]:
    """Each unordered pair once, as (smaller id, larger id); self-pairs dropped; sorted."""
    return sorted({(min(a, b), max(a, b)) for a, b in pairs if a != b})


def strengthened(weight: float, rate: float) -> float:
    """The bounded Hebbian update ``w + η·(1 − w)``: approaches 1, never passes it."""
    return min(1.0, weight + rate * (1.0 - weight))


def _check_rate(rate: float) -> None:
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate must be in (0, 1], got {rate}")


def _tier(*tiers: str) -> str:
    return "external" if "external" in tiers else "trusted"


class GraphWrites(Protocol):
    """The graph's write primitives over ``_edge_transaction`` (a store's: ``shared/graph.py``;
    Sleep's, inside its own transaction: ``edges_on``)."""

    def _edge_transaction(self, workspace_id: str) -> AbstractContextManager[EdgeTransaction]:
        """A write transaction on the workspace's edges, serialized with other graph writes."""
        ...

    def _confined(
        self,
        tx: EdgeTransaction,
        context_id: str | None,
        pairs: Sequence[Pair],
        *,
        live: bool,
    ) -> tuple[list[Pair], dict[str, EdgeEnd]]:
        """The pairs whose two ends are memories of one context (``context_id`` when given)
        of this workspace, live ones only if ``live``; every other pair is dropped."""
        ends = tx.ends(sorted({memory_id for pair in pairs for memory_id in pair}))
        kept = []
        for a, b in pairs:
            end_a, end_b = ends.get(a), ends.get(b)
            if end_a is None or end_b is None or end_a.context_id != end_b.context_id:
                continue
            if context_id is not None and end_a.context_id != context_id:
                continue
            if live and not (end_a.live and end_b.live):
                continue
            kept.append((a, b))
        return kept, ends

    def _write_confined(
        self,
        workspace_id: str,
        context_id: str,
        pairs: Sequence[Pair],
        new: tuple[float, str, datetime],
        update: Callable[[EdgeRow, str], EdgeRow],
    ) -> list[EdgeChange]:
        """Upsert an edge for each pair of live memories of this context: a missing one as
        ``new`` (weight, origin, time), an existing one as ``update(edge, tier)``."""
        weight, origin, now = new
        with self._edge_transaction(workspace_id) as tx:
            kept, ends = self._confined(tx, context_id, ordered_pairs(pairs), live=True)
            existing = tx.edges_of_pairs(kept)
            changes = []
            for a, b in kept:
                old = existing.get((a, b))
                tier = _tier(ends[a].trust_tier, ends[b].trust_tier)
                if old is None:
                    edge = EdgeRow(workspace_id, context_id, a, b, weight, origin, tier, now, now)
                    changes.append(EdgeChange(None, edge))
                else:
                    changes.append(EdgeChange(old, update(old, tier)))
            tx.upsert([c.after for c in changes if c.after is not None])
        return changes

    def strengthen_edges(
        self,
        workspace_id: str,
        context_id: str,
        pairs: Sequence[Pair],
        rate: float,
        now: datetime,
        *,
        origin: str = "hebbian",
    ) -> list[EdgeChange]:
        """Apply ``w ← w + η·(1 − w)`` to each pair of live memories of this context; a new
        edge starts at ``η`` with ``origin``. An existing edge keeps its origin."""
        _check_rate(rate)
        return self._write_confined(
            workspace_id, context_id, pairs, (rate, origin, now),
            lambda old, tier: replace(
                old, weight=strengthened(old.weight, rate), trust_tier=tier, updated_at=now
            ),
        )  # fmt: skip

    def weaken_edges(
        self,
        workspace_id: str,
        context_id: str,
        pairs: Sequence[Pair],
        rate: float,
        floor: float,
        now: datetime,
    ) -> list[EdgeChange]:
        """Apply ``w ← w·(1 − η)`` to the existing edges among ``pairs`` in this context; an
        edge that falls below ``floor`` is deleted. Missing edges are not created."""
        _check_rate(rate)
        with self._edge_transaction(workspace_id) as tx:
            existing = tx.edges_of_pairs(ordered_pairs(pairs))
            changes = []
            for _, old in sorted(existing.items()):
                if old.context_id != context_id:
                    continue
                weight = old.weight * (1.0 - rate)
                new = None if weight < floor or weight <= 0.0 else replace(
                    old, weight=weight, updated_at=now
                )  # fmt: skip
                changes.append(EdgeChange(old, new))
            tx.upsert([c.after for c in changes if c.after is not None])
            tx.delete([c.before.pair for c in changes if c.after is None and c.before])
        return changes

    def declare_edges(
        self,
        workspace_id: str,
        context_id: str,
        pairs: Sequence[Pair],
        weight: float,
        now: datetime,
    ) -> list[EdgeChange]:
        """Upsert ``declared`` edges between live memories of this context: a new edge gets
        ``weight``; an existing one becomes ``declared`` and keeps the larger weight."""
        if not 0.0 < weight <= 1.0:
            raise ValueError(f"weight must be in (0, 1], got {weight}")
        return self._write_confined(
            workspace_id, context_id, pairs, (weight, "declared", now),
            lambda old, tier: replace(
                old, weight=max(old.weight, weight), origin="declared", trust_tier=tier,
                updated_at=now,
            ),
        )  # fmt: skip

    def set_edges(self, workspace_id: str, rows: Sequence[EdgeRow]) -> list[EdgeChange]:
        """Write these exact rows (weight, origin, timestamps), replacing any edge of the same
        pair: Sleep's writes and its rollback. A row whose ends are not both memories (live or
        not) of its ``context_id`` in this workspace is skipped, as is one not in
        ``source_id < target_id`` order or with an invalid weight or origin. ``trust_tier`` is
        raised to ``external`` if either end is (never lowered)."""
        with self._edge_transaction(workspace_id) as tx:
            candidates = {
                row.pair: row
                for row in rows
                if row.source_id < row.target_id
                and 0.0 < row.weight <= 1.0
                and row.origin in ORIGINS
                and row.trust_tier in ("trusted", "external")
            }
            kept, ends = self._confined(tx, None, sorted(candidates), live=False)
            kept = [p for p in kept if ends[p[0]].context_id == candidates[p].context_id]
            existing = tx.edges_of_pairs(kept)
            changes = []
            for a, b in kept:
                row = candidates[(a, b)]
                tier = _tier(row.trust_tier, ends[a].trust_tier, ends[b].trust_tier)
                changes.append(
                    EdgeChange(
                        existing.get((a, b)),
                        replace(row, workspace_id=workspace_id, trust_tier=tier),
                    )
                )
            tx.upsert([c.after for c in changes if c.after is not None])
        return changes

    def delete_edges(self, workspace_id: str, pairs: Sequence[Pair]) -> list[EdgeChange]:
        """Delete the edges of these pairs (either order) in this workspace."""
        with self._edge_transaction(workspace_id) as tx:
            existing = tx.edges_of_pairs(ordered_pairs(pairs))
            tx.delete(sorted(existing))
        return [EdgeChange(row, None) for _, row in sorted(existing.items())]

    def move_edges(
        self, workspace_id: str, from_id: str, to_id: str, now: datetime
    ) -> list[EdgeChange]:
        """Give ``from_id``'s edges to ``to_id`` (a merge): an edge A–X becomes B–X, combined
        with an existing B–X by the larger weight (the origin of the larger, B's on a tie;
        the earlier ``created_at``, the later ``updated_at``); A–B itself is dropped. Both
        must be memories of one context of this workspace, else nothing changes. Returns
        every change, deletions of A's edges first, so the move can be undone exactly."""
        del now  # moving keeps each edge's own timestamps: a merge is not a co-recall
        with self._edge_transaction(workspace_id) as tx:
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
                tier = _tier(target.trust_tier, other_ends[other].trust_tier)
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


def iter_pairs(memory_ids: Sequence[str]) -> Iterator[Pair]:
    """Every unordered pair of distinct ids among ``memory_ids``, in order."""
    for i, a in enumerate(memory_ids):
        for b in memory_ids[i + 1 :]:
            if a != b:
                yield (a, b)
