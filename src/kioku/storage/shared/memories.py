"""Memories: insert, read, change, forget, purge, list and count, written once.

What the engines keep differently is asked of the backend: where a memory's lexical tokens
live (a ``Lexicon``: PostgreSQL's ``tsvector`` columns, SQLite's FTS5 table per workspace)
and what a vector cache must drop when a memory's vector leaves the index
(``_vectors_removed``; only SQLite caches vectors).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from kioku.errors import ConflictError
from kioku.storage.records import MemoryChanges, MemoryFilter, MemoryRow, NewMemory
from kioku.storage.shared.database import (
    ALL_WORKSPACES,
    Database,
    Transaction,
    select_among,
)
from kioku.storage.shared.embeddings import bump_generation
from kioku.storage.shared.filters import memory_filter
from kioku.storage.shared.rows import (
    MEMORY_COLUMNS,
    encode_column,
    memory_from_row,
    memory_insert,
)

UPDATABLE = {
    "summary", "content", "type", "tags", "importance", "delivery_mode",
    "trigger_from", "trigger_until", "source_uri", "instruction_like", "thread",
    "thread_position",
}  # fmt: skip
"""The columns ``update_memory`` may change."""

UNJUDGED = "trust_tier = 'external' AND instruction_like IS NULL AND deleted_at IS NULL"
"""External memories with no tripwire verdict (index ``ix_memories_unjudged``, 0019)."""

_COUNT_LIVE = (
    "SELECT count(*) AS n FROM memories "
    "WHERE workspace_id = %s AND context_id = %s AND deleted_at IS NULL"
)

_FORGET = (
    "UPDATE memories SET deleted_at = %s, updated_at = %s "
    "WHERE workspace_id = %s AND id = %s AND deleted_at IS NULL "
    "RETURNING context_id, embedding_status"
)
_PURGE = (
    "DELETE FROM memories WHERE workspace_id = %s AND id = %s "
    "RETURNING context_id, embedding_status, deleted_at"
)

_TEXT_CHANGED = (
    "embedding = NULL",
    "embedding_model = NULL",
    "embedding_status = 'pending'",
    "embedding_lease_until = NULL",
)
"""A new text: the old vector goes, and any worker's claim on the memory with it."""


MemoryBatch = Sequence[tuple[Mapping[str, Any], str]]
"""Memories for a ``Lexicon`` to insert: each one's INSERT (column → parameter, as
``rows.memory_insert`` builds it; the same columns for all) and its tokens."""


class Lexicon(Protocol):
    """Where an engine keeps a memory's lexical tokens: in the memory's row (``sets``) or
    beside it (``update``), and how a batch of memories is inserted with them (``insert``);
    an engine overrides what it uses."""

    def insert(self, tx: Transaction, workspace_id: str, rows: MemoryBatch) -> None:
        """Insert memories of the workspace, each with its tokens. The batch lands in ``tx``:
        all of it or none."""
        ...

    def sets(self, tokens: str) -> tuple[list[str], list[Any]]:
        """``SET`` items (and their parameters) that store new tokens in the memory's row."""
        return [], []

    def update(self, tx: Transaction, workspace_id: str, seq: int, tokens: str) -> None:
        """Store new tokens of the memory ``seq`` outside its row."""


