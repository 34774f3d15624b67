"""Wire models of recall: filters, the request, scored results."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    StrictBool,
    StrictStr,
    field_validator,
)

from kioku.models.base import MAX_QUERY_CHARS, InputModel, Label, Timestamp
from kioku.models.graph import Neighbour
from kioku.models.memories import Memory
from kioku.vocabulary import Confidence, DeliveryMode, SourceType, TrustTier


class TagFilter(InputModel):
    """Match memories carrying any (or all) of these tags."""

    any: list[Label] | None = None
    all: list[Label] | None = None


class RecallFilters(InputModel):
    """Narrow a recall or a listing. Every filter is optional and they combine with AND."""

    type: Label | list[Label] | None = None
    tags: list[Label] | TagFilter | None = Field(
        default=None, description="A list means any-of; use {all: [...]} for all-of."
    )
    importance_min: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    importance_max: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    created_after: Timestamp | None = None
    created_before: Timestamp | None = None
    source_type: SourceType | list[SourceType] | None = None
    trust_tier: TrustTier | None = None
    delivery_mode: DeliveryMode | list[DeliveryMode] | None = None
    context_ids: list[StrictStr] | None = Field(default=None, max_length=50)
    include_superseded: StrictBool = False
    include_deleted: StrictBool = False


class RecallRequest(InputModel):
    """A hybrid search in one context (or several, via ``filters.context_ids``)."""

    query: StrictStr = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    k: int = Field(default=5, ge=1, le=100)
    filters: RecallFilters = Field(default_factory=RecallFilters)
    include_related: StrictBool = Field(
        default=False, description="Also return graph neighbours of the results as related."
    )
    min_confidence: Confidence | None = Field(
        default=None,
        description="Return no results unless the set's confidence is at least this (high > "
        "moderate > low > none): nothing rather than noise. `withheld` then says how many "
        "were held back; `confidence` is still given.",
    )

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("query must not be empty or only whitespace")
        return value


class ScoreBreakdown(BaseModel):
    """How a result's score was made: each leg's raw score, the fused score, the rerank factor."""

    lexical: float | None
    lexical_rank: int | None
    vector: float | None
    vector_rank: int | None
    fused: float
    rerank: float
    suspicious: float | None = Field(
        default=None,
        description="Factor applied to an external memory whose text reads like instructions "
        "to an AI (the result's `suspicious` is true): its score counts half, so memory scoring "
        "at least half as much ranks above it. Only on such results.",
    )
    graph: float | None = Field(
        default=None, description="Graph boost factor (only when the context turns it on)."
    )
    thread: float | None = Field(
        default=None,
        description="Score added by the memory's thread neighbours (only when it has some "
        "among the candidates).",
    )
    newer_first: float | None = Field(
        default=None,
        description="Factor of the newer-fact-first stage, only on a result it moved: this "
        "result and another top result of its context are two versions of one fact, and the "
        "newer was put first (the older, for a question about the past). Above 1: moved up.",
    )
    model_rerank: float | None = Field(
        default=None,
        description="The model reranker's relevance score for this result, on the reranker's "
        "own scale (only when a reranker is configured and answered).",
    )


class RecallHit(Memory):
    """A memory found by recall, with its score."""

    score: float
    score_breakdown: ScoreBreakdown


class RerankerReport(BaseModel):
    """What the configured model reranker did for this recall."""

    reranker: str = Field(description="Which reranker was asked (format and model).")
    status: Literal["applied", "failed", "timeout", "skipped"] = Field(
        description="applied: the head was reordered by the blend; failed, timeout, or "
        "skipped (for a while after a failure): the results are in the fused order, as "
        "without a reranker."
    )
    candidates: int = Field(description="How many top candidates were sent to it.")
    reason: str | None = Field(default=None, description="Why it failed, when it did.")


class PendingVectorsReport(BaseModel):
    """Candidates of this recall that were still waiting for their vector (read-your-writes)."""

    embedded: int = Field(
        description="Embedded for this recall, so they ranked as they will once their vector "
        "is stored."
    )
    lexical_only: int = Field(
        description="Beyond the per-recall bound: ranked by the lexical leg alone (the vector "
        "leg abstaining on them). Above 0, this ranking may still change once the embedding "
        "worker catches up."
    )


class RecallResult(BaseModel):
    """The ranked results of a recall and how much to trust the set as a whole."""

    results: list[RecallHit]
    confidence: Confidence
    legs: list[str] = Field(description="Which search legs ran: lexical, vector.")
    related: list[Neighbour] = Field(
        default_factory=list,
        description="Graph neighbours of the results (include_related), never a result itself.",
    )
    reranker: RerankerReport | None = Field(
        default=None, description="The model reranker's part (only when one is configured)."
    )
    withheld: int = Field(
        default=0,
        description="How many results were held back because `confidence` is below the "
        "request's `min_confidence` (`results` is then empty).",
    )
    pending_vectors: PendingVectorsReport | None = Field(
        default=None,
        description="Only when some candidates had just been written and had no vector yet.",
    )
    _timings: dict[str, float] = PrivateAttr(default_factory=dict)

    def set_timings(self, timings: dict[str, float]) -> None:
        """Seconds each step of this recall took, in order (``Server-Timing``)."""
        self._timings = dict(timings)

    @property
    def timings(self) -> dict[str, float]:
        """Where this recall's time went, per pipeline stage (never serialised)."""
        return self._timings

    def server_timing(self) -> str:
        """The ``Server-Timing`` header value of this recall (REST and the UI's search): each
        stage of recall's pipeline (``service/ranking/pipeline.py``) or step around it
        (``scope``, ``hits``...), in the order they ran, in milliseconds; names, never data."""
        return ", ".join(f"{name};dur={took * 1000.0:.2f}" for name, took in self._timings.items())
