"""The rules every Sleep change obeys, whoever proposed it (a phase or a model's answer)."""

from __future__ import annotations

from kioku.storage.records import MemoryRow

PINNED = ("always", "on_trigger")


def is_pinned(memory: MemoryRow) -> bool:
    """Pinned and triggered memories are delivered deterministically: Sleep never touches
    them (no merge, no re-scoring: their importance orders the pinned set)."""
    return memory.delivery_mode in PINNED


def refusal(context_id: str, *memories: MemoryRow) -> str | None:
    """Why Sleep may not act on these memories together, or ``None`` if it may."""
    if len({m.id for m in memories}) < len(memories):
        return "names one memory twice"
    for memory in memories:
        if memory.context_id != context_id:
            return "crosses contexts"
        if memory.deleted_at is not None or memory.superseded_by is not None:
            return "touches a deleted or superseded memory"
        if is_pinned(memory):
            return "touches a pinned memory"
    if len({m.trust_tier for m in memories}) > 1:
        return "crosses trust tiers"
    return None


def stated_text(memory: MemoryRow) -> str:
    """What a memory states, as the merge guard reads it (``merge.py``): summary and content."""
    return f"{memory.summary}\n{memory.content}" if memory.content else memory.summary


def newer_first(a: MemoryRow, b: MemoryRow) -> tuple[MemoryRow, MemoryRow]:
    """(winner, loser) of a merge: the newer memory wins (ties: the larger id)."""
    return (a, b) if (a.created_at, a.id) > (b.created_at, b.id) else (b, a)
