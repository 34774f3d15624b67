"""Wire models of contexts."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import (
    BaseModel,
    Field,
    StrictStr,
    field_validator,
)

from kioku.models.base import CONTEXT_NAME_PATTERN, UUID_PATTERN, InputModel
from kioku.vocabulary import SleepMode, TrustTier


class ContextCreate(InputModel):
    """A new named memory space."""

    name: StrictStr = Field(pattern=CONTEXT_NAME_PATTERN, description="Unique per workspace.")
    description: StrictStr = Field(default="", max_length=2000)
    trust_tier: TrustTier = "trusted"
    sleep_mode: SleepMode = "edges_only"
    search_config: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name_is_not_an_id(cls, value: str) -> str:
        if UUID_PATTERN.match(value):
            raise ValueError("a context name must not look like a context id (uuid)")
        return value

    @field_validator("search_config")
    @classmethod
    def _known_search_config(cls, value: dict[str, Any]) -> dict[str, Any]:
        return SearchConfig.model_validate(value).model_dump(exclude_defaults=True)


class ContextUpdate(InputModel):
    """Partial update of a context; absent fields are left alone."""

    name: StrictStr | None = Field(default=None, pattern=CONTEXT_NAME_PATTERN)
    description: StrictStr | None = Field(default=None, max_length=2000)
    trust_tier: TrustTier | None = None
    sleep_mode: SleepMode | None = None
    search_config: dict[str, Any] | None = None

    @field_validator("name")
    @classmethod
    def _name_is_not_an_id(cls, value: str | None) -> str | None:
        if value is not None and UUID_PATTERN.match(value):
            raise ValueError("a context name must not look like a context id (uuid)")
        return value

    @field_validator("search_config")
    @classmethod
    def _known_search_config(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        return SearchConfig.model_validate(value).model_dump(exclude_defaults=True)


class SearchConfig(InputModel):
    """Per-context fusion settings.

    ``weighted`` (default) sums each leg's min-max normalised scores; ``rrf`` is reciprocal-rank
    fusion. Weighted is the default because it measured better on both benchmarks
    (docs/benchmarks.md): RRF throws away how much better the top hit of a leg is.
    """

    fusion: Literal["rrf", "weighted"] = "weighted"
    rrf_k: int = Field(default=60, ge=1, le=1000)
    lexical_weight: float = Field(default=1.0, ge=0.0, le=10.0, allow_inf_nan=False)
    vector_weight: float = Field(default=1.0, ge=0.0, le=10.0, allow_inf_nan=False)
    graph_boost: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    """Mix graph neighbours of the top results into the ranking (0: off; see docs/graph.md)."""
    lexical_rank_weight: float = Field(default=1.0, ge=0.0, le=10.0, allow_inf_nan=False)
    vector_rank_weight: float = Field(default=0.5, ge=0.0, le=10.0, allow_inf_nan=False)
    """The rank term of weighted fusion: each candidate also gains, per leg, ``rank weight ×
    leg weight / its rank in that leg`` (``kioku.search.fusion.add_rank_term``), so a leg's
    first place is not outvoted by how the legs' scores are spread (both 0: scores only; a
    question in Japanese is always fused by scores only, ``rank_weights_for``;
    docs/concepts.md, *How recall ranks*)."""
    leg_trust: Literal["fixed", "sharpness"] = "sharpness"
    """``sharpness``: the lexical leg's weight follows how far its best hit stands out from
    the rest of its hits (``kioku.search.leg_trust``); ``fixed``: the weights as set."""
    thread_weight: float = Field(default=0.2, ge=0.0, le=1.0, allow_inf_nan=False)
    """Share of a memory's thread neighbours' scores added to its own (0: off; see
    docs/concepts.md, *Threads*)."""
    thread_score_weight: float = Field(default=0.26, ge=0.0, le=1.0, allow_inf_nan=False)
    """Share of the gap to the best score among its thread's candidates that a memory's score
    closes (0: off; see docs/concepts.md, *Threads*)."""
    language_calibration: Literal["centered", "shifted", "off"] = "centered"
    """How recall compares vector scores of memories in different languages when a context
    holds more than one (docs/concepts.md, *Memories in more than one language*): ``centered``
    removes each language's mean direction, ``shifted`` only subtracts most of its offset,
    ``off`` reads the legs as if every memory were in the query's language."""


class Context(BaseModel):
    """A named memory space inside one workspace."""

    id: str
    workspace_id: str
    name: str
    description: str
    trust_tier: TrustTier
    sleep_mode: SleepMode
    search_config: dict[str, Any]
    embedding_model: str | None
    embedding_dim: int | None
    memory_count: int = 0
    created_at: datetime
    updated_at: datetime
    connector_id: str | None = Field(
        default=None, description="The connector feeding this context (always external)."
    )


class ContextPage(BaseModel):
    """Every context of the workspace, ordered by name."""

    items: list[Context]
