"""The Sleep part of the ``Store`` protocol (``storage/sleep.py`` holds the logging rules both
backends share, ``service/sleep/rollback.py`` the rollback). Every logged change is written in
the same transaction as its action, with exact values before and after."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from kioku.storage.records import EdgeRow, MemoryRow, NewMemory
from kioku.storage.sleep_log import SleepActionRow, SleepRunRow, SleepTransaction, TokensOf


class SleepStore(Protocol):
    """Sleep's run log and its logged, reversible changes (see the contract tests)."""

    def start_sleep_run(self, workspace_id: str, run: SleepRunRow, stale_before: datetime) -> None:
        """Insert a ``running`` run; ``ConflictError`` while another (started at or after
        ``stale_before``) is running on that context; older ``running`` ones become ``failed``."""
        ...

    def finish_sleep_run(
        self,
        workspace_id: str,
        run_id: str,
        status: str,
        now: datetime,
        summary: dict[str, Any],
        error: str | None = None,
    ) -> None: ...

    def get_sleep_run(self, workspace_id: str, run_id: str) -> SleepRunRow | None: ...

    def list_sleep_runs(self, workspace_id: str, context_id: str) -> list[SleepRunRow]:
        """Newest first."""
        ...

    def list_sleep_actions(self, workspace_id: str, run_id: str) -> list[SleepActionRow]: ...

    def last_sleep_values(
        self, workspace_id: str, context_id: str, kind: str
    ) -> dict[str, tuple[Any, Any]]:
        """Per target, (before, after) of the latest ``kind`` action not rolled back."""
        ...

    def sleep_candidates(
        self, workspace_id: str, context_id: str, limit: int
    ) -> list[tuple[MemoryRow, np.ndarray]]:
        """The newest ``limit`` live, unsuperseded memories with a vector, with it."""
        ...

    def log_sleep_action(
        self,
        workspace_id: str,
        run_id: str,
        phase: str,
        kind: str,
        target: str,
        now: datetime,
        *,
        before: Any = None,
        after: Any = None,
        note: str | None = None,
    ) -> SleepActionRow:
        """An action that changes nothing undoable (a rejection, a sweep's count)."""
        ...

    def sleep_merge(
        self,
        workspace_id: str,
        run_id: str,
        phase: str,
        loser_id: str,
        winner_id: str,
        now: datetime,
        tokens_of: TokensOf,
        note: str | None = None,
    ) -> list[SleepActionRow]:
        """Supersede ``loser_id`` by ``winner_id``: tags united on the winner, edges moved."""
        ...

    def sleep_set_importance(
        self,
        workspace_id: str,
        run_id: str,
        phase: str,
        values: Sequence[tuple[str, float]],
        now: datetime,
        note: str | None = None,
    ) -> list[SleepActionRow]: ...

    def sleep_write_edges(
        self,
        workspace_id: str,
        run_id: str,
        phase: str,
        rows: Sequence[EdgeRow],
        deletions: Sequence[tuple[str, str]],
        now: datetime,
        note: str | None = None,
    ) -> list[SleepActionRow]: ...

    def sleep_insert_memory(
        self,
        workspace_id: str,
        run_id: str,
        phase: str,
        row: NewMemory,
        edges: Sequence[EdgeRow],
        now: datetime,
        note: str | None = None,
    ) -> list[SleepActionRow]: ...

    def sleep_transaction(self, workspace_id: str) -> AbstractContextManager[SleepTransaction]:
        """One write transaction on the workspace's Sleep log and memories, for the rules
        written above storage (a run's rollback: ``service/sleep/rollback.py``)."""
        ...
