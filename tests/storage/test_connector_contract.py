"""The connector primitives on both backends: connectors, external ids, idempotency records,
and purge, checked against the tables themselves (the rows are gone, not hidden)."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import Any

import psycopg
import pytest

from kioku.errors import ConflictError
from kioku.service.hebbian import strengthen_edges
from kioku.service.sleep.log import log_sleep_action, start_sleep_run
from kioku.storage.base import Store
from kioku.storage.postgres.connection import ALL_WORKSPACES
from kioku.storage.records import (
    ConnectorRow,
    MemoryChanges,
    NewFeedback,
    PurgeCounts,
    PurgeScope,
)
from kioku.storage.sleep import SleepRunRow
from kioku.storage.sqlite.lexical import lexical_tables
from tests.storage.test_contract import LIVE, T0, new_context, new_memory, vec

# Every table a memory leaves a trace in, and how to count one context's rows in it.
TRACES = {
    "memories": "SELECT count(*) FROM memories WHERE context_id = {c}",
    "edges": "SELECT count(*) FROM memory_edges WHERE context_id = {c}",
    "feedback": "SELECT count(*) FROM retrieval_feedback WHERE context_id = {c}",
    "state": "SELECT count(*) FROM agent_states WHERE context_id = {c}",
    "sleep_runs": "SELECT count(*) FROM sleep_runs WHERE context_id = {c}",
    "sleep_actions": "SELECT count(*) FROM sleep_actions a JOIN sleep_runs r "
    "ON r.id = a.run_id WHERE r.context_id = {c}",
    "ingest_requests": "SELECT count(*) FROM ingest_requests WHERE context_id = {c}",
}


def count(store: Store, query: str, context_id: str) -> int:
    """Rows a raw query finds, whatever any store method would show."""
    if "postgresql" in store.url:
        with store.db.transaction(ALL_WORKSPACES) as conn:  # type: ignore[attr-defined]
            row = conn.execute(query.format(c="%s"), (context_id,)).fetchone()
            return int(next(iter(row.values())))
    conn = store.db.connection()  # type: ignore[attr-defined]
    return int(conn.execute(query.format(c="?"), (context_id,)).fetchone()[0])


def connectors(store: Store, ws: str) -> list[ConnectorRow]:
    """The workspace's connectors, as an export reads them."""
    return [row for row in store.dump_workspace(ws, T0) if isinstance(row, ConnectorRow)]


def lexical_entries(store: Store, memory_ids: list[str]) -> int:
    """Index entries left of these memories: FTS5 rows whose memory is gone (SQLite keeps
    the index in tables of its own, one per workspace), or tsvectors of their rows
    (PostgreSQL)."""
    if "postgresql" in store.url:
        with store.db.transaction(ALL_WORKSPACES) as conn:  # type: ignore[attr-defined]
            row = conn.execute(
                "SELECT count(*) AS n FROM memories WHERE id = ANY(%s)", (memory_ids,)
            ).fetchone()
            return int(row["n"])
    conn = store.db.connection()  # type: ignore[attr-defined]
    return sum(
        int(
            conn.execute(
                f"SELECT count(*) FROM {table} WHERE rowid NOT IN (SELECT seq FROM memories)"
            ).fetchone()[0]
        )
        for table in lexical_tables(conn)
    )


def fill(store: Store, ws: str, name: str) -> dict[str, Any]:
    """A context with four memories (two from one Slack channel), vectors, edges, feedback,
    a state key, a Sleep run whose log names them, and an idempotency record."""
    ctx = new_context(store, ws, name, tier="external")
    uris = [f"slack://C1/{name}/1", f"slack://C1/{name}/2", f"docs/{name}.md", None]
    rows = [
        new_memory(ctx.id, f"{name} memory {i}", source_uri=uri, external_id=f"x{i}")
        for i, uri in enumerate(uris)
    ]
    store.insert_memories(ws, rows)
    ids = [r.id for r in rows]
    vectors = [vec(1, 0, 0), vec(0.9, 0.1, 0), vec(0, 1, 0), vec(0, 0, 1)]
    store.store_embeddings(ws, ctx.id, "fake", list(zip(ids, vectors, strict=True)))
    strengthen_edges(store, ws, ctx.id, [(ids[0], ids[1]), (ids[1], ids[2])], 0.5, T0)
    for i in (0, 2):
        store.insert_feedback(
            ws, NewFeedback(f"fb-{name}-{i}", ctx.id, ids[i], True, "q", None, "agent", "api", T0)
        )
    store.set_state(ws, ctx.id, "cursor", '"42"', None, T0)
    run = SleepRunRow(f"run-{name}", ws, ctx.id, "running", "manual", T0)
    start_sleep_run(store, ws, run, T0 - timedelta(hours=1))
    log_sleep_action(store, ws, run.id, "edges", "note", ids[0], T0, after={"text": "quoted"})
    log_sleep_action(store, ws, run.id, "edges", "note", f"{ids[1]}|{ids[2]}", T0)
    log_sleep_action(store, ws, run.id, "edges", "note", ids[3], T0)
    store.save_ingest_request(ws, ctx.id, "key-1", "hash", {"created": 1}, T0)
    return {"ctx": ctx, "ids": ids}


