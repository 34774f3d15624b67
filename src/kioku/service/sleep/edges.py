"""Phase 2: decay the context's edges with a half-life and prune those below the floor.

``w ← w · 0.5^(Δt / half_life)`` where Δt is the time since the edge's ``updated_at`` (its
last strengthening or decay), which becomes now: decaying twice over two intervals equals
decaying once over their sum. Below ``edge_floor`` the edge is deleted.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kioku.service.sleep.log import sleep_write_edges
from kioku.service.sleep.runner import RunContext
from kioku.storage.records import EdgeRow

BATCH = 200
"""Edge changes per transaction (each batch commits with its log entries)."""


def decayed_weight(edge: EdgeRow, run: RunContext) -> float:
    elapsed = (run.now - edge.updated_at).total_seconds()
    half_life = run.config.edge_half_life.total_seconds()
    return edge.weight * 0.5 ** (max(elapsed, 0.0) / half_life)


def decay_edges(run: RunContext) -> dict[str, Any]:
    """Decay every edge of the context; prune the ones that fall below the floor."""
    decayed = pruned = 0
    rows: list[EdgeRow] = []
    deletions: list[tuple[str, str]] = []

    def flush() -> None:
        if rows or deletions:
            sleep_write_edges(
                run.store, run.workspace_id, run.run_id, "edges", rows, deletions, run.now
            )
            rows.clear()
            deletions.clear()

    for edge in run.store.list_edges(run.workspace_id, run.context.id):
        weight = decayed_weight(edge, run)
        if weight < run.config.edge_floor:
            deletions.append(edge.pair)
            pruned += 1
        elif weight < edge.weight:
            rows.append(replace(edge, weight=weight, updated_at=run.now))
            decayed += 1
        if len(rows) + len(deletions) >= BATCH:
            flush()
    flush()
    return {"decayed": decayed, "pruned": pruned}
