"""Storage records → wire models."""

from __future__ import annotations

from dataclasses import asdict

from kioku.models import Context, Memory
from kioku.storage.records import ContextRow, MemoryRow


def memory_view(row: MemoryRow) -> Memory:
    """The wire form of a stored memory."""
    return Memory.model_validate(row, from_attributes=True)


def context_view(row: ContextRow, memory_count: int | None = None) -> Context:
    """The wire form of a stored context (``memory_count`` from the row unless given)."""
    count = memory_count if memory_count is not None else row.memory_count
    return Context.model_validate({**asdict(row), "memory_count": count or 0})
