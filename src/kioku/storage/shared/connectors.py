"""Connectors: their rows, external-id lookups, idempotent ingestion, and purge (erasing every
trace of a context's contents or of a source)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from kioku.storage.records import (
    ConnectorRow,
    MemoryRow,
    PurgeCounts,
    PurgeScope,
)
from kioku.storage.shared.database import Database, Dialect, Transaction, record
from kioku.storage.shared.rows import MEMORY_COLUMNS, memory_from_row

_CONNECTOR_COLUMNS = "id, workspace_id, kind, name, config, created_at, updated_at"


def connector_from_row(d: Dialect, row: Any) -> ConnectorRow:
    return record(d, ConnectorRow, row, times=("created_at", "updated_at"), json=("config",))


class ConnectorStore(Protocol):
    """Connector primitives, written once for both backends (``sync_memories``, a connector's
    batch, is the memory area's). See tests/storage/test_connector_contract."""

    sql: Database

    def _vectors_changed(self, context_ids: Sequence[str]) -> None:
        """After a purge committed: a backend with vector caches drops these contexts'."""

    def upsert_connector(
        self,
        workspace_id: str,
        kind: str,
        name: str,
        config: dict[str, Any] | None,
        now: datetime,
    ) -> ConnectorRow:
        """The connector ``(kind, name)``, created if missing; ``config`` replaces the old one
        (``None``: keep it). A config equal to the stored one changes nothing, not even
        ``updated_at``."""
        d = self.sql.dialect
        # Only a new config counts as a change: a re-import leaves the row as it was.
        on_conflict = (
            "DO NOTHING"
            if config is None
            else "DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at "
            "WHERE connectors.config <> excluded.config"
        )
        with self.sql.write(workspace_id) as tx:
            tx.execute(
                "INSERT INTO connectors (id, workspace_id, kind, name, config, created_at, "
                "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                f"ON CONFLICT (workspace_id, kind, name) {on_conflict}",
                (
                    str(uuid.uuid4()), workspace_id, kind, name,
                    d.json(config or {}, sort_keys=True), d.time(now), d.time(now),
                ),
            )  # fmt: skip
            row = tx.execute(
                f"SELECT {_CONNECTOR_COLUMNS} FROM connectors "
                "WHERE workspace_id = %s AND kind = %s AND name = %s",
                (workspace_id, kind, name),
            ).fetchone()
        return connector_from_row(d, row)

    def bind_context(self, workspace_id: str, context_id: str, connector_id: str) -> None:
        """Bind a context to a connector (the service makes sure it is ``external``)."""
        with self.sql.write(workspace_id) as tx:
            tx.execute(
                "UPDATE contexts SET connector_id = %s WHERE workspace_id = %s AND id = %s",
                (connector_id, workspace_id, context_id),
            )

    def external_memories(
        self,
        workspace_id: str,
        context_id: str,
        owner: str,
        external_ids: Sequence[str] | None = None,
    ) -> dict[str, MemoryRow]:
        """Live memories of a context by external id (all that have one when ``None``), among
        those ``owner`` wrote: another channel's external ids are invisible here."""
        live = (
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = %s "
            "AND context_id = %s AND external_owner = %s AND deleted_at IS NULL "
            "AND external_id IS NOT NULL"
        )
        scope = (workspace_id, context_id, owner)
        with self.sql.read(workspace_id) as tx:
            if external_ids is None:
                rows = tx.execute(live, scope).fetchall()
            else:
                rows = []
                for chunk in self.sql.dialect.chunks(list(external_ids)):
                    among, params = self.sql.dialect.any("external_id", chunk)
                    rows += tx.execute(f"{live} AND {among}", (*scope, *params)).fetchall()
        return {row["external_id"]: memory_from_row(self.sql.dialect, row) for row in rows}

    def get_ingest_request(
        self, workspace_id: str, context_id: str, key: str
    ) -> tuple[str, dict[str, Any]] | None:
        """(request hash, response) stored for an idempotency key, if any."""
        with self.sql.read(workspace_id) as tx:
            row = tx.execute(
                "SELECT request_hash, response FROM ingest_requests "
                "WHERE workspace_id = %s AND context_id = %s AND idempotency_key = %s",
                (workspace_id, context_id, key),
            ).fetchone()
        if row is None:
            return None
        return row["request_hash"], self.sql.dialect.read_json(row["response"])

    def save_ingest_request(
        self,
        workspace_id: str,
        context_id: str,
        key: str,
        request_hash: str,
        response: dict[str, Any],
        now: datetime,
    ) -> None:
        """Remember the answer to an idempotency key (the first answer wins a race)."""
        d = self.sql.dialect
        with self.sql.write(workspace_id) as tx:
            tx.execute(
                "INSERT INTO ingest_requests (workspace_id, context_id, idempotency_key, "
                "request_hash, response, created_at) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (workspace_id, context_id, key, request_hash, d.json(response), d.time(now)),
            )

    def purge(self, workspace_id: str, scope: PurgeScope) -> PurgeCounts:
        """Erase, in one transaction, the memories in ``scope`` with their vectors, index
        entries, edges, feedback and the Sleep actions naming them; for a whole context also
        its state keys, its Sleep runs and its idempotency records. Vector caches of the
        contexts touched are invalidated. Returns what was removed."""
        d = self.sql.dialect
        where, params = ["workspace_id = %s"], [workspace_id]
        if scope.context_id is not None:
            where.append("context_id = %s")
            params.append(scope.context_id)
        if scope.source_prefix is not None:
            # Not LIKE: a prefix holding % or _ means itself.
            prefix, prefix_params = d.starts_with("source_uri", scope.source_prefix)
            where.append(prefix)
            params += prefix_params
        whole_context = scope.source_prefix is None and scope.context_id is not None
        with self.sql.write(workspace_id) as tx:
            found = tx.execute(
                "SELECT id, context_id, embedding IS NOT NULL AS has_vector FROM memories "
                f"WHERE {' AND '.join(where)}{d.for_update}",
                params,
            ).fetchall()
            ids = [row["id"] for row in found]
            contexts = sorted({row["context_id"] for row in found} | set(scope.named_contexts()))
            edges, feedback = _count_links(tx, d, workspace_id, ids)
            actions = _purge_sleep_actions(tx, d, workspace_id, contexts, set(ids), whole_context)
            # Edges and feedback go by cascade; SQLite's FTS rows by trigger.
            for chunk in d.chunks(ids):
                among, among_params = d.any("id", chunk)
                tx.execute(
                    f"DELETE FROM memories WHERE workspace_id = %s AND {among}",
                    (workspace_id, *among_params),
                )
            state = requests = 0
            if whole_context:
                state, requests = (
                    tx.execute(
                        f"DELETE FROM {table} WHERE workspace_id = %s AND context_id = %s",
                        (workspace_id, scope.context_id),
                    ).rowcount
                    for table in ("agent_states", "ingest_requests")
                )
            for chunk in d.chunks(contexts):
                among, among_params = d.any("id", chunk)
                tx.execute(
                    "UPDATE contexts SET vector_generation = vector_generation + 1 "
                    f"WHERE workspace_id = %s AND {among}",
                    (workspace_id, *among_params),
                )
        self._vectors_changed(contexts)  # rebuilt from the rows that are left
        return PurgeCounts(
            memories=len(ids),
            vectors=sum(1 for row in found if row["has_vector"]),
            edges=edges,
            feedback=feedback,
            state_keys=state,
            sleep_actions=actions,
            ingest_requests=requests,
        )


def _count_links(
    tx: Transaction, d: Dialect, workspace_id: str, ids: Sequence[str]
) -> tuple[int, int]:
    """How many edges and feedback events name one of ``ids`` (the purge's cascade)."""
    edges = feedback = 0
    for chunk in d.chunks(ids):
        sources, source_params = d.any("source_id", chunk)
        targets, target_params = d.any("target_id", chunk)
        edges += tx.execute(
            "SELECT count(*) AS n FROM memory_edges WHERE workspace_id = %s "
            f"AND ({sources} OR {targets})",
            (workspace_id, *source_params, *target_params),
        ).fetchone()["n"]
        memories, memory_params = d.any("memory_id", chunk)
        feedback += tx.execute(
            f"SELECT count(*) AS n FROM retrieval_feedback WHERE workspace_id = %s AND {memories}",
            (workspace_id, *memory_params),
        ).fetchone()["n"]
    return edges, feedback


def _purge_sleep_actions(
    tx: Transaction,
    d: Dialect,
    workspace_id: str,
    contexts: list[str],
    ids: set[str],
    whole_context: bool,
) -> int:
    """Delete the Sleep log lines naming a purged memory (their before/after hold its text);
    for a whole context, its runs (and their lines) altogether. Returns the lines removed."""
    doomed: list[tuple[str, int]] = []
    for chunk in d.chunks(contexts):
        among, params = d.any("r.context_id", chunk)
        rows = tx.execute(
            "SELECT a.run_id, a.seq, a.target FROM sleep_actions a JOIN sleep_runs r "
            "ON r.workspace_id = a.workspace_id AND r.id = a.run_id "
            f"WHERE r.workspace_id = %s AND {among}",
            (workspace_id, *params),
        ).fetchall()
        # An edge's target is "source|target": either end purged takes the line.
        doomed += [
            (row["run_id"], row["seq"])
            for row in rows
            if whole_context or ids.intersection(row["target"].split("|"))
        ]
    for chunk in d.chunks(doomed) if doomed else ():
        lines, params = d.pair_in("(run_id, seq)", chunk)
        tx.execute(
            f"DELETE FROM sleep_actions WHERE workspace_id = %s AND {lines}",
            (workspace_id, *params),
        )
    if whole_context:
        for chunk in d.chunks(contexts):
            among, params = d.any("context_id", chunk)
            tx.execute(
                f"DELETE FROM sleep_runs WHERE workspace_id = %s AND {among}",
                (workspace_id, *params),
            )
    return len(doomed)
