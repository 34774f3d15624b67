"""Storage records → wire models."""

from __future__ import annotations

from dataclasses import asdict

from kioku.models import Context, Memory
from kioku.service.suspicious import memory_is_suspicious
from kioku.storage.records import ContextRow, MemoryRow


def memory_view(row: MemoryRow) -> Memory:
    """The wire form of a stored memory, with ``suspicious`` flagged on read (docs/concepts.md).

    Only external text is flagged: a trusted guardrail is *meant* to instruct the agent. The
    detector's verdict is stored when the text is written (it costs up to ~0.5 s on a hostile
    1 MiB text, too much for every read); rows written before that are judged here.
    """
    memory = Memory.model_validate(row, from_attributes=True)
    memory.position = row.thread_position
    if row.trust_tier == "external":
        verdict = row.instruction_like
        if verdict is None:
            verdict = memory_is_suspicious(row.summary, row.content)
        memory.suspicious = verdict
    return memory


def context_view(row: ContextRow, memory_count: int | None = None) -> Context:
    """The wire form of a stored context (``memory_count`` from the row unless given)."""
    count = memory_count if memory_count is not None else row.memory_count
    return Context.model_validate({**asdict(row), "memory_count": count or 0})
