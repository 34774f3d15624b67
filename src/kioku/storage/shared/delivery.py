"""Deterministic delivery: the pinned set and trigger windows. No ranking."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from kioku.storage.records import MemoryFilter, MemoryRow
from kioku.storage.shared.database import Database
from kioku.storage.shared.filters import memory_filter
from kioku.storage.shared.rows import MEMORY_COLUMNS, memory_from_row


class _Rule(NamedTuple):
    """Which memories a delivery rule chooses (a condition on two times) and their order
    (``{binary}``: the dialect's byte-order collation for ids)."""

    where: str
    order: str


# The IN lets the planner walk ix_memories_delivery (workspace, context, mode) instead of every
# row of the context: load_pinned must stay cheap however large the context grows.
_PINNED = _Rule(
    "m.delivery_mode IN ('always', 'on_trigger') AND (m.delivery_mode = 'always' OR "
    "(m.trigger_from <= %s AND (m.trigger_until IS NULL OR m.trigger_until > %s)))",
    "m.importance DESC, m.created_at, m.id{binary}",
)
_UPCOMING = _Rule(
    "m.delivery_mode = 'on_trigger' AND m.trigger_from < %s "
    "AND (m.trigger_until IS NULL OR m.trigger_until > %s)",
    "m.trigger_from, m.importance DESC, m.id{binary}",
)


class DeliveryStore(Protocol):
    """Delivery primitives, written once for both backends: what is due, by rule, not by rank."""

    sql: Database

    def _page(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        rule: _Rule,
        times: tuple[datetime, datetime],
        limit: int,
    ) -> tuple[list[MemoryRow], int]:
        """The memories ``flt`` and ``rule`` (at these ``times``) choose, in the rule's order:
        the first ``limit`` and how many in all."""
        d = self.sql.dialect
        where, params = memory_filter(d, workspace_id, context_ids, flt)
        where = f"{where} AND {rule.where}"
        params = [*params, *(d.time(at) for at in times)]
        order = rule.order.format(binary=d.binary)
        with self.sql.read(workspace_id) as tx:
            if limit <= 0:  # no page to window over: count alone
                found = tx.execute(
                    f"SELECT count(*) AS n FROM memories m WHERE {where}", params
                ).fetchone()
                return [], found["n"]
            # The total is a window count over the same rows, in the same statement: page and
            # total always agree.
            rows = tx.execute(
                f"SELECT {MEMORY_COLUMNS}, count(*) OVER () AS total FROM memories m "
                f"WHERE {where} ORDER BY {order} LIMIT %s",
                (*params, limit),
            ).fetchall()
        total = rows[0]["total"] if rows else 0
        return [memory_from_row(d, row) for row in rows], total

    def pinned_memories(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        now: datetime,
        limit: int,
    ) -> tuple[list[MemoryRow], int]:
        """``always`` memories plus ``on_trigger`` ones whose window contains ``now``.

        Ordered by importance desc, created_at, id; returns (first ``limit`` rows, total).
        """
        return self._page(workspace_id, context_ids, flt, _PINNED, (now, now), limit)

    def upcoming_memories(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        start: datetime,
        end: datetime,
        limit: int,
    ) -> tuple[list[MemoryRow], int]:
        """``on_trigger`` memories whose window intersects ``[start, end)``, by trigger_from."""
        return self._page(workspace_id, context_ids, flt, _UPCOMING, (end, start), limit)
