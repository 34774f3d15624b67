"""Deterministic delivery: ``load_pinned`` and ``upcoming``. No ranking, no embedding."""

from __future__ import annotations

from datetime import datetime, timedelta

from kioku.clock import Clock, system_clock
from kioku.errors import InvalidInputError
from kioku.models import PinnedItem, PinnedResult, RecallFilters, UpcomingResult
from kioku.service.contexts import ContextService
from kioku.service.filters import memory_filter
from kioku.service.guard import operation
from kioku.service.principal import Principal
from kioku.service.views import memory_view
from kioku.storage.ports import DeliveryPort

MAX_CAP = 1000
DEFAULT_CAP = 100
DEFAULT_UPCOMING = timedelta(days=7)


def clamp_cap(cap: int) -> int:
    """``cap`` clamped to [1, 1000] (clamped, not refused: docs/concepts.md)."""
    return max(1, min(MAX_CAP, cap))


class DeliveryService:
    """What an agent loads every turn, and what is about to become due."""

    def __init__(
        self, store: DeliveryPort, contexts: ContextService, *, clock: Clock = system_clock
    ) -> None:
        self.store = store
        self.contexts = contexts
        self.clock = clock

    @operation("read")
    def load_pinned(
        self,
        principal: Principal,
        context_ref: str,
        *,
        cap: int = DEFAULT_CAP,
        filters: RecallFilters | None = None,
        now: datetime | None = None,
    ) -> PinnedResult:
        """Every ``always`` memory plus the ``on_trigger`` ones whose window contains now.

        Ordered by importance (desc), created_at, id: the same state gives byte-identical output.
        Guardrails meant to be obeyed should be loaded with ``filters={"trust_tier": "trusted"}``.
        """
        context = self.contexts.resolve(principal, context_ref)
        cap = clamp_cap(cap)
        rows, total = self.store.pinned_memories(
            principal.workspace_id,
            [context.id],
            memory_filter(filters or RecallFilters()),
            now or self.clock(),
            cap,
        )
        items = [
            PinnedItem(
                **memory_view(row).model_dump(),
                lane="pinned" if row.delivery_mode == "always" else "triggered",
            )
            for row in rows
        ]
        return PinnedResult(
            items=items, cap=cap, truncated=total > len(items), total_available=total
        )

    @operation("read")
    def upcoming(
        self,
        principal: Principal,
        context_ref: str,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        cap: int = DEFAULT_CAP,
        filters: RecallFilters | None = None,
    ) -> UpcomingResult:
        """``on_trigger`` memories whose window meets ``[start, end)`` (default: next 7 days)."""
        context = self.contexts.resolve(principal, context_ref)
        start = start or self.clock()
        end = end or start + DEFAULT_UPCOMING
        if start.tzinfo is None or end.tzinfo is None:
            raise InvalidInputError("from and until need a time zone", field="from")
        if end <= start:
            raise InvalidInputError("until must be after from", field="until")
        cap = clamp_cap(cap)
        rows, total = self.store.upcoming_memories(
            principal.workspace_id,
            [context.id],
            memory_filter(filters or RecallFilters()),
            start,
            end,
            cap,
        )
        return UpcomingResult(
            items=[memory_view(row) for row in rows],
            window_from=start,
            window_until=end,
            truncated=total > len(rows),
            total_available=total,
        )
