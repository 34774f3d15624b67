"""Sleep's reversible log on every backend: runs, logged changes, exact rollback, crash safety."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta

import pytest

from kioku.errors import ConflictError, NotFoundError
from kioku.service.hebbian import declare_edges, strengthen_edges
from kioku.service.sleep.log import (
    sleep_insert_memory,
    sleep_merge,
    sleep_set_importance,
    sleep_write_edges,
    start_sleep_run,
)
from kioku.service.sleep.rollback import rollback_sleep_run
from kioku.storage.base import Store
from kioku.storage.records import MemoryChanges, MemoryFilter
from kioku.storage.sleep import SleepRunRow
from tests.storage.test_contract import T0, new_context, new_memory, vec

NOW = T0 + timedelta(days=3)


def tokens_of(summary: str, content: str, tags: list[str]) -> str:
    return " ".join([summary.lower(), content.lower(), *tags]).strip()


def start(store: Store, ws: str, ctx_id: str, at=NOW) -> str:
    run_id = str(uuid.uuid4())
    start_sleep_run(
        store, ws, SleepRunRow(run_id, ws, ctx_id, "running", "manual", at), at - timedelta(hours=1)
    )
    return run_id


def snapshot(store: Store, ws: str, ctx_id: str) -> tuple[object, ...]:
    """Every memory row (deleted and superseded too) and every edge of the context."""
    rows = store.list_memories(
        ws, [ctx_id], MemoryFilter(include_deleted=True, include_superseded=True), None, 1000
    )
    return tuple(rows), tuple(store.list_edges(ws, ctx_id))


@pytest.fixture
def world(store: Store):
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "notes")
    rows = [
        new_memory(ctx.id, "alice drinks tea", tags=["people"], created_at=T0),
        new_memory(ctx.id, "alice likes tea", tags=["drinks"], created_at=T0 + timedelta(hours=1)),
        new_memory(ctx.id, "bob rides a bike", created_at=T0 + timedelta(hours=2)),
        new_memory(ctx.id, "carol writes code", created_at=T0 + timedelta(hours=3)),
    ]
    store.insert_memories(ws, rows)
    vectors = [vec(1, 0, 0), vec(0.99, 0.05, 0), vec(0, 1, 0), vec(0, 0, 1)]
    store.store_embeddings(ws, ctx.id, "m", [(r.id, v) for r, v in zip(rows, vectors, strict=True)])
    a, b, c, d = (r.id for r in rows)
    declare_edges(store, ws, ctx.id, [(a, c), (a, d), (b, d)], 0.4, T0)
    return ws, ctx.id, (a, b, c, d)


def test_runs_start_conflict_abandon_finish_and_list(store: Store, world) -> None:
    ws, ctx_id, _ = world
    first = start(store, ws, ctx_id)
    with pytest.raises(ConflictError):
        start(store, ws, ctx_id, NOW + timedelta(minutes=5))
    # An hour later the first is deemed abandoned (its process died): failed, not in the way.
    second = start(store, ws, ctx_id, NOW + timedelta(hours=2))
    abandoned = store.get_sleep_run(ws, first)
    assert abandoned is not None and abandoned.status == "failed"
    assert "abandoned" in (abandoned.error or "")
    store.finish_sleep_run(ws, second, "done", NOW + timedelta(hours=3), {"merged": 0})
    done = store.get_sleep_run(ws, second)
    assert done is not None and done.status == "done" and done.summary == {"merged": 0}
    assert [r.id for r in store.list_sleep_runs(ws, ctx_id)] == [second, first]
    other = store.ensure_workspace("beta").id
    assert store.get_sleep_run(other, second) is None
    assert store.list_sleep_runs(other, ctx_id) == []


def test_merge_is_logged_exactly_and_rolled_back_exactly(store: Store, world) -> None:
    ws, ctx_id, (a, b, c, d) = world
    before = snapshot(store, ws, ctx_id)
    run = start(store, ws, ctx_id)
    actions = sleep_merge(store, ws, run, "merge", a, b, NOW, tokens_of, note="cosine 0.99")
    kinds = [action.kind for action in actions]
    assert kinds[:2] == ["supersede", "tags"] and set(kinds[2:]) == {"edge"}
    assert [action.seq for action in actions] == list(range(1, len(actions) + 1))
    loser, winner = store.get_memory(ws, a), store.get_memory(ws, b)
    assert loser is not None and winner is not None
    assert loser.superseded_by == b and loser.deleted_at is None and loser.updated_at == NOW
    assert winner.tags == ["drinks", "people"]
    assert actions[0].before == {"superseded_by": None, "updated_at": "2026-01-01T00:00:00.000000Z"}
    # a's edges to c and d now hang on b (b-d existed: the larger weight stays).
    pairs = {(e.source_id, e.target_id) for e in store.list_edges(ws, ctx_id)}
    assert pairs == {tuple(sorted((b, c))), tuple(sorted((b, d)))}
    # The loser is out of both search legs by default, and back with include_superseded.
    assert a not in {h.memory_id for h in store.vector_search(ws, [ctx_id], vec(1, 0, 0), LIVE, 10)}
    assert a not in {h.memory_id for h in store.lexical_search(ws, [ctx_id], ["alice"], LIVE, 10)}
    wide = MemoryFilter(include_superseded=True)
    assert a in {h.memory_id for h in store.vector_search(ws, [ctx_id], vec(1, 0, 0), wide, 10)}
    assert a in {h.memory_id for h in store.lexical_search(ws, [ctx_id], ["alice"], wide, 10)}
    assert store.list_sleep_actions(ws, run) == actions
    store.finish_sleep_run(ws, run, "done", NOW, {})

    outcome = rollback_sleep_run(store, ws, run, NOW + timedelta(hours=1), tokens_of)
    assert outcome.undone == len(actions) and outcome.skipped == []
    assert outcome.run.status == "rolled_back" and outcome.run.rolled_back_at is not None
    assert snapshot(store, ws, ctx_id) == before
    hits = store.vector_search(ws, [ctx_id], vec(1, 0, 0), LIVE, 10)
    assert hits[0].memory_id == a
    assert b not in {h.memory_id for h in store.lexical_search(ws, [ctx_id], ["people"], LIVE, 9)}
    with pytest.raises(ConflictError):
        rollback_sleep_run(store, ws, run, NOW, tokens_of)


LIVE = MemoryFilter()


def test_a_failure_inside_an_action_leaves_neither_change_nor_log(store: Store, world) -> None:
    ws, ctx_id, (a, b, c, _) = world
    before = snapshot(store, ws, ctx_id)
    run = start(store, ws, ctx_id)
    sleep_set_importance(store, ws, run, "importance", [(c, 0.7)], NOW)
    after_first = snapshot(store, ws, ctx_id)
    # The action row is written after the change, in the same transaction: a failure there
    # (here a NULL phase the database refuses) must take the change down with it.
    with pytest.raises(Exception):  # noqa: B017 - each backend raises its own driver error
        sleep_merge(store, ws, run, None, a, b, NOW, tokens_of)  # type: ignore[arg-type]
    assert snapshot(store, ws, ctx_id) == after_first
    assert [x.kind for x in store.list_sleep_actions(ws, run)] == ["importance"]
    # The process "dies" here: the run stays running until it is found abandoned.
    later = NOW + timedelta(hours=2)
    start(store, ws, ctx_id, later)
    crashed = store.get_sleep_run(ws, run)
    assert crashed is not None and crashed.status == "failed"
    # Only the latest run may be rolled back: the new one first, then the crashed one.
    newest = store.list_sleep_runs(ws, ctx_id)[0].id
    with pytest.raises(ConflictError, match="roll it back first"):
        rollback_sleep_run(store, ws, run, later, tokens_of)
    with pytest.raises(ConflictError, match="still running"):
        rollback_sleep_run(store, ws, newest, later, tokens_of)
    store.finish_sleep_run(ws, newest, "done", later, {})
    rollback_sleep_run(store, ws, newest, later, tokens_of)
    rollback_sleep_run(store, ws, run, later, tokens_of)
    assert snapshot(store, ws, ctx_id) == before


def test_rollback_refuses_when_a_memory_changed_since(store: Store, world) -> None:
    ws, ctx_id, (_, _, c, d) = world
    run = start(store, ws, ctx_id)
    sleep_set_importance(store, ws, run, "importance", [(c, 0.9), (d, 0.1)], NOW)
    store.finish_sleep_run(ws, run, "done", NOW, {})
    store.update_memory(ws, d, MemoryChanges(values={"type": "fact"}), NOW + timedelta(hours=1))
    with pytest.raises(ConflictError, match=d):
        rollback_sleep_run(store, ws, run, NOW + timedelta(hours=2), tokens_of)
    # Nothing was undone, not even c (the refusal is all or nothing).
    row = store.get_memory(ws, c)
    assert row is not None and row.importance == 0.9
    fresh = store.get_sleep_run(ws, run)
    assert fresh is not None and fresh.status == "done"


def test_edge_changes_roll_back_unless_learning_moved_them(store: Store, world) -> None:
    ws, ctx_id, (a, _, c, d) = world
    before = snapshot(store, ws, ctx_id)
    edges = {(e.source_id, e.target_id): e for e in store.list_edges(ws, ctx_id)}
    ac, ad = tuple(sorted((a, c))), tuple(sorted((a, d)))
    run = start(store, ws, ctx_id)
    decayed = replace(edges[ac], weight=0.2, updated_at=NOW)
    actions = sleep_write_edges(store, ws, run, "edges", [decayed], [ad], NOW)
    assert {x.kind for x in actions} == {"edge"} and len(actions) == 2
    store.finish_sleep_run(ws, run, "done", NOW, {})
    rolled = rollback_sleep_run(store, ws, run, NOW, tokens_of)
    assert rolled.skipped == [] and snapshot(store, ws, ctx_id) == before

    run = start(store, ws, ctx_id, NOW + timedelta(hours=1))
    sleep_write_edges(store, ws, run, "edges", [decayed], [], NOW)
    store.finish_sleep_run(ws, run, "done", NOW, {})
    strengthen_edges(store, ws, ctx_id, [ac], 0.5, NOW + timedelta(minutes=1))  # a recall
    rolled = rollback_sleep_run(store, ws, run, NOW, tokens_of)
    assert rolled.undone == 0 and rolled.skipped == [(1, "edge changed since")]


def test_a_memory_written_by_sleep_is_purged_by_rollback(store: Store, world) -> None:
    ws, ctx_id, (a, b, _, _) = world
    before = snapshot(store, ws, ctx_id)
    run = start(store, ws, ctx_id)
    summary = new_memory(ctx_id, "tea people", source_type="sleep", created_at=NOW)
    edge = store.list_edges(ws, ctx_id)[0]
    links = [
        replace(edge, source_id=min(summary.id, x), target_id=max(summary.id, x),
                weight=0.5, origin="sleep", created_at=NOW, updated_at=NOW)
        for x in (a, b)
    ]  # fmt: skip
    actions = sleep_insert_memory(store, ws, run, "summaries", summary, links, NOW)
    assert [x.kind for x in actions] == ["create", "edge", "edge"]
    row = store.get_memory(ws, summary.id)
    assert row is not None and row.source_type == "sleep"
    store.finish_sleep_run(ws, run, "done", NOW, {})
    rollback_sleep_run(store, ws, run, NOW, tokens_of)
    assert store.get_memory(ws, summary.id) is None
    assert snapshot(store, ws, ctx_id) == before


def test_another_workspace_cannot_read_or_roll_back_a_run(store: Store, world) -> None:
    ws, ctx_id, (a, b, c, d) = world
    run = start(store, ws, ctx_id)
    sleep_merge(store, ws, run, "merge", a, b, NOW, tokens_of)
    store.finish_sleep_run(ws, run, "done", NOW, {})
    other = store.ensure_workspace("beta").id
    assert store.list_sleep_actions(other, run) == []
    with pytest.raises(NotFoundError):
        rollback_sleep_run(store, other, run, NOW, tokens_of)
    # ...and cannot merge its memories from a run of its own.
    other_ctx = new_context(store, other, "mine")
    mine = start(store, other, other_ctx.id)
    assert sleep_merge(store, other, mine, "merge", c, d, NOW, tokens_of) == []
    assert store.get_memory(ws, c).superseded_by is None  # type: ignore[union-attr]
