"""Dump and restore of a whole workspace (kioku export / import), on every backend.

A workspace is built on a SQLite file, dumped, restored into the backend under test and dumped
again: the rows must come back as they were, in the same order, searchable, and nowhere near
another workspace's.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from kioku.errors import ConflictError
from kioku.service.hebbian import declare_edges, strengthen_edges
from kioku.storage import open_store
from kioku.storage.base import Store
from kioku.storage.records import (
    ContextRow,
    EdgeRow,
    FeedbackRow,
    MemoryChanges,
    MemoryFilter,
    NewFeedback,
    StateRow,
)
from kioku.storage.sqlite import SQLiteStore
from kioku.storage.transfer import MemoryDump, TransferRow
from tests.storage.test_contract import T0, new_context, new_memory, vec

HOUR = timedelta(hours=1)
NOW = T0 + 24 * HOUR
LIVE = MemoryFilter()


@pytest.fixture
def source(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A SQLite file holding workspace ``alpha`` (every kind of row) and ``beta`` (a decoy)."""
    store = SQLiteStore(tmp_path / "source.db")
    try:
        _build(store)
        yield store
    finally:
        store.close()


def _build(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    notes = new_context(store, ws, "notes")
    slack = new_context(store, ws, "slack", tier="external")
    rows = [
        new_memory(notes.id, "tea", tokens="tea", importance=0.9, tags=["people", "飲み物"]),
        new_memory(notes.id, "coffee", tokens="coffee", created_at=T0 + HOUR),
        new_memory(notes.id, "rule", tokens="rule", delivery_mode="always"),
        new_memory(
            notes.id,
            "launch",
            tokens="launch",
            delivery_mode="on_trigger",
            trigger_from=T0 + HOUR,
            trigger_until=T0 + 2 * HOUR,
        ),
        new_memory(
            slack.id,
            "東京の会議",
            tokens="東京 会議",
            source_type="connector",
            trust_tier="external",
            instruction_like=True,
        ),
        new_memory(notes.id, "pending", tokens="pending"),
    ]
    store.insert_memories(ws, rows)
    store.store_embeddings(
        ws, notes.id, "m", [(r.id, vec(1, i, 0)) for i, r in enumerate(rows[:4])]
    )
    store.store_embeddings(ws, slack.id, "m", [(rows[4].id, vec(0, 1, 0))])
    store.update_memory(ws, rows[1].id, MemoryChanges(values={"source_uri": "x://1"}), T0 + HOUR)
    strengthen_edges(store, ws, notes.id, [(rows[0].id, rows[1].id)], 0.1, T0)
    strengthen_edges(store, ws, notes.id, [(rows[0].id, rows[1].id)], 0.1, T0 + HOUR)
    declare_edges(store, ws, notes.id, [(rows[3].id, rows[0].id)], 0.123456789, T0)
    declare_edges(store, ws, notes.id, [(rows[2].id, rows[1].id)], 1.0, T0)
    store.soft_delete_memory(ws, rows[2].id, T0 + 2 * HOUR)  # its edge is kept (and dumped)
    store.record_access(ws, rows[0].id, T0 + 3 * HOUR)
    for helpful in (True, False, True):
        event = NewFeedback(
            id=str(uuid.uuid4()), context_id=notes.id, memory_id=rows[0].id, helpful=helpful,
            query="tea?", note=None, actor="key:k1", channel="api", created_at=T0,
        )  # fmt: skip
        store.insert_feedback(ws, event)
    store.set_state(ws, notes.id, "b", '{"n": 1.50, "s": "ü"}', None, T0)
    store.set_state(ws, notes.id, "a", "[1, 2]", NOW + HOUR, T0)
    store.set_state(ws, slack.id, "gone", "1", NOW - HOUR, T0)  # expired at NOW: not dumped
    beta = store.ensure_workspace("beta").id
    decoy = new_context(store, beta, "notes")
    store.insert_memories(beta, [new_memory(decoy.id, "tea", tokens="tea")])


def _comparable(rows: list[TransferRow]) -> list[object]:
    """Rows without what a restore may change: the workspace id and the feedback sequence."""
    out: list[object] = []
    for row in rows:
        if isinstance(row, MemoryDump):
            vector = None if row.vector is None else row.vector.tobytes()
            out.append((dataclasses.replace(row.row, workspace_id=""), row.embedding_model, vector))
        elif isinstance(row, ContextRow):
            out.append(dataclasses.replace(row, workspace_id=""))
        elif isinstance(row, FeedbackRow):
            out.append(dataclasses.replace(row, workspace_id="", seq=0))
        elif isinstance(row, EdgeRow):
            out.append(dataclasses.replace(row, workspace_id=""))
        else:
            out.append(row)
    return out


def _dump(store: Store, name: str) -> list[TransferRow]:
    workspace = store.get_workspace_by_name(name)
    assert workspace is not None
    return list(store.dump_workspace(workspace.id, NOW))


def test_dump_holds_every_row_of_the_workspace_in_export_order(source: SQLiteStore) -> None:
    rows = _dump(source, "alpha")
    kinds = [type(row).__name__ for row in rows]
    assert kinds == (
        ["ContextRow"] * 2 + ["MemoryDump"] * 6 + ["EdgeRow"] * 3 + ["FeedbackRow"] * 3
        + ["StateRow"] * 2
    )  # fmt: skip
    edges = [row for row in rows if isinstance(row, EdgeRow)]
    assert [e.pair for e in edges] == sorted(e.pair for e in edges)
    assert sorted(e.weight for e in edges) == [0.123456789, 0.19, 1.0]
    contexts = [row for row in rows if isinstance(row, ContextRow)]
    assert [c.id for c in contexts] == sorted(c.id for c in contexts)
    memories = [row for row in rows if isinstance(row, MemoryDump)]
    keys = [(m.row.context_id, m.row.created_at, m.row.id) for m in memories]
    assert keys == sorted(keys)
    assert {m.row.summary for m in memories if m.row.deleted_at is not None} == {"rule"}
    assert all((m.vector is None) == (m.row.embedding_status != "ready") for m in memories)
    assert all(m.row.workspace_id != "beta" for m in memories)
    states = [row for row in rows if isinstance(row, StateRow)]
    assert [s.key for s in states] == ["a", "b"]
    assert all(s.key != "gone" for s in states)


def test_restore_gives_back_the_same_rows(source: SQLiteStore, store: Store) -> None:
    rows = _dump(source, "alpha")
    target = store.ensure_workspace("alpha-copy")
    store.restore_workspace(target.id, _with_tokens(rows))
    again = _dump(store, "alpha-copy")
    assert _comparable(again) == _comparable(rows)
    memories = [row for row in again if isinstance(row, MemoryDump)]
    assert all(m.row.workspace_id == target.id for m in memories)


def test_restored_rows_are_searchable(source: SQLiteStore, store: Store) -> None:
    rows = _dump(source, "alpha")
    target = store.ensure_workspace("alpha").id
    store.restore_workspace(target, _with_tokens(rows))
    notes = next(r for r in rows if isinstance(r, ContextRow) and r.name == "notes")
    tea = next(r for r in rows if isinstance(r, MemoryDump) and r.row.summary == "tea")
    hits = store.vector_search(target, [notes.id], vec(1, 0, 0), LIVE, 10)
    assert hits[0].memory_id == tea.row.id
    assert len(hits) == 3  # four vectors, one of them soft-deleted
    assert [h.memory_id for h in store.lexical_search(target, [notes.id], ["tea"], LIVE, 5)] == [
        tea.row.id
    ]
    signals = store.ranking_signals(target, [tea.row.id])[tea.row.id]
    assert (signals.helpful, signals.unhelpful, signals.access_count) == (2, 1, 1)
    feedback = store.list_feedback(target, notes.id, None, None, 10)
    assert [f.helpful for f in feedback] == [True, False, True]  # newest first, order kept


def test_restore_is_all_or_nothing(source: SQLiteStore, store: Store) -> None:
    rows = _dump(source, "alpha")
    target = store.ensure_workspace("alpha").id

    def failing() -> Iterator[TransferRow]:
        yield from _with_tokens(rows[:-1])
        raise RuntimeError("the file went away")

    with pytest.raises(RuntimeError):
        store.restore_workspace(target, failing())
    assert store.list_contexts(target) == []
    duplicated = [*_with_tokens(rows), *(r for r in rows if isinstance(r, FeedbackRow))]
    with pytest.raises(ConflictError):
        store.restore_workspace(target, duplicated)
    assert store.list_contexts(target) == []
    assert (
        store.existing_ids("memory", [r.row.id for r in rows if isinstance(r, MemoryDump)]) == set()
    )


def test_existing_ids_look_across_every_workspace(source: SQLiteStore, store: Store) -> None:
    rows = _dump(source, "alpha")
    store.restore_workspace(store.ensure_workspace("elsewhere").id, _with_tokens(rows))
    memory_ids = [r.row.id for r in rows if isinstance(r, MemoryDump)]
    assert store.existing_ids("memory", [*memory_ids, "nope"]) == set(memory_ids)
    context_ids = [r.id for r in rows if isinstance(r, ContextRow)]
    assert store.existing_ids("context", context_ids) == set(context_ids)
    feedback_ids = [r.id for r in rows if isinstance(r, FeedbackRow)]
    assert store.existing_ids("feedback", feedback_ids[:1]) == set(feedback_ids[:1])


def test_restore_leaves_other_workspaces_alone(source: SQLiteStore, store: Store) -> None:
    _build_other(store)
    before = _comparable(_dump(store, "other"))
    store.restore_workspace(
        store.ensure_workspace("alpha").id, _with_tokens(_dump(source, "alpha"))
    )
    assert _comparable(_dump(store, "other")) == before
    assert len(_dump(store, "alpha")) == 16


def test_sqlite_restore_drops_a_stale_vector_cache(source: SQLiteStore, tmp_path: Path) -> None:
    """A cached index for a context id (same id, same generation) must not outlive a restore."""
    rows = _dump(source, "alpha")
    notes = next(r for r in rows if isinstance(r, ContextRow) and r.name == "notes")
    target = SQLiteStore(tmp_path / "target.db")
    try:
        stale = [("ghost", vec(1, 0, 0))]
        target.index.get(notes.id, 1, lambda: (3, stale))  # in memory and on disk, generation 1
        ws = target.ensure_workspace("alpha").id
        target.restore_workspace(ws, _with_tokens(rows))
        hits = target.vector_search(ws, [notes.id], vec(1, 0, 0), LIVE, 10)
        assert "ghost" not in {h.memory_id for h in hits} and len(hits) == 3
    finally:
        target.close()
    reopened = open_store(f"sqlite:///{tmp_path / 'target.db'}")
    try:
        ws = reopened.get_workspace_by_name("alpha")
        assert ws is not None
        hits = reopened.vector_search(ws.id, [notes.id], vec(1, 0, 0), LIVE, 10)
        assert len(hits) == 3 and "ghost" not in {h.memory_id for h in hits}
    finally:
        reopened.close()


def test_vectors_survive_bit_for_bit(source: SQLiteStore, store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "odd")
    row = new_memory(ctx.id, "odd")
    store.insert_memories(ws, [row])
    awkward = np.array([1e-38, -3.4028235e38, 0.1, 1 / 3, -0.0], dtype=np.float32)
    store.store_embeddings(ws, ctx.id, "m", [(row.id, awkward)])
    dumped = next(r for r in _dump(store, "alpha") if isinstance(r, MemoryDump))
    assert dumped.vector is not None and dumped.vector.tobytes() == awkward.tobytes()


def _build_other(store: Store) -> None:
    ws = store.ensure_workspace("other").id
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, "tea", tokens="tea")
    store.insert_memories(ws, [row])
    store.store_embeddings(ws, ctx.id, "m", [(row.id, vec(1, 0, 0))])
    store.set_state(ws, ctx.id, "k", "1", None, T0)


def _with_tokens(rows: list[TransferRow]) -> list[TransferRow]:
    """The rows as an import hands them over: memories carry their (recomputed) tokens."""
    return [
        dataclasses.replace(r, lexical_tokens=" ".join(r.row.summary.lower().split()))
        if isinstance(r, MemoryDump)
        else r
        for r in rows
    ]


def test_a_dump_reads_one_snapshot_while_others_write(source: SQLiteStore, store: Store) -> None:
    """Rows written after the dump began are not in it, whichever kind is being read."""
    alpha = _dump(source, "alpha")
    target = store.ensure_workspace("alpha").id
    store.restore_workspace(target, alpha)
    rows = store.dump_workspace(target, NOW)
    first = next(rows)  # the dump is open, its snapshot taken
    assert isinstance(first, ContextRow)
    context_id = first.id
    late = new_memory(context_id, "written during the export", tokens="late")

    def write() -> None:  # another thread: another connection, as another request would be
        store.insert_memories(target, [late])
        store.set_state(target, context_id, "late", "1", None, NOW)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    dumped = [first, *rows]
    assert _comparable(dumped) == _comparable(alpha)
    assert store.get_memory(target, late.id) is not None  # it did land, after the snapshot
