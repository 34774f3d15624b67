"""The re-ranking factors: the bounded feature re-ranker (small, capped nudges from importance,
recency, access and feedback) and the demotion of external text that reads like orders.

Whatever the features say, a result's score moves by at most ``MAX_SHIFT`` either way, so the
retrieval legs always decide the order and the features only break near-ties. A ``suspicious``
memory (external text the injection tripwire flagged) keeps ``SUSPICIOUS_FACTOR`` of its score:
it is still returned and flagged, but memory scoring at least half as much now ranks above it.
"""

from __future__ import annotations

import math
from datetime import datetime

from kioku.ranking_records import RankingSignals

MAX_SHIFT = 0.10
RECENCY_HALF_LIFE_DAYS = 30.0
SUSPICIOUS_FACTOR = 0.5
"""What a ``suspicious`` memory keeps of its score (a round half, not tuned: docs/concepts.md)."""
_WEIGHTS = {"importance": 0.5, "recency": 0.3, "access": 0.2, "feedback": 0.5}


def net_helpfulness(helpful: int, unhelpful: int) -> float:
    """(helpful - unhelpful) / (events + 1), in (-1, 1): one vote counts half, ten count 0.9.

    The +1 keeps a single event from acting like a verdict; with no events it is 0.
    """
    return (helpful - unhelpful) / (helpful + unhelpful + 1)


def rerank_factor(features: RankingSignals, newest: datetime) -> float:
    """A multiplier in ``[1 - MAX_SHIFT, 1 + MAX_SHIFT]``.

    Recency is measured against the newest candidate rather than the clock, so the same data
    and query give the same order whenever they are asked.
    """
    age_days = max(0.0, (newest - features.created_at).total_seconds() / 86400.0)
    recency = 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
    access = min(1.0, math.log1p(features.access_count) / math.log(101.0))
    signal = (
        _WEIGHTS["importance"] * (2.0 * features.importance - 1.0)
        + _WEIGHTS["recency"] * (2.0 * recency - 1.0)
        + _WEIGHTS["access"] * access
        + _WEIGHTS["feedback"] * net_helpfulness(features.helpful, features.unhelpful)
    )
    signal = max(-1.0, min(1.0, signal))
    return 1.0 + MAX_SHIFT * signal


def suspicion_factor(features: RankingSignals) -> float:
    """``SUSPICIOUS_FACTOR`` for external text that reads like instructions to an AI, else 1."""
    return SUSPICIOUS_FACTOR if features.suspicious else 1.0
