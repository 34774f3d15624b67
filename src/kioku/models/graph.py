"""Wire models of the association graph: edges, explore results, related memories."""

from __future__ import annotations

from pydantic import BaseModel, Field

from kioku.models.memories import Memory
from kioku.vocabulary import EdgeOrigin, TrustTier


class MemoryEdge(BaseModel):
    """One edge of a memory: the memory at its other end and how strong the link is."""

    memory_id: str = Field(description="The memory at the other end.")
    weight: float
    origin: EdgeOrigin
    trust_tier: TrustTier = Field(description="external when either end is.")


class MemoryDetail(Memory):
    """One memory in full, with its edges (strongest first; live neighbours only)."""

    edges: list[MemoryEdge] = Field(default_factory=list)


class Neighbour(Memory):
    """A memory reached through the graph: its activation and the path that reached it."""

    activation: float = Field(description="Product of the edge weights along the path, (0, 1].")
    hops: int
    path: list[str] = Field(description="Memory ids from the starting memory to this one.")


class ExploreResult(BaseModel):
    """Spreading activation from one memory, strongest first."""

    memory_id: str
    neighbours: list[Neighbour]
