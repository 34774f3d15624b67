"""Sleep's run log on PostgreSQL: the memory writes of a ``SleepTransaction`` (the rest is
``shared/sleep.py``). Every Sleep transaction takes the workspace's graph lock first (the one
graph writes take), so Sleep and concurrent Hebbian updates always lock in the same order:
graph, then rows."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kioku.storage.records import MemoryRow
from kioku.storage.shared.database import Database
from kioku.storage.shared.embeddings import bump_generation
from kioku.storage.shared.graph import lock_graph
from kioku.storage.shared.memories import Lexicon
from kioku.storage.shared.sleep import SleepSql
from kioku.storage.sleep import SleepStore


class _PostgresSleepTransaction(SleepSql):
    def set_memory(self, row: MemoryRow, values: dict[str, Any], tokens: str | None) -> None:
        self._write_memory(row, values, tokens)
        superseded = values.get("superseded_by", row.superseded_by)
        if superseded != row.superseded_by and row.embedding_status == "ready":
            bump_generation(self.tx, self.workspace_id, row.context_id)

    def purge_memory(self, memory_id: str) -> None:
        row = self._delete_memory(memory_id)
        if row is not None and row["embedding_status"] == "ready" and row["deleted_at"] is None:
            bump_generation(self.tx, self.workspace_id, row["context_id"])


class PostgresSleepArea(SleepStore):
    """Mixed into ``PostgresStore``: Sleep's log and its logged changes."""

    sql: Database
    lexicon: Lexicon

    @contextmanager
    def sleep_transaction(self, workspace_id: str) -> Iterator[_PostgresSleepTransaction]:
        with self.sql.write(workspace_id) as tx:
            lock_graph(tx, self.sql.dialect, workspace_id)
            yield _PostgresSleepTransaction(self.sql, self.lexicon, tx, workspace_id)
