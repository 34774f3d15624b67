"""Phase 3: merge near-duplicates by the cosine of their stored vectors.

Among the newest ``max_memories`` live memories of the context, pairs of one trust tier,
neither pinned, with cosine ≥ ``merge_threshold`` are merged, most similar first: the newer
wins, the older is superseded (``superseded_by``), its tags and edges go to the winner. A
memory superseded in this run takes part in no further merge (no chains).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kioku.service.sleep.log import sleep_merge
from kioku.service.sleep.rules import is_pinned, newer_first, refusal
from kioku.service.sleep.runner import RunContext
from kioku.storage.records import MemoryRow


def similar_pairs(
    rows: list[MemoryRow], vectors: np.ndarray, threshold: float
) -> list[tuple[float, MemoryRow, MemoryRow]]:
    """Pairs of one trust tier with cosine ≥ ``threshold``, most similar first (ties by ids)."""
    found: list[tuple[float, MemoryRow, MemoryRow]] = []
    if len(rows) < 2:
        return found
    sims = vectors @ vectors.T
    tiers = np.array([row.trust_tier for row in rows])
    same_tier = tiers[:, None] == tiers[None, :]
    upper = np.triu(np.ones_like(sims, dtype=bool), k=1)
    for i, j in zip(*np.nonzero((sims >= threshold) & same_tier & upper), strict=True):
        found.append((float(sims[i, j]), rows[i], rows[j]))
    found.sort(
        key=lambda item: (-item[0], min(item[1].id, item[2].id), max(item[1].id, item[2].id))
    )
    return found


def candidates(run: RunContext) -> tuple[list[MemoryRow], np.ndarray]:
    """The live, unpinned memories a run considers, with their vectors (one model per
    context, so all of one dimension)."""
    found = run.store.sleep_candidates(run.workspace_id, run.context.id, run.config.max_memories)
    kept = [(row, vector) for row, vector in found if not is_pinned(row)]
    if not kept:
        return [], np.zeros((0, 0), dtype=np.float32)
    return [row for row, _ in kept], np.stack([vector for _, vector in kept]).astype(np.float32)


def merge_pair(run: RunContext, phase: str, a: MemoryRow, b: MemoryRow, note: str) -> bool:
    """Merge two memories under the rules (newer wins); ``False`` if refused or stale."""
    reason = refusal(run.context.id, a, b)
    if reason is not None:
        run.reject(phase, f"{a.id}|{b.id}", reason)
        return False
    winner, loser = newer_first(a, b)
    actions = sleep_merge(
        run.store,
        run.workspace_id,
        run.run_id,
        phase,
        loser.id,
        winner.id,
        run.now,
        run.tokens_of,
        note,
    )
    return bool(actions)


def merge_duplicates(run: RunContext) -> dict[str, Any]:
    """Merge every near-duplicate pair above the threshold."""
    rows, vectors = candidates(run)
    merged: set[str] = set()
    count = 0
    for cosine, a, b in similar_pairs(rows, vectors, run.config.merge_threshold):
        if a.id in merged or b.id in merged:
            continue
        if merge_pair(run, "merge", a, b, f"cosine {cosine:.4f}"):
            merged.add(newer_first(a, b)[1].id)
            count += 1
    return {"considered": len(rows), "merged": count}
