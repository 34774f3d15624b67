"""Sleep's run log on PostgreSQL: the memory writes of a ``SleepTransaction`` (the rest is
``shared/sleep.py``). Every Sleep transaction takes the workspace's graph lock first (the one
graph writes take), so Sleep and concurrent Hebbian updates always lock in the same order:
graph, then rows."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg.types.json import Jsonb

from kioku.storage.postgres.codec import encode_tokens
from kioku.storage.records import MemoryRow, NewMemory
from kioku.storage.shared.database import Database
from kioku.storage.shared.embeddings import bump_generation
from kioku.storage.shared.graph import lock_graph
from kioku.storage.shared.sleep import SleepSql
from kioku.storage.sleep import SleepStore


class _PostgresSleepTransaction(SleepSql):
    def set_memory(self, row: MemoryRow, values: dict[str, Any], tokens: str | None) -> None:
        more: list[str] = []
        if tokens is not None:
            more = ["lexical_tokens = %s::tsvector", "lexical_length = %s"]
        self._write_memory(row, values, more, encode_tokens(tokens) if tokens is not None else ())
        superseded = values.get("superseded_by", row.superseded_by)
        if superseded != row.superseded_by and row.embedding_status == "ready":
            bump_generation(self.tx, self.workspace_id, row.context_id)

    def insert_memory(self, row: NewMemory) -> None:
        tokens, length = encode_tokens(row.lexical_tokens)
        self.tx.execute(
            "INSERT INTO memories (id, workspace_id, context_id, summary, content, type, "
            "tags, importance, delivery_mode, trigger_from, trigger_until, source_type, "
            "source_uri, trust_tier, created_at, updated_at, instruction_like, "
            "lexical_tokens, lexical_length, tainted) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s::tsvector, %s, %s)",
            (
                row.id, self.workspace_id, row.context_id, row.summary, row.content, row.type,
                Jsonb(row.tags), row.importance, row.delivery_mode, row.trigger_from,
                row.trigger_until, row.source_type, row.source_uri, row.trust_tier,
                row.created_at, row.created_at, row.instruction_like, tokens, length,
                row.tainted,
            ),
        )  # fmt: skip

    def purge_memory(self, memory_id: str) -> None:
        row = self._delete_memory(memory_id)
        if row is not None and row["embedding_status"] == "ready" and row["deleted_at"] is None:
            bump_generation(self.tx, self.workspace_id, row["context_id"])


class PostgresSleepLane(SleepStore):
    """Mixed into ``PostgresStore``: Sleep's log and its logged changes."""

    sql: Database

    @contextmanager
    def sleep_transaction(self, workspace_id: str) -> Iterator[_PostgresSleepTransaction]:
        with self.sql.write(workspace_id) as tx:
            lock_graph(tx, self.sql.dialect, workspace_id)
            yield _PostgresSleepTransaction(self.sql, tx, workspace_id)
