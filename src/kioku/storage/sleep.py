"""Sleep's store: the ``sleep_transaction`` a backend supplies (``storage/sleep_log.py``)
and the reads and the one plain write (closing a run) over it. The rules that write the log
(starting a run, logging each change with the change) are above storage, in
``service/sleep/log.py``; its rollback is ``service/sleep/rollback.py``.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from kioku.storage.records import MemoryRow
from kioku.storage.sleep_log import SleepActionRow, SleepRunRow, SleepTransaction
from kioku.vocabulary import RunStatus

__all__ = ["SleepActionRow", "SleepRunRow", "SleepStore"]


class SleepStore(Protocol):
    """Sleep's run log over a backend's ``sleep_transaction``: the reads, and closing a run.
    Its logged, reversible changes are ``service/sleep/log.py``'s (see the contract tests)."""

    def sleep_transaction(self, workspace_id: str) -> AbstractContextManager[SleepTransaction]:
        """One write transaction on the workspace's Sleep log and memories, for the rules
        written above storage (``service/sleep/log.py``, ``service/sleep/rollback.py``)."""
        ...

    def finish_sleep_run(
        self,
        workspace_id: str,
        run_id: str,
        status: RunStatus,
        now: datetime,
        summary: dict[str, Any],
        error: str | None = None,
    ) -> None:
        """Close a run as ``done`` or ``failed`` with its summary."""
        with self.sleep_transaction(workspace_id) as tx:
            tx.update_run(
                run_id, {"status": status, "finished_at": now, "summary": summary, "error": error}
            )

    def get_sleep_run(self, workspace_id: str, run_id: str) -> SleepRunRow | None:
        with self.sleep_transaction(workspace_id) as tx:
            return tx.run(run_id)

    def list_sleep_runs(self, workspace_id: str, context_id: str) -> list[SleepRunRow]:
        """The context's runs, newest first."""
        with self.sleep_transaction(workspace_id) as tx:
            return list(reversed(tx.runs(context_id)))

    def list_sleep_actions(self, workspace_id: str, run_id: str) -> list[SleepActionRow]:
        with self.sleep_transaction(workspace_id) as tx:
            return tx.actions(run_id)

    def sleep_candidates(
        self, workspace_id: str, context_id: str, limit: int
    ) -> list[tuple[MemoryRow, np.ndarray]]:
        """What a run may consolidate: the newest ``limit`` live, unsuperseded memories of
        the context that have a vector, with it (the stored vector: no re-embedding)."""
        with self.sleep_transaction(workspace_id) as tx:
            return tx.candidates(context_id, limit)

    def last_sleep_values(
        self, workspace_id: str, context_id: str, kind: str
    ) -> dict[str, tuple[Any, Any]]:
        """Per target, (before, after) of the latest ``kind`` action of the context's runs
        that are not rolled back (e.g. what Sleep last did to each memory's importance)."""
        with self.sleep_transaction(workspace_id) as tx:
            return {
                action.target: (action.before, action.after)
                for action in tx.logged(context_id, kind)
            }