def test_purging_a_context_leaves_no_trace_and_keeps_the_context(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    a, b = fill(store, ws, "a"), fill(store, ws, "b")
    # Warm the vector index of both contexts so a stale cache would show.
    assert store.vector_search(ws, [a["ctx"].id], vec(1, 0, 0), LIVE, 10)
    counts = store.purge(ws, PurgeScope(context_id=a["ctx"].id))
    assert counts == PurgeCounts(
        memories=4, vectors=4, edges=2, feedback=2, state_keys=1, sleep_actions=3,
        ingest_requests=1,
    )  # fmt: skip
    for table, query in TRACES.items():
        assert count(store, query, a["ctx"].id) == 0, table
        assert count(store, query, b["ctx"].id) > 0, table  # the other context is intact
    assert lexical_entries(store, a["ids"]) == 0
    assert store.vector_search(ws, [a["ctx"].id], vec(1, 0, 0), LIVE, 10) == []
    assert store.lexical_search(ws, [a["ctx"].id], ["memory"], LIVE, 10) == []
    assert len(store.vector_search(ws, [b["ctx"].id], vec(1, 0, 0), LIVE, 10)) == 4
    assert store.get_context(ws, a["ctx"].id) is not None
    # Purging it again finds nothing to remove.
    assert store.purge(ws, PurgeScope(context_id=a["ctx"].id)) == PurgeCounts()


def test_purging_a_source_prefix_removes_just_those_memories(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    a, b = fill(store, ws, "a"), fill(store, ws, "b")
    assert store.vector_search(ws, [a["ctx"].id], vec(1, 0, 0), LIVE, 10)
    counts = store.purge(ws, PurgeScope(source_prefix="slack://C1/a/"))
    # Memories 0 and 1 of "a": both vectors, the edges 0-1 and 1-2, one feedback event, the
    # two log lines naming them; state and idempotency records are the context's, kept.
    assert counts == PurgeCounts(memories=2, vectors=2, edges=2, feedback=1, sleep_actions=2)
    left = {m.id for m in store.list_memories(ws, [a["ctx"].id], LIVE, None, 10)}
    assert left == set(a["ids"][2:])
    assert lexical_entries(store, a["ids"][:2]) == 0
    assert count(store, TRACES["edges"], a["ctx"].id) == 0
    assert count(store, TRACES["sleep_actions"], a["ctx"].id) == 1
    found = [
        hit.memory_id for hit in store.vector_search(ws, [a["ctx"].id], vec(1, 0, 0), LIVE, 10)
    ]
    assert set(found) == set(a["ids"][2:])
    assert count(store, TRACES["memories"], b["ctx"].id) == 4
    # A prefix means itself: "%" and "_" are not wildcards.
    assert store.purge(ws, PurgeScope(source_prefix="docs/%")) == PurgeCounts()
    assert store.purge(ws, PurgeScope(source_prefix="docs/_.md")) == PurgeCounts()
    both = store.purge(ws, PurgeScope(source_prefix="docs/"))
    assert both.memories == 2  # a's and b's Markdown memories
    other = store.ensure_workspace("beta").id
    fill(store, other, "c")
    # Another workspace's prefix match is out of reach.
    assert store.purge(ws, PurgeScope(source_prefix="slack://C1/c/")) == PurgeCounts()


def test_external_ids_are_unique_per_owner_among_a_contexts_live_memories(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "wiki")
    own = {"external_owner": "markdown"}
    first = new_memory(ctx.id, "page one", external_id="page-1", **own)
    store.insert_memories(ws, [first])
    with pytest.raises(ConflictError):
        store.insert_memories(ws, [new_memory(ctx.id, "again", external_id="page-1", **own)])
    assert set(store.external_memories(ws, ctx.id, "markdown")) == {"page-1"}
    found = store.external_memories(ws, ctx.id, "markdown", ["page-1", "nope"])
    assert found["page-1"].id == first.id and found["page-1"].external_owner == "markdown"
    # Another owner neither sees the id nor collides with it: it gets a memory of its own.
    assert store.external_memories(ws, ctx.id, "ingest:key:k1", ["page-1"]) == {}
    theirs = new_memory(ctx.id, "theirs", external_id="page-1", external_owner="ingest:key:k1")
    store.insert_memories(ws, [theirs])
    assert store.external_memories(ws, ctx.id, "ingest:key:k1")["page-1"].id == theirs.id
    assert store.external_memories(ws, ctx.id, "markdown")["page-1"].id == first.id
    store.soft_delete_memory(ws, first.id, T0)
    assert store.external_memories(ws, ctx.id, "markdown") == {}
    second = new_memory(ctx.id, "page one, back", external_id="page-1", **own)
    store.insert_memories(ws, [second])  # a forgotten id can come back as a new memory
    assert store.external_memories(ws, ctx.id, "markdown")["page-1"].id == second.id
    other = new_context(store, ws, "other")
    store.insert_memories(ws, [new_memory(other.id, "elsewhere", external_id="page-1", **own)])


def test_a_sync_lands_whole_or_not_at_all(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "wiki")
    keep, old = new_memory(ctx.id, "kept page", external_id="p1"), new_memory(ctx.id, "old")
    store.insert_memories(ws, [keep, old])
    store.store_embeddings(ws, ctx.id, "fake", [(keep.id, vec(1, 0, 0)), (old.id, vec(0, 1, 0))])
    assert len(store.vector_search(ws, [ctx.id], vec(1, 0, 0), LIVE, 10)) == 2
    fresh = new_memory(ctx.id, "new page", external_id="p2")
    text = MemoryChanges(values={"summary": "kept page, edited"}, text_changed=True)
    broken = MemoryChanges(values={"importance": 5.0})  # the database's CHECK refuses it
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.IntegrityError)):
        store.sync_memories(ws, ctx.id, [fresh], [(keep.id, text), (old.id, broken)], [], T0)
    listed = {m.id: m for m in store.list_memories(ws, [ctx.id], LIVE, None, 10)}
    assert set(listed) == {keep.id, old.id}  # the insert was rolled back with the rest
    assert listed[keep.id].summary == "kept page" and listed[keep.id].embedding_status == "ready"
    assert len(store.vector_search(ws, [ctx.id], vec(1, 0, 0), LIVE, 10)) == 2
    updated = store.sync_memories(ws, ctx.id, [fresh], [(keep.id, text)], [old.id], T0)
    assert [(row.id, row.summary, row.embedding_status) for row in updated] == [
        (keep.id, "kept page, edited", "pending")
    ]
    listed = {m.id: m for m in store.list_memories(ws, [ctx.id], LIVE, None, 10)}
    assert set(listed) == {keep.id, fresh.id}
    assert store.vector_search(ws, [ctx.id], vec(1, 0, 0), LIVE, 10) == []


