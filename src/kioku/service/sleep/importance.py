"""Phase 4: re-score importance from access and feedback, bounded and idempotent.

``importance = clamp(base + 0.2·net + 0.1·use, 0, 1)`` rounded to 4 places, where
``net = (helpful − unhelpful) / (helpful + unhelpful + 1)`` (the re-ranker's net helpfulness)
and ``use = min(1, ln(1 + access_count) / ln(1 + 50))``. ``base`` is the importance the memory
had before Sleep last re-scored it (if nothing else changed it since), else its importance now:
so Sleep's adjustment is never applied twice, a person's later setting becomes the new base,
and Sleep moves a memory by at most −0.2 / +0.3 from what it was given. Pinned memories are
left alone (their importance orders the pinned set).
"""

from __future__ import annotations

import math
from typing import Any

from kioku.service.sleep.log import sleep_set_importance
from kioku.service.sleep.rules import is_pinned
from kioku.service.sleep.runner import RunContext
from kioku.storage.records import MemoryFilter

FEEDBACK_WEIGHT = 0.2
ACCESS_WEIGHT = 0.1
ACCESS_SATURATION = 50


def rescored(base: float, helpful: int, unhelpful: int, access_count: int) -> float:
    net = (helpful - unhelpful) / (helpful + unhelpful + 1)
    use = min(1.0, math.log1p(access_count) / math.log1p(ACCESS_SATURATION))
    value = base + FEEDBACK_WEIGHT * net + ACCESS_WEIGHT * use
    return round(min(1.0, max(0.0, value)), 4)


def rescore_importance(run: RunContext) -> dict[str, Any]:
    """Set each live, unpinned memory's importance from its signals."""
    ws, ctx = run.workspace_id, run.context.id
    live = run.store.list_memories(ws, [ctx], MemoryFilter(), None, run.config.max_memories)
    rows = [row for row in live if not is_pinned(row)]
    signals = run.store.ranking_signals(ws, [row.id for row in rows])
    last = run.store.last_sleep_values(ws, ctx, "importance")
    changes: list[tuple[str, float]] = []
    for row in rows:
        base = row.importance
        previous = last.get(row.id)
        if previous is not None and previous[1].get("importance") == row.importance:
            base = previous[0]["importance"]
        signal = signals.get(row.id)
        if signal is None:
            continue
        value = rescored(base, signal.helpful, signal.unhelpful, signal.access_count)
        if abs(value - row.importance) >= 0.001:
            changes.append((row.id, value))
    for start in range(0, len(changes), 200):
        sleep_set_importance(
            run.store, ws, run.run_id, "importance", changes[start : start + 200], run.now
        )
    return {"considered": len(rows), "rescored": len(changes)}
