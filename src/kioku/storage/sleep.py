"""Sleep's reversible log, computed once for every backend (SPEC §8).

A backend supplies a small transaction handle (``SleepTransaction``: lock a context, read and
write runs, append actions, read and change one memory, reach the graph's edge handle on the
same connection); the rules live here. Every change a run makes is written *in the same
transaction* as the action that logs it, with the exact values before and after, so a crash
between two actions leaves a store where every logged change happened and nothing else did,
and ``rollback_sleep_run`` can put each value back.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import numpy as np

from kioku.errors import ConflictError, NotFoundError
from kioku.storage.graph import EdgeTransaction, GraphWrites
from kioku.storage.records import EdgeChange, EdgeRow, MemoryRow, NewMemory

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
    status: str
    trigger: str
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
    return EdgeRow(
        workspace_id=workspace_id,
        context_id=data["context_id"],
        source_id=data["source_id"],
        target_id=data["target_id"],
        weight=float(data["weight"]),
        origin=data["origin"],
        trust_tier=data["trust_tier"],
        created_at=decode_time(data["created_at"]),
        updated_at=decode_time(data["updated_at"]),
    )


def dumps(value: Any) -> str:
    """Canonical JSON for the log (both backends store the same text)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class EdgeHandle(Protocol):
    """The graph's write primitives over the caller's open transaction."""

    def set_edges(self, workspace_id: str, rows: Sequence[EdgeRow]) -> list[EdgeChange]: ...

    def delete_edges(
        self, workspace_id: str, pairs: Sequence[tuple[str, str]]
    ) -> list[EdgeChange]: ...

    def move_edges(
        self, workspace_id: str, from_id: str, to_id: str, now: datetime
    ) -> list[EdgeChange]: ...


class _EdgesOn(GraphWrites):
    """The graph's write rules over a transaction that is already open (Sleep's own)."""

    def __init__(self, tx: EdgeTransaction) -> None:
        self._tx = tx

    def _edge_transaction(self, workspace_id: str) -> AbstractContextManager[EdgeTransaction]:
        return nullcontext(self._tx)


def edges_on(tx: EdgeTransaction) -> EdgeHandle:
    """``GraphWrites`` running inside the caller's transaction, so an edge change and the
    action logging it commit together."""
    return _EdgesOn(tx)


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

    def edges(self) -> EdgeHandle:
        """The association graph's writes, on this same transaction."""
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


