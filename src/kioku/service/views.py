"""Storage records → wire models."""

from __future__ import annotations

from kioku.models import Context, Memory
from kioku.storage.records import ContextRow, MemoryRow


def memory_view(row: MemoryRow) -> Memory:
    """The wire form of a stored memory."""
    return Memory.model_validate(row, from_attributes=True)


def context_view(row: ContextRow) -> Context:
    """The wire form of a stored context."""
    return Context.model_validate(row, from_attributes=True)
