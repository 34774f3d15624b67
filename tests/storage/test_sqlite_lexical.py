"""SQLite's lexical index is one FTS5 table per workspace: checked against the tables.

What another tenant stores cannot reach a workspace's BM25 statistics or its postings: the
table a workspace's query reads holds that workspace's rows and nothing else, every writer
puts a row in its own workspace's table, and migration 0009 splits the old shared table (and
joins it again on downgrade) without losing or moving a row.
"""

from __future__ import annotations

import io
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kioku.models import BatchCreate, ContextCreate, MemoryCreate, MemoryUpdate, PurgeSource
from kioku.models.sleep import SleepRequest
from kioku.runtime import Runtime
from kioku.service.principal import Principal
from kioku.service.transfer import export_workspace, import_file
from kioku.storage.migrations import downgrade_database, upgrade_database
from kioku.storage.records import MemoryFilter
from kioku.storage.sqlite import SQLiteStore
from kioku.storage.sqlite.lexical import lexical_table, lexical_tables
from tests.storage.test_contract import new_context, new_memory

LIVE = MemoryFilter()


def seqs_by_workspace(conn: sqlite3.Connection) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for workspace_id, seq in conn.execute("SELECT workspace_id, seq FROM memories"):
        found.setdefault(workspace_id, set()).add(seq)
    return found


def assert_partitioned(conn: sqlite3.Connection) -> None:
    """Each workspace's FTS5 table holds exactly its own memories, and no table is another's."""
    workspaces = seqs_by_workspace(conn)
    tables = set(lexical_tables(conn))
    for workspace_id, seqs in workspaces.items():
        table = lexical_table(workspace_id)
        assert table in tables, workspace_id
        assert {row[0] for row in conn.execute(f"SELECT rowid FROM {table}")} == seqs
    for table in tables - {lexical_table(w) for w in workspaces}:
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_the_fts_table_a_workspace_queries_holds_only_its_rows(tmp_path: Path) -> None:
    """Structural: the tables B's lexical query reads (SQLite's authorizer names them) hold
    B's rows only, so A's postings are never walked, whatever A stores."""
    path = tmp_path / "k.db"
    store = SQLiteStore(path)
    try:
        a, b = store.ensure_workspace("a").id, store.ensure_workspace("b").id
        a_ctx, b_ctx = new_context(store, a, "notes"), new_context(store, b, "notes")
        store.insert_memories(a, [new_memory(a_ctx.id, "a", tokens="needle") for _ in range(500)])
        mine = [new_memory(b_ctx.id, "b", tokens=f"needle hay {i}") for i in range(3)]
        store.insert_memories(b, mine)
    finally:
        store.close()
    fresh = SQLiteStore(path)  # a new connection: every statement is prepared (authorized) anew
    try:
        conn = fresh.db.connection()
        read: set[str] = set()

        def authorize(action: int, arg1: str | None, *_: object) -> int:
            if action == sqlite3.SQLITE_READ and arg1 is not None:
                read.add(arg1)
            return sqlite3.SQLITE_OK

        conn.set_authorizer(authorize)
        hits = fresh.lexical_search(b, [b_ctx.id], ["needle"], LIVE, 10)
        conn.set_authorizer(None)
        assert {h.memory_id for h in hits} == {m.id for m in mine}
        fts_read = {name for name in read if name.startswith("memories_fts")}
        assert fts_read, read
        b_seqs = seqs_by_workspace(conn)[b]
        for table in fts_read & {"memories_fts", *lexical_tables(conn)}:  # not shadow tables
            assert {row[0] for row in conn.execute(f"SELECT rowid FROM {table}")} <= b_seqs
        assert not any(name.startswith(lexical_table(a)) for name in read)
    finally:
        fresh.close()


def test_a_workspace_that_never_wrote_has_no_table_and_finds_nothing(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "k.db")
    try:
        ws = store.ensure_workspace("empty").id
        ctx = new_context(store, ws, "notes")
        assert store.lexical_search(ws, [ctx.id], ["needle"], LIVE, 5) == []
        assert lexical_table(ws) not in lexical_tables(store.db.connection())
    finally:
        store.close()


