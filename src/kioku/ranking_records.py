"""The records search ranks with: hits of a search leg and the signals read about candidates.

Storage fills them and ``kioku.search`` (pure functions) reads them, so they live here, in
neither: search never imports storage. ``kioku.storage.records`` re-exports them for storage's
own code.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np


@dataclass(frozen=True)
class ScoredId:
    """One hit of a search leg, best first."""

    memory_id: str
    score: float


@dataclass(frozen=True)
class RankingSignals:
    """What the re-ranker reads about a candidate (cheap to fetch: no text)."""

    importance: float
    created_at: datetime
    access_count: int
    helpful: int = 0
    """Feedback events that called this memory helpful..."""
    unhelpful: int = 0
    """...and unhelpful (both kept: contradictory events are not resolved away)."""
    thread: tuple[str, str] | None = None
    """(context id, thread) of a memory in a thread: recall's thread scores group by it."""
    suspicious: bool = False
    """An external memory whose text reads like instructions to an AI (the stored verdict of
    ``service/suspicious.py``; a row not judged yet counts as not suspicious)."""
    head: str = ""
    """The start of its summary and of its content, joined by a newline (when asked for:
    enough to tell its language without loading up to 1 MiB)."""
    pending: bool = False
    """Still waiting for its vector: the vector leg cannot have found it."""


@dataclass(frozen=True)
class VersionSignals:
    """What the newer-fact-first stage reads about a top candidate: where it lives, when it
    was written, its summary and its stored vector (``None`` before it is embedded)."""

    context_id: str
    created_at: datetime
    summary: str
    vector: np.ndarray | None
