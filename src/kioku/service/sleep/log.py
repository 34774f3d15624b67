"""Sleep's reversible log, written once for both backends: the rules that write it over a
store's ``sleep_transaction`` (``storage/sleep_log.py``). Every change a run makes is written
in the same transaction as the action that logs it, with the exact values before and after;
rollback (``rollback.py``) puts each value back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from kioku.errors import ConflictError, NotFoundError
from kioku.service.graph_writes import delete_edges, move_edges, set_edges, within
from kioku.service.sleep.rules import stated_text
from kioku.storage.records import EdgeChange, EdgeRow, NewMemory
from kioku.storage.sleep import SleepStore
from kioku.storage.sleep_log import (
    MEMORY_FIELDS,
    SleepActionRow,
    SleepRunRow,
    SleepTransaction,
    TokensOf,
    edge_json,
    encode_time,
    memory_values,
)


def start_sleep_run(
    store: SleepStore, workspace_id: str, run: SleepRunRow, stale_before: datetime
) -> None:
    """Insert a ``running`` run; ``ConflictError`` while another run of the context is in
    progress. A ``running`` run started before ``stale_before`` was abandoned by a process
    that stopped: it is marked ``failed`` first (its logged actions stay, and it can be
    rolled back)."""
    with store.sleep_transaction(workspace_id) as tx:
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


@contextmanager
def _logging(
    store: SleepStore, workspace_id: str, run_id: str, phase: str, now: datetime
) -> Iterator[tuple[SleepTransaction, Callable[..., SleepActionRow]]]:
    """A transaction plus ``log(kind, target, before, after, note)`` appending to the run."""
    with store.sleep_transaction(workspace_id) as tx:
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
    store: SleepStore,
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
    with _logging(store, workspace_id, run_id, phase, now) as (_, log):
        return log(kind, target, before, after, note)


def sleep_merge(
    store: SleepStore,
    workspace_id: str,
    run_id: str,
    phase: str,
    loser_id: str,
    winner_id: str,
    now: datetime,
    tokens_of: TokensOf,
    note: str | None = None,
    compared: Mapping[str, str] | None = None,
) -> list[SleepActionRow]:
    """Supersede ``loser_id`` by ``winner_id`` in one transaction: the loser gets
    ``superseded_by``, the winner the union of both tag lists, the loser's edges go to
    the winner. Nothing happens (``[]``) unless both are live, unsuperseded, unpinned
    memories of one context and one trust tier, and (given ``compared``, the text of each
    when the merge guard compared them) neither text was edited since."""
    with _logging(store, workspace_id, run_id, phase, now) as (tx, log):
        loser, winner = tx.memory(loser_id), tx.memory(winner_id)
        if loser is None or winner is None or loser_id == winner_id:
            return []
        if compared is not None and any(
            compared.get(m.id) != stated_text(m) for m in (loser, winner)
        ):
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
        done.append(log("supersede", loser_id, memory_values(loser, superseded), superseded, note))
        tags = winner.tags + [tag for tag in loser.tags if tag not in winner.tags]
        if tags != winner.tags:
            changed = {"tags": tags, "updated_at": encode_time(now)}
            tx.set_memory(winner, changed, tokens_of(winner.summary, winner.content, tags))
            done.append(log("tags", winner_id, memory_values(winner, changed), changed))
        for change in move_edges(within(tx.edges()), workspace_id, loser_id, winner_id, now):
            done.append(_log_edge(log, change))
        return done


def sleep_set_importance(
    store: SleepStore,
    workspace_id: str,
    run_id: str,
    phase: str,
    values: Sequence[tuple[str, float]],
    now: datetime,
    note: str | None = None,
) -> list[SleepActionRow]:
    """Set the importance of live memories, one action each, in one transaction."""
    with _logging(store, workspace_id, run_id, phase, now) as (tx, log):
        done = []
        for memory_id, importance in values:
            row = tx.memory(memory_id)
            if row is None or row.deleted_at is not None or row.importance == importance:
                continue
            changed = {"importance": importance, "updated_at": encode_time(now)}
            tx.set_memory(row, changed, None)
            done.append(log("importance", memory_id, memory_values(row, changed), changed, note))
        return done


def sleep_write_edges(
    store: SleepStore,
    workspace_id: str,
    run_id: str,
    phase: str,
    rows: Sequence[EdgeRow],
    deletions: Sequence[tuple[str, str]],
    now: datetime,
    note: str | None = None,
) -> list[SleepActionRow]:
    """Write exact edge rows and delete pairs, each change logged, in one transaction."""
    with _logging(store, workspace_id, run_id, phase, now) as (tx, log):
        changes = delete_edges(within(tx.edges()), workspace_id, deletions) if deletions else []
        if rows:
            changes += set_edges(within(tx.edges()), workspace_id, rows)
        return [_log_edge(log, change, note) for change in changes]


def sleep_insert_memory(
    store: SleepStore,
    workspace_id: str,
    run_id: str,
    phase: str,
    row: NewMemory,
    edges: Sequence[EdgeRow],
    now: datetime,
    note: str | None = None,
) -> list[SleepActionRow]:
    """Insert a memory Sleep wrote (a summary) and its edges, logged, in one transaction."""
    with _logging(store, workspace_id, run_id, phase, now) as (tx, log):
        tx.insert_memory(row)
        stored = tx.memory(row.id)
        assert stored is not None
        done = [log("create", row.id, None, memory_values(stored, MEMORY_FIELDS), note)]
        for change in set_edges(within(tx.edges()), workspace_id, edges) if edges else []:
            done.append(_log_edge(log, change))
        return done


def _log_edge(
    log: Callable[..., SleepActionRow], change: EdgeChange, note: str | None = None
) -> SleepActionRow:
    edge = change.after or change.before
    assert edge is not None
    return log(
        "edge", f"{edge.source_id}|{edge.target_id}",
        edge_json(change.before), edge_json(change.after), note,
    )  # fmt: skip