def test_a_rolled_back_first_write_takes_its_new_table_with_it(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "k.db")
    try:
        ws = store.ensure_workspace("w").id
        ctx = new_context(store, ws, "notes")
        twin = new_memory(ctx.id, "x", tokens="needle")
        with pytest.raises(sqlite3.IntegrityError):
            store.insert_memories(ws, [twin, twin])  # the same id twice: the batch fails
        assert lexical_table(ws) not in lexical_tables(store.db.connection())
        store.insert_memories(ws, [twin])
        assert [h.memory_id for h in store.lexical_search(ws, [ctx.id], ["needle"], LIVE, 5)] == [
            twin.id
        ]
    finally:
        store.close()


def test_a_delete_written_by_hand_is_unindexed_by_the_next_write(tmp_path: Path) -> None:
    """The trigger queues every deleted memory, whoever deletes it; a kioku write drains."""
    path = tmp_path / "k.db"
    store = SQLiteStore(path)
    try:
        a, b = store.ensure_workspace("a").id, store.ensure_workspace("b").id
        a_ctx, b_ctx = new_context(store, a, "notes"), new_context(store, b, "notes")
        store.insert_memories(a, [new_memory(a_ctx.id, "a", tokens="needle") for _ in range(4)])
        store.insert_memories(b, [new_memory(b_ctx.id, "b", tokens="needle") for _ in range(2)])
        with sqlite3.connect(path) as outside:
            outside.execute("PRAGMA foreign_keys = ON")
            outside.execute("DELETE FROM contexts WHERE id = ?", (a_ctx.id,))
            assert outside.execute("SELECT count(*) FROM lexical_deletions").fetchone() == (4,)
        store.insert_memories(b, [new_memory(b_ctx.id, "b", tokens="hay")])
        conn = store.db.connection()
        assert conn.execute("SELECT count(*) FROM lexical_deletions").fetchone()[0] == 0
        assert_partitioned(conn)
        assert conn.execute(f"SELECT count(*) FROM {lexical_table(a)}").fetchone()[0] == 0
    finally:
        store.close()


def test_every_writer_puts_tokens_in_its_own_workspace_table(
    runtime: Runtime, principal: Principal, other_principal: Principal
) -> None:
    """remember, batch, update, Sleep merge and rollback, import, purges, context delete."""
    conn = runtime.store.db.connection()  # type: ignore[attr-defined]
    for who in (principal, other_principal):
        runtime.contexts.create_context(who, ContextCreate(name="notes", sleep_mode="full"))
        runtime.memories.remember(who, "notes", MemoryCreate(summary="Alice drinks green tea"))
        runtime.memories.remember(
            who, "notes", MemoryCreate(summary="Alice drinks green tea", tags=["dup"])
        )
        runtime.memories.remember_batch(
            who,
            "notes",
            BatchCreate(
                items=[
                    {"summary": f"note {i} about lanterns", "source_uri": f"doc://{i}"}
                    for i in range(5)
                ]
            ),
        )
    assert_partitioned(conn)
    first = runtime.memories.list_memories(principal, "notes").items[0]
    runtime.memories.update_memory(
        principal, "notes", first.id, MemoryUpdate(summary="rewritten zephyrine text")
    )
    assert_partitioned(conn)
    report = runtime.sleep.sleep(principal, "notes", SleepRequest(mode="full"))
    assert report.summary["merge"]["merged"] == 1
    assert_partitioned(conn)
    runtime.sleep.rollback_sleep(principal, report.run_id)
    assert_partitioned(conn)
    out = io.StringIO()
    export_workspace(runtime.store, "intruder", datetime.now(UTC), out.write)
    dump = Path(runtime.settings.database.url.removeprefix("sqlite:///")).with_name("d.jsonl")
    dump.write_text(out.getvalue())
    runtime.purge.purge_source(principal, PurgeSource(source_uri_prefix="doc://"))
    assert_partitioned(conn)
    runtime.purge.purge_context(other_principal, "notes")
    assert_partitioned(conn)
    runtime.contexts.delete_context(principal, "notes")
    runtime.contexts.delete_context(other_principal, "notes")
    assert_partitioned(conn)
    table = lexical_table(principal.workspace_id)
    assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    # The intruder's export taken before (its ids are free again) comes back elsewhere.
    import_file(runtime.store, dump, workspace="copy")
    assert_partitioned(conn)
    copy = runtime.store.get_workspace_by_name("copy")
    assert copy is not None
    assert conn.execute(f"SELECT count(*) FROM {lexical_table(copy.id)}").fetchone()[0] == 7