def test_connectors_and_idempotency_records(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    made = store.upsert_connector(ws, "slack", "acme", {"team": "T1"}, T0)
    again = store.upsert_connector(ws, "slack", "acme", {"team": "T1"}, T0 + timedelta(days=1))
    assert again == made  # the same config is no change (a re-import writes nothing)
    changed = store.upsert_connector(ws, "slack", "acme", {"team": "T2"}, T0 + timedelta(days=2))
    assert (changed.id, changed.config, changed.updated_at) == (
        made.id, {"team": "T2"}, T0 + timedelta(days=2),
    )  # fmt: skip
    kept = store.upsert_connector(ws, "slack", "acme", None, T0 + timedelta(days=3))
    assert kept == changed  # None: find or create, never change
    assert store.upsert_connector(ws, "ingest", "key:1", None, T0).config == {}
    assert sorted(c.name for c in connectors(store, ws)) == ["acme", "key:1"]
    assert connectors(store, store.ensure_workspace("beta").id) == []
    ctx = new_context(store, ws, "slack-general", tier="external")
    store.bind_context(ws, ctx.id, made.id)
    bound = store.get_context(ws, ctx.id)
    assert bound is not None and bound.connector_id == made.id
    assert store.get_ingest_request(ws, ctx.id, "k") is None
    store.save_ingest_request(ws, ctx.id, "k", "h1", {"results": [1, "二"]}, T0)
    store.save_ingest_request(ws, ctx.id, "k", "h2", {"results": []}, T0)  # the first wins
    assert store.get_ingest_request(ws, ctx.id, "k") == ("h1", {"results": [1, "二"]})


def test_a_context_tier_change_keeps_tainted_memories_external(store: Store) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "support")
    derived = new_memory(ctx.id, "summary of tickets", source_type="sleep", tainted=True,
                         trust_tier="external")  # fmt: skip
    plain = new_memory(ctx.id, "a note", source_type="manual")
    store.insert_memories(ws, [derived, plain])
    for tier in ("trusted", "external", "trusted"):
        store.update_context(ws, ctx.id, {"trust_tier": tier}, T0)
        rows = {m.id: m for m in store.list_memories(ws, [ctx.id], LIVE, None, 10)}
        assert rows[derived.id].trust_tier == "external" and rows[derived.id].tainted
        assert rows[plain.id].trust_tier == tier and not rows[plain.id].tainted
