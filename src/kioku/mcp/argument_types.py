"""Argument types shared by every tool module (annotated, so each tool's schema says them)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kioku.models import DeliveryMode, InputModel, Label, RecallFilters, TrustTier

CONTEXT_ID = Annotated[str, Field(description="Context id or name.")]
"""A context's id or name, said in every tool's schema: some clients drop the server
instructions, and the argument is in nearly every tool."""
FILTERS = Annotated[
    RecallFilters | None,
    Field(description='AND-ed, e.g. {"trust_tier": "trusted"}'),
]


class BrowseFilters(InputModel):
    """The filters that matter when browsing or loading the pinned set (a short schema)."""

    trust_tier: TrustTier | None = None
    type: Label | list[Label] | None = None
    tags: list[Label] | None = Field(default=None, description="Any of these.")
    delivery_mode: DeliveryMode | list[DeliveryMode] | None = None

    def to_recall_filters(self) -> RecallFilters:
        return RecallFilters.model_validate(self.model_dump(exclude_none=True))


BROWSE_FILTERS = Annotated[BrowseFilters | None, Field()]