# ---------------------------------------------------------------- migration 0009


ROWS = {  # workspace → the tokens of its memories
    "ws-a": ["needle hay", "needle needle", "hay only", "東京 天気"],
    "ws-b": ["needle", "straw hay hay", "needle straw"],
}


def _fill_old_schema(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        for workspace_id, tokens in ROWS.items():
            conn.execute(
                "INSERT INTO workspaces VALUES (?, ?, '2026-01-01T00:00:00Z')",
                (workspace_id, workspace_id),
            )
            conn.execute(
                "INSERT INTO contexts (id, workspace_id, name, created_at, updated_at) "
                "VALUES (?, ?, 'notes', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
                (f"{workspace_id}-ctx", workspace_id),
            )
            for i, text in enumerate(tokens):
                seq = conn.execute(
                    "INSERT INTO memories (id, workspace_id, context_id, summary, source_type, "
                    "trust_tier, created_at, updated_at) VALUES (?, ?, ?, ?, 'api', 'trusted', "
                    "'2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z') RETURNING seq",
                    (f"{workspace_id}-m{i}", workspace_id, f"{workspace_id}-ctx", text),
                ).fetchone()[0]
                conn.execute("INSERT INTO memories_fts (rowid, tokens) VALUES (?, ?)", (seq, text))


def _old_rows(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    return conn.execute("SELECT rowid, tokens FROM memories_fts ORDER BY rowid").fetchall()


def test_migration_0009_splits_the_shared_table_by_workspace_and_joins_it_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    upgrade_database(url, "0008_connectors")
    _fill_old_schema(path)
    with sqlite3.connect(path) as conn:
        before = _old_rows(conn)
    assert len(before) == 7

    upgrade_database(url)
    with sqlite3.connect(path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema")}
        assert "memories_fts" not in names and "memories_fts_delete" not in names
        assert {"lexical_deletions", "memories_lexical_delete"} <= names
        assert lexical_tables(conn) == sorted(lexical_table(w) for w in ROWS)
        moved = sorted(
            row
            for t in lexical_tables(conn)
            for row in conn.execute(f"SELECT rowid, tokens FROM {t}")
        )
        assert moved == before
        assert_partitioned(conn)
    # The store finds the migrated rows, and scores B as a file holding B alone would.
    store = SQLiteStore(path)
    try:
        hits = store.lexical_search("ws-b", ["ws-b-ctx"], ["needle"], LIVE, 5)
        assert {h.memory_id for h in hits} == {"ws-b-m0", "ws-b-m2"}
        alone = SQLiteStore(tmp_path / "alone.db")
        try:
            alone_ws = alone.ensure_workspace("b").id
            ctx = new_context(alone, alone_ws, "notes")
            rows = [new_memory(ctx.id, t, tokens=t) for t in ROWS["ws-b"]]
            alone.insert_memories(alone_ws, rows)
            expected = alone.lexical_search(alone_ws, [ctx.id], ["needle"], LIVE, 5)
            names = {r.id: f"ws-b-m{i}" for i, r in enumerate(rows)}
            assert [(h.memory_id, h.score) for h in hits] == [
                (names[h.memory_id], h.score) for h in expected
            ]
        finally:
            alone.close()
        # The new trigger keeps the invariant: a purged memory leaves its table.
        assert store.purge_memory("ws-a", "ws-a-m0")
        assert_partitioned(store.db.connection())
    finally:
        store.close()

    downgrade_database(url, "0008_connectors")
    with sqlite3.connect(path) as conn:
        assert lexical_tables(conn) == []
        assert _old_rows(conn) == [row for row in before if row[1] != "needle hay"]
        conn.execute("DELETE FROM memories WHERE id = 'ws-b-m1'")  # the old trigger is back
        assert len(_old_rows(conn)) == 5
    upgrade_database(url)  # and up again
    with sqlite3.connect(path) as conn:
        assert_partitioned(conn)
        assert (
            sum(
                conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in lexical_tables(conn)
            )
            == 5
        )
