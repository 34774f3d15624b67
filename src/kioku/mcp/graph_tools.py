"""MCP tools of the association graph: explore."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from kioku.mcp.errors import tool_errors
from kioku.mcp.results import dumps, memory_json
from kioku.mcp.server_parts import CONTEXT_ID, PrincipalOf
from kioku.models import InputModel, Neighbour, RecallFilters, TrustTier
from kioku.runtime import Runtime


def neighbour_json(neighbour: Neighbour) -> dict[str, Any]:
    """A memory reached through the graph: the memory, its activation and path."""
    data = memory_json(neighbour, listed=True)
    for name in ("activation", "hops", "path"):
        data.pop(name, None)
    data.update(activation=neighbour.activation, path=neighbour.path)
    return data


class GraphFilters(InputModel):
    """The one filter that matters on the graph (a short schema)."""

    trust_tier: TrustTier | None = None


def graph_tools(
    runtime: Callable[[], Runtime], principal_of: PrincipalOf
) -> list[Callable[..., str]]:
    """The graph tool functions (``runtime()`` is read at call time)."""

    @tool_errors
    def explore(
        ctx: Context,
        memory_id: Annotated[str, Field(description="Start here.")],
        context_id: CONTEXT_ID = "default",
        depth: Annotated[int, Field(ge=1, le=3)] = 2,
        min_weight: Annotated[float, Field(ge=0, le=1)] = 0.05,
        filters: GraphFilters | None = None,
    ) -> str:
        """Memories linked to one (recalled or found helpful together, or declared), with
        activation and path. filters={"trust_tier": "trusted"} never crosses external ones."""
        result = runtime().graph.explore(
            principal_of(ctx),
            context_id,
            memory_id,
            depth=depth,
            min_weight=min_weight,
            filters=RecallFilters(trust_tier=filters.trust_tier if filters else None),
        )
        return dumps({"neighbours": [neighbour_json(n) for n in result.neighbours]})

    return [explore]
