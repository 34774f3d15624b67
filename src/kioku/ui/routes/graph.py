"""The association graph around one memory: ``explore``'s neighbours and the paths that
reached them, as JSON in the page for the force layout (``static/graph.js``) and as a list
that works without the picture (keyboard, screen readers, no script)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from kioku.ui.auth import ViewerDep, runtime_of
from kioku.ui.render import as_json, page

router = APIRouter()


def graph_data(centre: Any, neighbours: list[Any], edges: list[Any]) -> dict[str, Any]:
    """Nodes and links for the layout: every memory reached, every hop of every path."""
    nodes = [{"id": centre.id, "label": centre.summary, "hops": 0, "tier": centre.trust_tier}]
    nodes += [
        {"id": n.id, "label": n.summary, "hops": n.hops, "tier": n.trust_tier,
         "activation": round(n.activation, 4), "parent": n.path[-2] if len(n.path) > 1 else None}
        for n in neighbours
    ]  # fmt: skip
    weight = {edge.memory_id: edge.weight for edge in edges}
    links: dict[tuple[str, str], float] = {}
    for n in neighbours:
        for a, b in zip(n.path, n.path[1:], strict=False):
            pair = (min(a, b), max(a, b))
            hop = weight.get(b, n.activation) if a == centre.id else n.activation
            links[pair] = max(links.get(pair, 0.0), hop)
    known = {node["id"] for node in nodes}
    return {
        "nodes": nodes,
        "links": [
            {"source": a, "target": b, "weight": round(w, 4)}
            for (a, b), w in sorted(links.items())
            if a in known and b in known
        ],
    }


@router.get("/contexts/{context_id}/memories/{memory_id}/graph")
def graph(
    request: Request, context_id: str, memory_id: str, who: ViewerDep,
    depth: int = Query(2, ge=1, le=3),
) -> Response:  # fmt: skip
    """The association graph around one memory, ``depth`` hops out."""
    runtime = runtime_of(request)
    context = runtime.contexts.get_context(who.principal, context_id)
    centre = runtime.memories.get_memory(who.principal, context.id, memory_id)
    explored = runtime.graph.explore(who.principal, context.id, memory_id, depth=depth, limit=40)
    data = graph_data(centre, explored.neighbours, centre.edges)
    return page(
        request, "graph.html", title=f"Graph: {centre.summary}", viewer=who, context=context,
        centre=centre, neighbours=explored.neighbours, depth=depth,
        # Inside <script type="application/json">: no "<" may close the block early.
        graph_json=as_json(data).replace("<", "\\u003c").replace(">", "\\u003e"),
    )  # fmt: skip
