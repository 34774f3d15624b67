"""Fusing the ranked lists of the search legs into one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kioku.storage.records import ScoredId


def fuse_rrf(
    legs: Mapping[str, Sequence[ScoredId]], weights: Mapping[str, float], k: int = 60
) -> dict[str, float]:
    """Reciprocal-rank fusion: ``sum(weight / (k + rank))`` over the legs (rank from 1)."""
    fused: dict[str, float] = {}
    for leg, hits in legs.items():
        weight = weights.get(leg, 1.0)
        for rank, hit in enumerate(hits, start=1):
            fused[hit.memory_id] = fused.get(hit.memory_id, 0.0) + weight / (k + rank)
    return fused


def fuse_weighted(
    legs: Mapping[str, Sequence[ScoredId]], weights: Mapping[str, float]
) -> dict[str, float]:
    """Weighted sum of min-max normalised scores (a missing leg contributes 0)."""
    fused: dict[str, float] = {}
    for leg, hits in legs.items():
        if not hits:
            continue
        weight = weights.get(leg, 1.0)
        high = max(hit.score for hit in hits)
        low = min(hit.score for hit in hits)
        span = high - low
        for hit in hits:
            normalised = (hit.score - low) / span if span > 0 else 1.0
            fused[hit.memory_id] = fused.get(hit.memory_id, 0.0) + weight * normalised
    return fused