class MemoryStore(Protocol):
    """Memory primitives, written once for both backends."""

    sql: Database
    lexicon: Lexicon

    # The backend class defines both hooks, so they run whatever the order of its areas.
    def _vectors_removed(self, context_id: str, generation: int, memory_ids: Sequence[str]) -> None:
        """Inside the write: memories of a context (now at ``generation``) left its index."""

    def _vectors_changed(self, context_ids: Sequence[str]) -> None:
        """A vector cache of these contexts may be stale: drop it."""

    def insert_memories(self, workspace_id: str, rows: Sequence[NewMemory]) -> None:
        """Insert all rows in one transaction: all or nothing."""
        if not rows:
            return
        d = self.sql.dialect
        batch = [(memory_insert(d, workspace_id, row), row.lexical_tokens) for row in rows]
        try:
            with self.sql.write(workspace_id) as tx:
                self.lexicon.insert(tx, workspace_id, batch)
        except Exception as exc:
            if not d.unique_violation(exc, "ux_memories_external"):
                raise
            # Two writers raced to create the same external id: the loser writes nothing.
            raise ConflictError("a live memory with this external_id exists already") from exc

    def sync_memories(
        self,
        workspace_id: str,
        context_id: str,
        inserts: Sequence[NewMemory],
        updates: Sequence[tuple[str, MemoryChanges]],
        deletes: Sequence[str],
        now: datetime,
    ) -> list[MemoryRow]:
        """Insert, update and soft-delete memories of one context in one transaction: all or
        nothing (a connector's batch is never half-written). Returns the updated rows."""
        try:
            with self.sql.session(workspace_id):  # the calls below join this one transaction
                self.insert_memories(workspace_id, inserts)
                updated = [
                    row
                    for memory_id, change in updates
                    if (row := self.update_memory(workspace_id, memory_id, change, now))
                ]
                for memory_id in deletes:
                    self.soft_delete_memory(workspace_id, memory_id, now)
        except BaseException:
            self._vectors_changed([context_id])  # a cache may hold changes rolled back
            raise
        return updated

    def get_memory(self, workspace_id: str, memory_id: str) -> MemoryRow | None:
        return self.get_memories(workspace_id, [memory_id]).get(memory_id)

    def get_memories(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryRow]:
        d = self.sql.dialect
        # The ids name the rows: the planner uses the unique id index, not a scan.
        query = (
            f"SELECT {MEMORY_COLUMNS} FROM memories "
            f"WHERE {d.unindexed('workspace_id')} = %s AND {{among}}"
        )
        with self.sql.read(workspace_id) as tx:
            rows = select_among(tx, d, query, "id", memory_ids, before=(workspace_id,))
        return {row["id"]: memory_from_row(d, row) for row in rows}

    def update_memory(
        self, workspace_id: str, memory_id: str, changes: MemoryChanges, now: datetime
    ) -> MemoryRow | None:
        """Apply changes; a text change drops the vector and marks the memory ``pending``."""
        unknown = set(changes.values) - UPDATABLE
        if unknown:
            raise ValueError(f"not updatable memory columns: {sorted(unknown)}")
        d = self.sql.dialect
        with self.sql.write(workspace_id) as tx:
            row = tx.execute(
                "SELECT seq, context_id, embedding_status FROM memories "
                f"WHERE workspace_id = %s AND id = %s{d.for_no_key_update}",
                (workspace_id, memory_id),
            ).fetchone()
            if row is None:
                return None
            sets = [f"{column} = %s" for column in changes.values]
            params = [encode_column(d, c, v) for c, v in changes.values.items()]
            if changes.lexical_tokens is not None:
                token_sets, token_params = self.lexicon.sets(changes.lexical_tokens)
                sets += token_sets
                params += token_params
            if changes.text_changed:
                sets += _TEXT_CHANGED
            tx.execute(
                f"UPDATE memories SET {', '.join([*sets, 'updated_at = %s'])} "
                "WHERE workspace_id = %s AND id = %s",
                (*params, d.time(now), workspace_id, memory_id),
            )
            if changes.lexical_tokens is not None:
                self.lexicon.update(tx, workspace_id, row["seq"], changes.lexical_tokens)
            if changes.text_changed and row["embedding_status"] == "ready":
                self._removed(tx, workspace_id, row["context_id"], [memory_id])
        return self.get_memory(workspace_id, memory_id)

    def soft_delete_memory(self, workspace_id: str, memory_id: str, now: datetime) -> bool:
        stamp = self.sql.dialect.time(now)
        with self.sql.write(workspace_id) as tx:
            row = tx.execute(_FORGET, (stamp, stamp, workspace_id, memory_id)).fetchone()
            return self._left(tx, workspace_id, memory_id, row, live=True)

    def soft_delete_memories(
        self,
        workspace_id: str,
        context_id: str,
        versions: Mapping[str, datetime],
        now: datetime,
    ) -> bool:
        """Soft-delete every memory of ``versions`` (id → the ``updated_at`` it must still
        have) in one transaction, or none: ``False`` and nothing changed when one of them is
        gone, deleted, in another context or changed since."""
        d = self.sql.dialect
        ids = sorted(versions)
        with self.sql.write(workspace_id) as tx:
            # FOR UPDATE: a concurrent edit or forget of one of them waits for this
            # transaction, or this one sees its result and refuses.
            rows = select_among(
                tx,
                d,
                "SELECT id, updated_at, embedding_status FROM memories WHERE workspace_id = %s "
                f"AND context_id = %s AND deleted_at IS NULL AND {{among}}{d.for_update}",
                "id",
                ids,
                before=(workspace_id, context_id),
            )
            found = {row["id"]: row for row in rows}
            if len(found) != len(ids) or any(
                d.read_time(found[i]["updated_at"]) != versions[i] for i in ids
            ):
                return False
            stamp = d.time(now)
            select_among(
                tx,
                d,
                "UPDATE memories SET deleted_at = %s, updated_at = %s "
                "WHERE workspace_id = %s AND {among} RETURNING id",
                "id",
                ids,
                before=(stamp, stamp, workspace_id),
            )
            removals = [i for i in ids if found[i]["embedding_status"] == "ready"]
            if removals:
                self._removed(tx, workspace_id, context_id, removals)
        return True

    def purge_memory(self, workspace_id: str, memory_id: str) -> bool:
        with self.sql.write(workspace_id) as tx:
            row = tx.execute(_PURGE, (workspace_id, memory_id)).fetchone()
            live = row is not None and row["deleted_at"] is None
            return self._left(tx, workspace_id, memory_id, row, live=live)

    def record_access(self, workspace_id: str, memory_id: str, now: datetime) -> None:
        with self.sql.write(workspace_id) as tx:
            tx.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = %s "
                "WHERE workspace_id = %s AND id = %s",
                (self.sql.dialect.time(now), workspace_id, memory_id),
            )

    def list_memories(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[MemoryRow]:
        """Newest first, keyset-paginated on ``(created_at, id)``."""
        d = self.sql.dialect
        where, params = memory_filter(d, workspace_id, context_ids, flt)
        if after is not None:
            where += f" AND (m.created_at, m.id{d.binary}) < (%s, %s)"
            params += [d.time(after[0]), after[1]]
        query = (
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} "
            f"ORDER BY m.created_at DESC, m.id{d.binary} DESC LIMIT %s"
        )
        with self.sql.read(workspace_id) as tx:
            rows = tx.execute(query, (*params, limit)).fetchall()
        return [memory_from_row(d, row) for row in rows]

    def unjudged_external(self, limit: int) -> list[tuple[str, str, str, str]]:
        """Live external memories of any workspace that hold no injection-tripwire verdict
        (written while their context was trusted, or cleared by migration 0019), as
        (workspace id, id, summary, content); at most ``limit``."""
        with self.sql.read(ALL_WORKSPACES) as tx:
            rows = tx.execute(
                "SELECT workspace_id, id, summary, content FROM memories "
                f"WHERE {UNJUDGED} LIMIT %s",
                (limit,),
            ).fetchall()
        return [(r["workspace_id"], r["id"], r["summary"], r["content"]) for r in rows]

    def store_verdicts(self, verdicts: Sequence[tuple[str, str, bool]]) -> int:
        """Store tripwire verdicts, (workspace id, id, verdict) each, on rows still without
        one (an edit meanwhile stored its own); returns how many were stored."""
        stored = 0
        with self.sql.write(ALL_WORKSPACES) as tx:
            for workspace_id, memory_id, verdict in verdicts:
                stored += tx.execute(
                    "UPDATE memories SET instruction_like = %s "
                    "WHERE workspace_id = %s AND id = %s AND instruction_like IS NULL",
                    (verdict, workspace_id, memory_id),
                ).rowcount
        return stored

    def count_memories(self, workspace_id: str, context_id: str) -> int:
        with self.sql.read(workspace_id) as tx:
            return tx.execute(_COUNT_LIVE, (workspace_id, context_id)).fetchone()["n"]

    def _left(
        self, tx: Transaction, workspace_id: str, memory_id: str, row: Any, *, live: bool
    ) -> bool:
        """A statement took the memory out (``row``: its ``context_id`` and
        ``embedding_status``, ``None`` if nothing matched); a live one leaves the index."""
        if row is None:
            return False
        if live and row["embedding_status"] == "ready":
            self._removed(tx, workspace_id, row["context_id"], [memory_id])
        return True

    def _removed(
        self, tx: Transaction, workspace_id: str, context_id: str, memory_ids: Sequence[str]
    ) -> None:
        """Ready vectors of a context left the index: a new generation, the caches told."""
        generation = bump_generation(tx, workspace_id, context_id)
        self._vectors_removed(context_id, generation, memory_ids)
