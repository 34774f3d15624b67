"""Rollback of a Sleep run: every logged change put back, newest first, in one transaction.

The rule is written once, here, over the storage's Sleep transaction handle
(``Store.sleep_transaction``); both backends supply the handle.
"""

from __future__ import annotations

from datetime import datetime

from kioku.errors import ConflictError, NotFoundError
from kioku.service.graph_writes import delete_edges, set_edges, within
from kioku.storage.sleep import SleepStore
from kioku.storage.sleep_log import (
    SleepActionRow,
    SleepRollback,
    SleepTransaction,
    TokensOf,
    edge_from_json,
    edge_json,
    memory_values,
)


def rollback_sleep_run(
    store: SleepStore,
    workspace_id: str,
    run_id: str,
    now: datetime,
    tokens_of: TokensOf,
    stale_before: datetime | None = None,
) -> SleepRollback:
    """Undo every logged change of a run, newest first, in one transaction.

    Only the context's latest run that is not rolled back may be undone (older runs' values
    may since have been changed by newer ones), and not while it is running (a ``running``
    run started before ``stale_before`` was abandoned by a process that died: it may be
    undone). A memory changed since the run (its ``updated_at`` moved) refuses the whole
    rollback (``ConflictError``): undoing would overwrite someone's later edit. An edge
    changed since (learning goes on) is left as it is and reported in ``skipped``, as is a
    change to a memory purged since. ``tokens_of`` re-tokenizes a memory whose tags come back.
    """
    with store.sleep_transaction(workspace_id) as tx:
        return _rollback(tx, run_id, now, tokens_of, stale_before)


def _rollback(
    tx: SleepTransaction,
    run_id: str,
    now: datetime,
    tokens_of: TokensOf,
    stale_before: datetime | None,
) -> SleepRollback:
    run = tx.run(run_id)
    if run is None:
        raise NotFoundError(f"Sleep run {run_id!r} not found", field="run_id")
    tx.lock_context(run.context_id)
    if run.status == "rolled_back":
        raise ConflictError(f"Sleep run {run_id} is already rolled back", field="run_id")
    abandoned = stale_before is not None and run.started_at < stale_before
    if run.status == "running" and not abandoned:
        raise ConflictError(f"Sleep run {run_id} is still running", field="run_id")
    later = [
        r for r in tx.runs(run.context_id)
        if r.status != "rolled_back" and (r.started_at, r.id) > (run.started_at, run.id)
    ]  # fmt: skip
    if later:
        raise ConflictError(
            f"Sleep run {later[-1].id} came after this one: roll it back first",
            field="run_id",
        )
    undone, skipped = 0, []
    for action in reversed(tx.actions(run_id)):
        reason = _undo(tx, action, tokens_of)
        if reason is None:
            undone += int(action.kind in _UNDOABLE)
        else:
            skipped.append((action.seq, reason))
    changes: dict = {"status": "rolled_back", "rolled_back_at": now}
    if run.status == "running":  # abandoned: say so, as the next run would have
        changes |= {"finished_at": now, "error": "abandoned: the process running it stopped"}
    tx.update_run(run_id, changes)
    rolled = tx.run(run_id)
    assert rolled is not None
    return SleepRollback(rolled, undone, sorted(skipped))


_UNDOABLE = {"supersede", "tags", "importance", "create", "edge"}


def _undo(tx: SleepTransaction, action: SleepActionRow, tokens_of: TokensOf) -> str | None:
    """Put one action's ``before`` back; the reason it was left alone, or ``None``."""
    if action.kind in ("supersede", "tags", "importance"):
        row = tx.memory(action.target)
        if row is None:
            return "memory purged since"
        if memory_values(row, list(action.after)) != action.after:
            raise ConflictError(
                f"memory {action.target} changed after Sleep run {action.run_id}; "
                "nothing was rolled back",
                field="run_id",
            )
        tokens = (
            tokens_of(row.summary, row.content, action.before["tags"])
            if "tags" in action.before
            else None
        )
        tx.set_memory(row, dict(action.before), tokens)
        return None
    if action.kind == "create":
        row = tx.memory(action.target)
        if row is None:
            return "memory purged since"
        if memory_values(row, list(action.after)) != action.after:
            raise ConflictError(
                f"memory {action.target} (written by Sleep) changed since; nothing was rolled back",
                field="run_id",
            )
        tx.purge_memory(action.target)
        return None
    if action.kind == "edge":
        return _undo_edge(tx, action)
    return "nothing to undo"


def _undo_edge(tx: SleepTransaction, action: SleepActionRow) -> str | None:
    source_id, target_id = action.target.split("|")
    graph = tx.edges()
    ws = tx.workspace_id
    if edge_json(tx.edge(source_id, target_id)) != action.after:
        return "edge changed since"
    if action.before is None:
        delete_edges(within(graph), ws, [(source_id, target_id)])
    elif not set_edges(within(graph), ws, [edge_from_json(ws, action.before)]):
        return "edge end purged since"
    return None
