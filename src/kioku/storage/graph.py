"""The association graph's write seam: the edge transaction a backend supplies, the
integrity rules every write obeys, and Sleep's exact writes.

The SQL is one small transaction handle (``EdgeTransaction``: read the ends, read edges,
upsert, delete), written once in ``shared/graph.py`` for both backends. Here: pair order, the
confinement of an edge to one context of one workspace (``confined``), the tier an edge takes
from its ends (``joint_tier``), and the writes Sleep runs inside its own transaction
(``set_edges``, ``delete_edges``, ``move_edges``: exact rows, no arithmetic but a merge's
larger weight). The Hebbian rules (strengthen, weaken, declare: the weight arithmetic) are
written once above storage, in ``service/hebbian.py``, over the same handle, so SQLite and
PostgreSQL compute the same weights bit for bit. An edge joins two memories of one context of
one workspace; a write whose ends are not (or, for Hebbian and declared writes, are not live)
is dropped for that pair. Every write returns what it changed, pair by pair, so it can be
undone (``undo``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
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


def joint_tier(*tiers: str) -> str:
    """``external`` if any end (or the row written) is, else ``trusted``."""
    return "external" if "external" in tiers else "trusted"


def confined(
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


class GraphWrites(Protocol):
    """Sleep's exact edge writes (and their undoing) over ``edge_transaction`` (a store's:
    ``shared/graph.py``; Sleep's, inside its own transaction: ``edges_on``). The Hebbian
    rules (strengthen, weaken, declare) are above storage, in ``service/hebbian.py``."""

    def edge_transaction(self, workspace_id: str) -> AbstractContextManager[EdgeTransaction]:
        """A write transaction on the workspace's edges, serialized with other graph writes."""
        ...

    def set_edges(self, workspace_id: str, rows: Sequence[EdgeRow]) -> list[EdgeChange]:
        """Write these exact rows (weight, origin, timestamps), replacing any edge of the same
        pair: Sleep's writes and its rollback. A row whose ends are not both memories (live or
        not) of its ``context_id`` in this workspace is skipped, as is one not in
        ``source_id < target_id`` order or with an invalid weight or origin. ``trust_tier`` is
        raised to ``external`` if either end is (never lowered)."""
        with self.edge_transaction(workspace_id) as tx:
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

    def delete_edges(self, workspace_id: str, pairs: Sequence[Pair]) -> list[EdgeChange]:
        """Delete the edges of these pairs (either order) in this workspace."""
        with self.edge_transaction(workspace_id) as tx:
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
        with self.edge_transaction(workspace_id) as tx:
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


def iter_pairs(memory_ids: Sequence[str]) -> Iterator[Pair]:
    """Every unordered pair of distinct ids among ``memory_ids``, in order."""
    for i, a in enumerate(memory_ids):
        for b in memory_ids[i + 1 :]:
            if a != b:
                yield (a, b)
