"""Sleep's knobs, decided once from Settings (thresholds are documented in docs/concepts.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta


@dataclass(frozen=True)
class LLMConfig:
    """An OpenAI-compatible chat endpoint for the optional phases, and their bounds."""

    base_url: str
    model: str
    api_key: str = ""
    max_calls: int = 20
    """Chat calls per run, all LLM phases together."""
    batch_size: int = 12
    """Memories shown to the model in one call."""
    timeout_seconds: float = 60.0
    judge_threshold: float = 0.95
    """Pairs with cosine in [judge_threshold, merge_threshold) are asked about."""
    cluster_threshold: float = 0.93
    """Cosine that puts two memories in one cluster for a summary."""
    max_summaries: int = 3
    edge_weight: float = 0.3
    """Weight of an edge the model proposes (origin ``sleep``)."""


@dataclass(frozen=True)
class SleepConfig:
    """What one run may do and how far."""

    max_memories: int = 2000
    """The newest live memories a run considers (merge, re-scoring, LLM batches)."""
    merge_threshold: float = 0.985
    """Cosine of stored vectors at or above which two memories are near-duplicates. Set for
    the bundled multilingual-e5-small, whose cosines are compressed: the closest distinct
    turns of LoCoMo conv-26 reach 0.983, close paraphrases 0.985-0.993 (docs/concepts.md).
    Other models need their own."""
    edge_half_life: timedelta = timedelta(days=14)
    edge_floor: float = 0.05
    """An edge decayed below this weight is pruned."""
    stale_after: timedelta = timedelta(hours=2)
    """A run still ``running`` after this long was abandoned by a stopped process."""
    llm: LLMConfig | None = field(default=None)
