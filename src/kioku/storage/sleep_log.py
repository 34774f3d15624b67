"""What Sleep's reversible log holds: runs, actions, their JSON form, and the transaction
handle a backend supplies to read and write them.

A backend supplies a small transaction handle (``SleepTransaction``: lock a context, read and
write runs, append actions, read and change one memory, reach the graph's edge handle on the
same connection; its SQL is in ``shared/sleep.py`` but for the memory writes, which keep each
engine's own full-text and vector indexes in step). Every change a run makes is written *in the same
transaction* as the action that logs it, with the exact values before and after, so a crash
between two actions leaves a store where every logged change happened and nothing else did,
and a rollback can put each value back. The rules over this handle are above storage, in
``service/sleep/log.py`` (logging) and ``service/sleep/rollback.py`` (undoing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from kioku.storage.graph import EdgeTransaction
from kioku.storage.records import EdgeRow, MemoryRow, NewMemory
from kioku.vocabulary import RunStatus, SleepTrigger

RUN_STATUSES = ("running", "done", "failed", "rolled_back")
MEMORY_FIELDS = ("superseded_by", "tags", "importance", "updated_at")
"""The memory columns a Sleep action may change (and rollback restores)."""

TokensOf = Callable[[str, str, list[str]], str]
"""(summary, content, tags) → the lexical tokens of a memory (the service's tokenizer)."""


@dataclass(frozen=True)
class SleepRunRow:
    """One consolidation run of one context."""

    id: str
    workspace_id: str
    context_id: str
    status: RunStatus
    trigger: SleepTrigger
    started_at: datetime
    finished_at: datetime | None = None
    rolled_back_at: datetime | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class SleepActionRow:
    """One logged action: ``before``/``after`` are JSON values (``None``: nothing there)."""

    run_id: str
    seq: int
    phase: str
    kind: str
    target: str
    before: Any
    after: Any
    note: str | None
    at: datetime


@dataclass(frozen=True)
class SleepRollback:
    """What a rollback did: actions undone, and those left alone with the reason."""

    run: SleepRunRow
    undone: int
    skipped: list[tuple[int, str]]


def encode_time(value: datetime) -> str:
    # isoformat, not strftime: %Y does not zero-pad years below 1000 on glibc.
    return value.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def decode_time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def memory_values(row: MemoryRow, columns: Iterable[str]) -> dict[str, Any]:
    """The JSON form of some of a memory's columns (as logged in an action)."""
    values: dict[str, Any] = {}
    for column in columns:
        value = getattr(row, column)
        values[column] = encode_time(value) if isinstance(value, datetime) else value
    return values


def edge_json(edge: EdgeRow | None) -> dict[str, Any] | None:
    """An edge as logged: every column but the workspace."""
    if edge is None:
        return None
    return {
        "context_id": edge.context_id, "source_id": edge.source_id,
        "target_id": edge.target_id, "weight": edge.weight, "origin": edge.origin,
        "trust_tier": edge.trust_tier, "created_at": encode_time(edge.created_at),
        "updated_at": encode_time(edge.updated_at),
    }  # fmt: skip


def edge_from_json(workspace_id: str, data: dict[str, Any]) -> EdgeRow:
    """The edge ``edge_json`` logged, in ``workspace_id``."""
    times = {key: decode_time(data[key]) for key in ("created_at", "updated_at")}
    return EdgeRow(workspace_id=workspace_id, **{**data, "weight": float(data["weight"]), **times})


class SleepTransaction(Protocol):
    """One write transaction on one workspace's Sleep log and memories (a backend's handle)."""

    workspace_id: str

    def lock_context(self, context_id: str) -> bool:
        """Serialize Sleep work on a context until the transaction ends; ``False``: no such
        context in this workspace."""
        ...

    def runs(self, context_id: str) -> list[SleepRunRow]:
        """The context's runs, oldest first."""
        ...

    def run(self, run_id: str) -> SleepRunRow | None: ...

    def insert_run(self, row: SleepRunRow) -> None: ...

    def update_run(self, run_id: str, values: dict[str, Any]) -> None:
        """Change ``status``, ``finished_at``, ``rolled_back_at``, ``summary``, ``error``."""
        ...

    def actions(self, run_id: str) -> list[SleepActionRow]:
        """The run's actions in order."""
        ...

    def append(self, action: SleepActionRow) -> None: ...

    def memory(self, memory_id: str) -> MemoryRow | None: ...

    def set_memory(self, row: MemoryRow, values: dict[str, Any], tokens: str | None) -> None:
        """Write ``values`` (``MEMORY_FIELDS`` only) on a memory, new lexical ``tokens`` if
        given, and keep the vector index in step with ``superseded_by``."""
        ...

    def insert_memory(self, row: NewMemory) -> None: ...

    def purge_memory(self, memory_id: str) -> None: ...

    def edges(self) -> EdgeTransaction:
        """The association graph's edge handle, on this same transaction."""
        ...

    def edge(self, source_id: str, target_id: str) -> EdgeRow | None:
        """The stored edge of one ordered pair."""
        ...

    def candidates(self, context_id: str, limit: int) -> list[tuple[MemoryRow, np.ndarray]]:
        """Live, unsuperseded memories of the context with a stored vector, newest first."""
        ...

    def logged(self, context_id: str, kind: str) -> list[SleepActionRow]:
        """Actions of ``kind`` in the context's runs that are not rolled back, oldest first."""
        ...
