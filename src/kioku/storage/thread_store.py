"""The part of the ``Store`` protocol threads need: where a thread ends, and who sits next to
a memory in its thread (docs/concepts.md, *Threads*)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kioku.storage.records import MemoryFilter


class ThreadStore(Protocol):
    """Thread primitives; ``Store`` inherits them. See tests/storage/test_thread_contract."""

    def thread_tails(
        self, workspace_id: str, context_id: str, threads: Sequence[str]
    ) -> dict[str, int]:
        """The highest position used in each of ``threads`` of the context (forgotten memories
        count too, so a position is never handed out twice); threads with no memory are
        absent."""
        ...

    def thread_neighbours(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        memory_ids: Sequence[str],
        flt: MemoryFilter,
    ) -> list[tuple[str, str]]:
        """(memory id, neighbour id) for every memory of ``memory_ids`` in a thread and the
        memories just before and just after it (the nearest lower and higher positions) in the
        same context and thread, among those of ``context_ids`` that ``flt`` lets through."""
        ...
