"""MCP tools of the association graph: explore."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from kioku.mcp.argument_types import CONTEXT_ID
from kioku.mcp.context import ToolContext, caller
from kioku.mcp.errors import tool_errors
from kioku.models import ExploreResult, InputModel, RecallFilters, TrustTier


class GraphFilters(InputModel):
    """The one filter that matters on the graph (a short schema)."""

    trust_tier: TrustTier | None = None


@tool_errors
def explore(
    ctx: ToolContext,
    memory_id: Annotated[str, Field(description="Start here.")],
    context_id: CONTEXT_ID = "default",
    depth: Annotated[int, Field(ge=1, le=3)] = 2,
    min_weight: Annotated[float, Field(ge=0, le=1)] = 0.05,
    filters: GraphFilters | None = None,
) -> ExploreResult:
    """Memories linked to one (recalled or found helpful together, or declared), with
    activation and path. filters={"trust_tier": "trusted"} never crosses external ones."""
    runtime, principal = caller(ctx)
    return runtime.graph.explore(
        principal,
        context_id,
        memory_id,
        depth=depth,
        min_weight=min_weight,
        filters=RecallFilters(trust_tier=filters.trust_tier if filters else None),
    )


GRAPH_TOOLS = [explore]
