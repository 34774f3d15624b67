"""The association graph's write seam: the edge transaction a backend supplies, and the
integrity every write obeys.

The SQL is one small transaction handle (``EdgeTransaction``: read the ends, read edges,
upsert, delete), written once in ``shared/graph.py`` for both backends; a store opens one
with ``edge_transaction``, Sleep reaches one inside its own (``SleepTransaction.edges``).
Here: pair order (``ordered_pairs``), the confinement of an edge to one context of one
workspace (``confined``) and the tier an edge takes from its ends (``joint_tier``; in SQL,
``joint_tier_sql``). The rules that write over the handle are above storage, written once for
both backends: the Hebbian arithmetic in ``service/hebbian.py``, Sleep's exact writes in
``service/graph_writes.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kioku.storage.records import EdgeRow
from kioku.vocabulary import TrustTier

Pair = tuple[str, str]

ORIGINS = ("hebbian", "declared", "sleep")


@dataclass(frozen=True)
class EdgeEnd:
    """What a graph write needs to know about a memory at one end of an edge."""

    context_id: str
    trust_tier: TrustTier
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


TIERS_BY_TRUST: tuple[TrustTier, ...] = ("trusted", "external")
"""The trust tiers, most trusted first. An edge takes the least trusted tier among its ends
(and the row written): ``joint_tier`` computes it on a write, ``joint_tier_sql`` on a read
(the ends' tiers can change after the edge was written); both read this one order."""


def joint_tier(*tiers: str) -> TrustTier:
    """The least trusted of ``tiers``: ``external`` if any end (or the row written) is."""
    for tier in reversed(TIERS_BY_TRUST[1:]):
        if tier in tiers:
            return tier
    return TIERS_BY_TRUST[0]


def joint_tier_sql(*columns: str) -> str:
    """``joint_tier`` of these tier columns as one SQL ``CASE`` expression."""
    whens = [
        " OR ".join(f"{column} = '{tier}'" for column in columns) + f" THEN '{tier}'"
        for tier in reversed(TIERS_BY_TRUST[1:])
    ]
    return f"CASE WHEN {' WHEN '.join(whens)} ELSE '{TIERS_BY_TRUST[0]}' END"


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
