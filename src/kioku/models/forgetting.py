"""Wire models of ``forget_by_query``: a preview, then a confirmation of exactly that preview."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, StrictStr, field_validator

from kioku.models.base import MAX_QUERY_CHARS, InputModel
from kioku.models.recall import RecallFilters
from kioku.vocabulary import DeliveryMode, ForgetMatch, SourceType, TrustTier

MAX_FORGET = 100
CONFIRMATION_PATTERN = r"^fq1\.[0-9a-f]{32}\.[0-9a-f]{32}$"


class ForgetQuery(InputModel):
    """Forget (soft-delete) what a query or filters match, in two calls.

    Without ``confirmation`` nothing is forgotten: the answer lists exactly the memories that
    would be, with a ``confirmation``. The same request again with that confirmation forgets
    exactly those, or nothing (409) if what the request matches has changed since.
    """

    query: StrictStr | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="What to forget. Omitted: the memories the filters match (newest first).",
    )
    filters: RecallFilters = Field(
        default_factory=RecallFilters,
        description="Recall's filters. Pinned memories (always, on_trigger) are kept unless "
        "delivery_mode names them; context_ids and include_deleted are refused.",
    )
    match: ForgetMatch = Field(
        default="all_terms",
        description="With a query: all_terms keeps recall's ranking but only memories holding "
        "every word of the query; recall takes recall's top k as they are (meaning-only "
        "matches too).",
    )
    k: int = Field(
        default=10, ge=1, le=MAX_FORGET, description="At most this many are forgotten per call."
    )
    confirmation: StrictStr | None = Field(
        default=None,
        pattern=CONFIRMATION_PATTERN,
        description="The confirmation of a preview of this same request. Omitted: preview.",
    )

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("query must not be empty or only whitespace")
        return value


class ForgetCandidate(BaseModel):
    """One memory a forget_by_query matched: enough to recognise it, not its full text."""

    id: str
    summary: str
    type: str
    tags: list[str]
    delivery_mode: DeliveryMode
    source_type: SourceType
    trust_tier: TrustTier
    created_at: datetime
    score: float | None = Field(description="Recall's score; null when matched by filters only.")


class ForgetResult(BaseModel):
    """What a forget_by_query matched, and whether it was forgotten or only previewed."""

    status: Literal["preview", "forgotten"]
    matches: list[ForgetCandidate] = Field(
        description="Exactly the memories forgotten (or, in a preview, that would be)."
    )
    count: int
    truncated: bool = Field(
        description="More memories match (or may match) than this call covers: they stay. "
        "Forget again to go on."
    )
    pinned_kept: int = Field(
        description="Pinned memories (always, on_trigger) that match too and are kept, because "
        "filters.delivery_mode did not name them (counted up to k)."
    )
    confirmation: str | None = Field(
        description="In a preview with matches: send it back with the same request to forget "
        "exactly these. Null otherwise."
    )
    forgotten_ids: list[str] = Field(
        description="The ids soft-deleted by this call (empty in a preview)."
    )
