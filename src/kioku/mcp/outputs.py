"""The MCP tools' own output models: only where no REST model says what a tool returns.

Every other tool returns the REST model of its service call (``Memory``, ``MemoryPage``,
``PinnedResult``, ``State``, ``ContextStats``...); ``kioku.mcp.results`` says how an agent
reads each one.
"""

from __future__ import annotations

from pydantic import BaseModel

from kioku.models import RecallResult, SourceType, TrustTier


class Stored(BaseModel):
    """remember's receipt: the new memory's id and the provenance the server stamped."""

    memory_id: str
    trust_tier: TrustTier
    source_type: SourceType


class Forgotten(BaseModel):
    """forget's receipt: the memory now soft-deleted."""

    forgotten: str


class Deleted(BaseModel):
    """delete_state's receipt: the state key now gone."""

    deleted: str


class RecallAnswer(BaseModel):
    """recall's result, with what the caller asked to see of it (score breakdowns, graph
    neighbours)."""

    result: RecallResult
    explain: bool = False
    include_related: bool = False
