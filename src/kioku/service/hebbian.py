"""The graph's Hebbian rules (docs/graph.md), written once for both backends: the weight
arithmetic of co-recall, feedback and declared links.

Each rule runs over a store's edge transaction (``edge_transaction``: read the ends and the
edges of some pairs, upsert rows, delete pairs; its SQL is ``storage/shared/graph.py``), so
SQLite and PostgreSQL compute the same weights bit for bit: the arithmetic runs here, in
Python, not in two SQL dialects. A write keeps only pairs of live memories of the given
context (``storage/graph.py``'s ``confined``) and returns what it changed, pair by pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from kioku.storage.graph import EdgeTransaction, Pair, confined, joint_tier, ordered_pairs
from kioku.storage.records import EdgeChange, EdgeRow
from kioku.vocabulary import EdgeOrigin


class EdgeWriter(Protocol):
    """Anything with the graph's write transaction (a ``Store``)."""

    def edge_transaction(self, workspace_id: str) -> AbstractContextManager[EdgeTransaction]: ...


def strengthened(weight: float, rate: float) -> float:
    """The bounded Hebbian update ``w + η·(1 − w)``: approaches 1, never passes it."""
    return min(1.0, weight + rate * (1.0 - weight))


def weakened(weight: float, rate: float) -> float:
    """The decay ``w·(1 − η)``."""
    return weight * (1.0 - rate)


def _check_rate(rate: float) -> None:
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate must be in (0, 1], got {rate}")


def _write_confined(
    store: EdgeWriter,
    workspace_id: str,
    context_id: str,
    pairs: Sequence[Pair],
    new: tuple[float, EdgeOrigin, datetime],
    update: Callable[[EdgeRow, str], EdgeRow],
) -> list[EdgeChange]:
    """Upsert an edge for each pair of live memories of this context: a missing one as
    ``new`` (weight, origin, time), an existing one as ``update(edge, tier)``."""
    weight, origin, now = new
    with store.edge_transaction(workspace_id) as tx:
        kept, ends = confined(tx, context_id, ordered_pairs(pairs), live=True)
        existing = tx.edges_of_pairs(kept)
        changes = []
        for a, b in kept:
            old = existing.get((a, b))
            tier = joint_tier(ends[a].trust_tier, ends[b].trust_tier)
            if old is None:
                edge = EdgeRow(workspace_id, context_id, a, b, weight, origin, tier, now, now)
                changes.append(EdgeChange(None, edge))
            else:
                changes.append(EdgeChange(old, update(old, tier)))
        tx.upsert([c.after for c in changes if c.after is not None])
    return changes


def strengthen_edges(
    store: EdgeWriter,
    workspace_id: str,
    context_id: str,
    pairs: Sequence[Pair],
    rate: float,
    now: datetime,
    *,
    origin: EdgeOrigin = "hebbian",
) -> list[EdgeChange]:
    """Apply ``w ← w + η·(1 − w)`` to each pair of live memories of this context; a new
    edge starts at ``η`` with ``origin``. An existing edge keeps its origin."""
    _check_rate(rate)
    return _write_confined(
        store, workspace_id, context_id, pairs, (rate, origin, now),
        lambda old, tier: replace(
            old, weight=strengthened(old.weight, rate), trust_tier=tier, updated_at=now
        ),
    )  # fmt: skip


def weaken_edges(
    store: EdgeWriter,
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
    with store.edge_transaction(workspace_id) as tx:
        existing = tx.edges_of_pairs(ordered_pairs(pairs))
        changes = []
        for _, old in sorted(existing.items()):
            if old.context_id != context_id:
                continue
            weight = weakened(old.weight, rate)
            new = None if weight < floor or weight <= 0.0 else replace(
                old, weight=weight, updated_at=now
            )  # fmt: skip
            changes.append(EdgeChange(old, new))
        tx.upsert([c.after for c in changes if c.after is not None])
        tx.delete([c.before.pair for c in changes if c.after is None and c.before])
    return changes


def declare_edges(
    store: EdgeWriter,
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
    return _write_confined(
        store, workspace_id, context_id, pairs, (weight, "declared", now),
        lambda old, tier: replace(
            old, weight=max(old.weight, weight), origin="declared", trust_tier=tier,
            updated_at=now,
        ),
    )  # fmt: skip