class SleepWrites:
    """Mixed into each store: Sleep's run log and its logged, reversible changes."""

    def _sleep_transaction(self, workspace_id: str) -> AbstractContextManager[SleepTransaction]:
        raise NotImplementedError

    # ------------------------------------------------------------ runs

    def start_sleep_run(self, workspace_id: str, run: SleepRunRow, stale_before: datetime) -> None:
        """Insert a ``running`` run; ``ConflictError`` while another run of the context is in
        progress. A ``running`` run started before ``stale_before`` was abandoned by a process
        that stopped: it is marked ``failed`` first (its logged actions stay, and it can be
        rolled back)."""
        with self._sleep_transaction(workspace_id) as tx:
            if not tx.lock_context(run.context_id):
                raise NotFoundError("context not found", field="context_id")
            for other in tx.runs(run.context_id):
                if other.status != "running":
                    continue
                if other.started_at >= stale_before:
                    raise ConflictError(
                        f"Sleep run {other.id} is already in progress for this context",
                        field="context_id",
                    )
                tx.update_run(
                    other.id,
                    {"status": "failed", "finished_at": run.started_at,
                     "error": "abandoned: the process running it stopped"},
                )  # fmt: skip
            tx.insert_run(run)

    def finish_sleep_run(
        self,
        workspace_id: str,
        run_id: str,
        status: str,
        now: datetime,
        summary: dict[str, Any],
        error: str | None = None,
    ) -> None:
        """Close a run as ``done`` or ``failed`` with its summary."""
        with self._sleep_transaction(workspace_id) as tx:
            tx.update_run(
                run_id, {"status": status, "finished_at": now, "summary": summary, "error": error}
            )

    def get_sleep_run(self, workspace_id: str, run_id: str) -> SleepRunRow | None:
        with self._sleep_transaction(workspace_id) as tx:
            return tx.run(run_id)

    def list_sleep_runs(self, workspace_id: str, context_id: str) -> list[SleepRunRow]:
        """The context's runs, newest first."""
        with self._sleep_transaction(workspace_id) as tx:
            return list(reversed(tx.runs(context_id)))

    def list_sleep_actions(self, workspace_id: str, run_id: str) -> list[SleepActionRow]:
        with self._sleep_transaction(workspace_id) as tx:
            return tx.actions(run_id)

    def sleep_candidates(
        self, workspace_id: str, context_id: str, limit: int
    ) -> list[tuple[MemoryRow, np.ndarray]]:
        """What a run may consolidate: the newest ``limit`` live, unsuperseded memories of
        the context that have a vector, with it (the stored vector: no re-embedding)."""
        with self._sleep_transaction(workspace_id) as tx:
            return tx.candidates(context_id, limit)

    def last_sleep_values(
        self, workspace_id: str, context_id: str, kind: str
    ) -> dict[str, tuple[Any, Any]]:
        """Per target, (before, after) of the latest ``kind`` action of the context's runs
        that are not rolled back (e.g. what Sleep last did to each memory's importance)."""
        with self._sleep_transaction(workspace_id) as tx:
            return {
                action.target: (action.before, action.after)
                for action in tx.logged(context_id, kind)
            }

    # ------------------------------------------------------------ logged changes

    @contextmanager
    def _logging(
        self, workspace_id: str, run_id: str, phase: str, now: datetime
    ) -> Iterator[tuple[SleepTransaction, Callable[..., SleepActionRow]]]:
        """A transaction plus ``log(kind, target, before, after, note)`` appending to the run."""
        with self._sleep_transaction(workspace_id) as tx:
            run = tx.run(run_id)
            if run is None or run.status != "running":
                raise ConflictError(f"Sleep run {run_id} is not running", field="run_id")
            seq = len(tx.actions(run_id))

            def log(
                kind: str, target: str, before: Any, after: Any, note: str | None = None
            ) -> SleepActionRow:
                nonlocal seq
                seq += 1
                action = SleepActionRow(run_id, seq, phase, kind, target, before, after, note, now)
                tx.append(action)
                return action

            yield tx, log

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
        """Append an action that changes nothing undoable (a rejection, a sweep's count)."""
        with self._logging(workspace_id, run_id, phase, now) as (_, log):
            return log(kind, target, before, after, note)

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
        """Supersede ``loser_id`` by ``winner_id`` in one transaction: the loser gets
        ``superseded_by``, the winner the union of both tag lists, the loser's edges go to
        the winner. Nothing happens (``[]``) unless both are live, unsuperseded, unpinned
        memories of one context and one trust tier."""
        with self._logging(workspace_id, run_id, phase, now) as (tx, log):
            loser, winner = tx.memory(loser_id), tx.memory(winner_id)
            if loser is None or winner is None or loser_id == winner_id:
                return []
            if (
                loser.context_id != winner.context_id
                or loser.trust_tier != winner.trust_tier
                or any(
                    m.deleted_at is not None
                    or m.superseded_by is not None
                    or m.delivery_mode != "on_recall"
                    for m in (loser, winner)
                )
            ):
                return []
            done = []
            superseded = {"superseded_by": winner_id, "updated_at": encode_time(now)}
            tx.set_memory(loser, superseded, None)
            done.append(
                log("supersede", loser_id, memory_values(loser, superseded), superseded, note)
            )
            tags = winner.tags + [tag for tag in loser.tags if tag not in winner.tags]
            if tags != winner.tags:
                changed = {"tags": tags, "updated_at": encode_time(now)}
                tx.set_memory(winner, changed, tokens_of(winner.summary, winner.content, tags))
                done.append(log("tags", winner_id, memory_values(winner, changed), changed))
            for change in tx.edges().move_edges(workspace_id, loser_id, winner_id, now):
                done.append(_log_edge(log, change))
            return done

    def sleep_set_importance(
        self,
        workspace_id: str,
        run_id: str,
        phase: str,
        values: Sequence[tuple[str, float]],
        now: datetime,
        note: str | None = None,
    ) -> list[SleepActionRow]:
        """Set the importance of live memories, one action each, in one transaction."""
        with self._logging(workspace_id, run_id, phase, now) as (tx, log):
            done = []
            for memory_id, importance in values:
                row = tx.memory(memory_id)
                if row is None or row.deleted_at is not None or row.importance == importance:
                    continue
                changed = {"importance": importance, "updated_at": encode_time(now)}
                tx.set_memory(row, changed, None)
                done.append(
                    log("importance", memory_id, memory_values(row, changed), changed, note)
                )
            return done

    def sleep_write_edges(
        self,
        workspace_id: str,
        run_id: str,
        phase: str,
        rows: Sequence[EdgeRow],
        deletions: Sequence[tuple[str, str]],
        now: datetime,
        note: str | None = None,
    ) -> list[SleepActionRow]:
        """Write exact edge rows and delete pairs, each change logged, in one transaction."""
        with self._logging(workspace_id, run_id, phase, now) as (tx, log):
            changes = tx.edges().delete_edges(workspace_id, deletions) if deletions else []
            if rows:
                changes += tx.edges().set_edges(workspace_id, rows)
            return [_log_edge(log, change, note) for change in changes]

    def sleep_insert_memory(
        self,
        workspace_id: str,
        run_id: str,
        phase: str,
        row: NewMemory,
        edges: Sequence[EdgeRow],
        now: datetime,
        note: str | None = None,
    ) -> list[SleepActionRow]:
        """Insert a memory Sleep wrote (a summary) and its edges, logged, in one transaction."""
        with self._logging(workspace_id, run_id, phase, now) as (tx, log):
            tx.insert_memory(row)
            stored = tx.memory(row.id)
            assert stored is not None
            done = [log("create", row.id, None, memory_values(stored, MEMORY_FIELDS), note)]
            for change in tx.edges().set_edges(workspace_id, edges) if edges else []:
                done.append(_log_edge(log, change))
            return done

    # ------------------------------------------------------------ rollback

    def rollback_sleep_run(
        self,
        workspace_id: str,
        run_id: str,
        now: datetime,
        tokens_of: TokensOf,
        stale_before: datetime | None = None,
    ) -> SleepRollback:
        """Undo every logged change of a run, newest first, in one transaction.

        Only the context's latest run that is not rolled back may be undone (older runs'
        values may since have been changed by newer ones), and not while it is running
        (a ``running`` run started before ``stale_before`` was abandoned by a process that
        died: it may be undone).
        A memory changed since the run (its ``updated_at`` moved) refuses the whole rollback
        (``ConflictError``): undoing would overwrite someone's later edit. An edge changed
        since (learning goes on) is left as it is and reported in ``skipped``, as is a
        change to a memory purged since.
        """
        from kioku.storage.sleep_rollback import rollback_run  # it imports this module

        with self._sleep_transaction(workspace_id) as tx:
            return rollback_run(tx, run_id, now, tokens_of, stale_before)


def _log_edge(
    log: Callable[..., SleepActionRow], change: EdgeChange, note: str | None = None
) -> SleepActionRow:
    edge = change.after or change.before
    assert edge is not None
    return log(
        "edge", f"{edge.source_id}|{edge.target_id}",
        edge_json(change.before), edge_json(change.after), note,
    )  # fmt: skip
