"""The Alembic migrations on a real PostgreSQL 18 + pgvector: the schema SQLite gets, with the
same constraints, cascades and append-only guards."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, LiteralString

import psycopg
import pytest
from psycopg import errors, sql
from psycopg.types.json import Jsonb
from sqlalchemy import make_url

from kioku.storage import migrations
from kioku.storage.migrations import upgrade_database
from kioku.storage.postgres.throwaway import scratch_database

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KIOKU_TABLES = {
    "workspaces", "contexts", "memories", "retrieval_feedback", "agent_states", "api_keys",
    "audit_events", "oauth_clients", "oauth_grants", "job_claims", "memory_edges",
    "sleep_runs", "sleep_actions", "connectors", "ingest_requests",
}  # fmt: skip
POSTGRES_ONLY_TABLES = {"lexical_scope_stats", "lexical_term_stats"}
"""BM25's statistics (migration 0013): SQLite's FTS5 keeps its own."""

Connection = psycopg.Connection[tuple[Any, ...]]


def sqlalchemy_url(url: str) -> str:
    """The SQLAlchemy spelling of a ``postgresql://`` URL, on the psycopg 3 driver."""
    return make_url(url).set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def downgrade_database(url: str, revision: str) -> None:
    """As ``upgrade_database``, the other way."""
    migrations.downgrade_database(sqlalchemy_url(url), revision)


def table_names(conn: Connection) -> set[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    )
    return {name for (name,) in rows}


@pytest.fixture(scope="module")
def database_url(postgres_url: str) -> Iterator[str]:
    """One database for the module, migrated to head."""
    with scratch_database(postgres_url) as url:
        upgrade_database(sqlalchemy_url(url))
        yield url


@pytest.fixture
def conn(database_url: str) -> Iterator[Connection]:
    """A connection whose work is rolled back after the test (errors roll back a savepoint)."""
    with (
        psycopg.connect(database_url) as connection,
        connection.transaction(force_rollback=True),
    ):
        yield connection


def insert(conn: Connection, table: str, values: dict[str, object]) -> None:
    conn.execute(
        sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            sql.Identifier(table),
            sql.SQL(", ").join(map(sql.Identifier, values)),
            sql.SQL(", ").join(sql.Placeholder() * len(values)),
        ),
        list(values.values()),
    )


def add_workspace(conn: Connection) -> str:
    workspace_id = str(uuid.uuid4())
    insert(conn, "workspaces", {"id": workspace_id, "name": workspace_id[:8], "created_at": T0})
    return workspace_id


def add_context(conn: Connection, workspace_id: str) -> str:
    context_id = str(uuid.uuid4())
    insert(
        conn,
        "contexts",
        {"id": context_id, "workspace_id": workspace_id, "name": context_id[:8],
         "created_at": T0, "updated_at": T0},
    )  # fmt: skip
    return context_id


def add_memory(conn: Connection, workspace_id: str, context_id: str, **overrides: object) -> str:
    values: dict[str, object] = {
        "id": str(uuid.uuid4()), "workspace_id": workspace_id, "context_id": context_id,
        "summary": "the weather in Tokyo", "source_type": "api", "trust_tier": "trusted",
        "created_at": T0, "updated_at": T0,
    }  # fmt: skip
    values.update(overrides)
    insert(conn, "memories", values)
    return str(values["id"])


def add_feedback(conn: Connection, workspace_id: str, context_id: str, memory_id: str) -> str:
    feedback_id = str(uuid.uuid4())
    insert(
        conn,
        "retrieval_feedback",
        {"id": feedback_id, "workspace_id": workspace_id, "context_id": context_id,
         "memory_id": memory_id, "helpful": True, "actor": "tester", "channel": "api",
         "created_at": T0},
    )  # fmt: skip
    return feedback_id


def count(conn: Connection, query: LiteralString, *params: object) -> int:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


# ---------------------------------------------------------------- schema


def test_upgrade_creates_every_table_and_the_vector_extension(conn: Connection) -> None:
    assert table_names(conn) == KIOKU_TABLES | POSTGRES_ONLY_TABLES | {"alembic_version"}
    assert count(conn, "SELECT count(*) FROM pg_extension WHERE extname = 'vector'") == 1


def test_columns_and_nullability_mirror_sqlite(conn: Connection, tmp_path: Path) -> None:
    upgrade_database(f"sqlite:///{tmp_path / 'mirror.db'}")
    lite = sqlite3.connect(tmp_path / "mirror.db")
    try:
        expected = {
            # A SQLite primary key column is NOT NULL in effect (and always on PostgreSQL).
            (table, column, not (notnull or pk))
            for table in KIOKU_TABLES
            for _, column, _, notnull, _, pk in lite.execute(f"PRAGMA table_info({table})")
        }
    finally:
        lite.close()
    actual = {
        (table, column, nullable == "YES")
        for table, column, nullable in conn.execute(
            "SELECT table_name, column_name, is_nullable FROM information_schema.columns "
            "WHERE table_schema = 'public' AND table_name <> 'alembic_version' "
            "AND NOT table_name = ANY(%s)",
            (list(POSTGRES_ONLY_TABLES),),
        )
    }
    # The one difference: the lexical index is columns here, FTS5 tables on SQLite, and what
    # stamps the last change of them for the in-process lexical indexes: the transaction here
    # (migration 0017), a clock on SQLite (migration 0020; ``lexical_clock`` is not a kioku
    # table, as PostgreSQL's statistics tables are not).
    assert actual - expected == {
        ("memories", "lexical_tokens", False),
        ("memories", "lexical_length", False),
        ("memories", "lexical_xid", True),
    }
    assert expected - actual == {("memories", "lexical_change", True)}


def test_embeddings_of_any_dimension_and_lexical_tokens_are_stored(conn: Connection) -> None:
    ws = add_workspace(conn)
    small, large = add_context(conn, ws), add_context(conn, ws)
    add_memory(conn, ws, small, embedding_status="ready", embedding="[0.6, 0.8]")
    add_memory(conn, ws, large, embedding_status="ready", embedding="[1, 0, 0]")
    conn.execute(
        "UPDATE memories SET lexical_tokens = to_tsvector('simple', %s) WHERE context_id = %s",
        ("東京 の 天気 weather", small),
    )
    assert count(conn, "SELECT count(*) FROM memories WHERE vector_dims(embedding) = 3") == 1
    query = "SELECT count(*) FROM memories WHERE lexical_tokens @@ to_tsquery('simple', %s)"
    assert count(conn, query, "天気 & weather") == 1


# ---------------------------------------------------------------- constraints


@pytest.mark.parametrize(
    "overrides",
    [
        {"delivery_mode": "sometimes"},
        {"source_type": "email"},
        {"trust_tier": "semi"},
        {"embedding_status": "done"},
        {"importance": 1.5},
        {"summary": ""},
        {"summary": "x" * 501},
        {"tags": Jsonb({"not": "a list"})},
        {"delivery_mode": "on_trigger"},  # without trigger_from
        {"delivery_mode": "on_trigger", "trigger_from": T0, "trigger_until": T0},
        {"embedding_status": "ready"},  # without an embedding
        {"access_count": -1},
    ],
    ids=repr,
)
def test_checks_reject_a_bad_memory(conn: Connection, overrides: dict[str, object]) -> None:
    ws = add_workspace(conn)
    ctx = add_context(conn, ws)
    with pytest.raises(errors.CheckViolation), conn.transaction():
        add_memory(conn, ws, ctx, **overrides)
    add_memory(conn, ws, ctx, delivery_mode="on_trigger", trigger_from=T0,
               trigger_until=T0 + timedelta(days=1))  # fmt: skip


@pytest.mark.parametrize(
    ("table", "values"),
    [
        ("contexts", {"id": "c", "name": "n", "sleep_mode": "nap"}),
        ("contexts", {"id": "c", "name": "n", "trust_tier": "semi"}),
        ("api_keys", {"id": "k", "name": "n", "prefix": "p", "key_hash": "0" * 64,
                      "role": "god", "created_by": "me"}),
        ("api_keys", {"id": "k", "name": "n", "prefix": "p", "key_hash": "short",
                      "role": "viewer", "created_by": "me"}),
    ],
    ids=repr,
)  # fmt: skip
def test_checks_reject_bad_values_in_other_tables(
    conn: Connection, table: str, values: dict[str, object]
) -> None:
    ws = add_workspace(conn)
    stamps = {"created_at": T0} if table == "api_keys" else {"created_at": T0, "updated_at": T0}
    with pytest.raises(errors.CheckViolation), conn.transaction():
        insert(conn, table, {**values, **stamps, "workspace_id": ws})


@pytest.mark.parametrize(
    ("table", "column"),
    [("contexts", "search_config"), ("agent_states", "value"), ("audit_events", "detail")],
)
def test_invalid_json_is_refused_by_the_column_type(
    conn: Connection, table: str, column: str
) -> None:
    ws = add_workspace(conn)
    values: dict[str, dict[str, object]] = {
        "contexts": {"id": "c", "workspace_id": ws, "name": "n", "created_at": T0,
                     "updated_at": T0},
        "agent_states": {"workspace_id": ws, "context_id": add_context(conn, ws), "key": "k",
                         "created_at": T0, "updated_at": T0},
        "audit_events": {"at": T0, "actor": "a", "channel": "api", "action": "x",
                         "outcome": "ok"},
    }  # fmt: skip
    # A plain str reaches PostgreSQL untyped and is parsed as the column's type.
    with pytest.raises(errors.InvalidTextRepresentation), conn.transaction():
        insert(conn, table, {**values[table], column: '{"unclosed": '})
    insert(conn, table, {**values[table], column: '{"closed": true}'})


def test_context_names_are_unique_per_workspace_only(conn: Connection) -> None:
    ws, other = add_workspace(conn), add_workspace(conn)
    row = {"id": "c1", "name": "notes", "created_at": T0, "updated_at": T0}
    insert(conn, "contexts", {**row, "workspace_id": ws})
    insert(conn, "contexts", {**row, "workspace_id": other})  # same id and name, other tenant
    with pytest.raises(errors.UniqueViolation), conn.transaction():
        insert(conn, "contexts", {**row, "id": "c2", "workspace_id": ws})


def test_feedback_cannot_point_at_another_workspaces_memory(conn: Connection) -> None:
    ws, other = add_workspace(conn), add_workspace(conn)
    memory = add_memory(conn, ws, add_context(conn, ws))
    with pytest.raises(errors.ForeignKeyViolation), conn.transaction():
        add_feedback(conn, other, add_context(conn, other), memory)


# ---------------------------------------------------------------- append-only lanes


def test_feedback_refuses_update_delete_and_truncate(conn: Connection) -> None:
    ws = add_workspace(conn)
    ctx = add_context(conn, ws)
    feedback = add_feedback(conn, ws, ctx, add_memory(conn, ws, ctx))
    for statement in (
        "UPDATE retrieval_feedback SET helpful = false WHERE id = %s",
        "DELETE FROM retrieval_feedback WHERE id = %s",
    ):
        with pytest.raises(errors.RestrictViolation, match="append-only"), conn.transaction():
            conn.execute(statement, (feedback,))
    with pytest.raises(errors.RestrictViolation, match="append-only"), conn.transaction():
        conn.execute("TRUNCATE retrieval_feedback")
    assert count(conn, "SELECT count(*) FROM retrieval_feedback WHERE id = %s", feedback) == 1


def test_purging_a_memory_or_its_context_takes_its_feedback(conn: Connection) -> None:
    ws = add_workspace(conn)
    ctx = add_context(conn, ws)
    purged, kept = add_memory(conn, ws, ctx), add_memory(conn, ws, ctx)
    add_feedback(conn, ws, ctx, purged)
    add_feedback(conn, ws, ctx, kept)
    conn.execute("DELETE FROM memories WHERE workspace_id = %s AND id = %s", (ws, purged))
    assert count(conn, "SELECT count(*) FROM retrieval_feedback WHERE memory_id = %s", purged) == 0
    assert count(conn, "SELECT count(*) FROM retrieval_feedback WHERE memory_id = %s", kept) == 1
    conn.execute("DELETE FROM contexts WHERE workspace_id = %s AND id = %s", (ws, ctx))
    assert count(conn, "SELECT count(*) FROM retrieval_feedback WHERE workspace_id = %s", ws) == 0


def test_audit_events_refuse_update_delete_and_truncate(conn: Connection) -> None:
    with pytest.raises(errors.CheckViolation), conn.transaction():
        insert(conn, "audit_events", {"at": T0, "actor": "a", "channel": "api",
                                      "action": "recall", "outcome": "maybe"})  # fmt: skip
    insert(conn, "audit_events", {"at": T0, "actor": "a", "channel": "api", "action": "recall",
                                  "outcome": "ok", "detail": Jsonb({"n": 1})})  # fmt: skip
    for statement in (
        "UPDATE audit_events SET outcome = 'denied'",
        "DELETE FROM audit_events",
        "TRUNCATE audit_events",
    ):
        with pytest.raises(errors.RestrictViolation, match="append-only"), conn.transaction():
            conn.execute(statement)
    assert count(conn, "SELECT count(*) FROM audit_events") == 1


# ---------------------------------------------------------------- downgrade


def test_downgrade_to_base_and_upgrade_again(postgres_url: str) -> None:
    with scratch_database(postgres_url) as url:
        upgrade_database(sqlalchemy_url(url))
        downgrade_database(url, "base")
        with psycopg.connect(url) as conn:
            assert table_names(conn) == {"alembic_version"}
            functions = "SELECT count(*) FROM pg_proc WHERE proname LIKE %s"
            assert count(conn, functions, "%append_only") == 0
        upgrade_database(sqlalchemy_url(url))
        with psycopg.connect(url) as conn:
            assert table_names(conn) == KIOKU_TABLES | POSTGRES_ONLY_TABLES | {"alembic_version"}


def test_lexical_statistics_are_backfilled_and_dropped(postgres_url: str) -> None:
    """0013 counts the live memories already there; its downgrade removes tables and trigger."""
    with scratch_database(postgres_url) as url:
        upgrade_database(sqlalchemy_url(url), "0011_threads")
        with psycopg.connect(url) as conn:
            ws = add_workspace(conn)
            ctx = add_context(conn, ws)
            for tokens, deleted in (("'a':1,2 'b':1", None), ("'a':1", None), ("'c':1", T0)):
                add_memory(conn, ws, ctx, lexical_tokens=tokens, lexical_length=2,
                           deleted_at=deleted)  # fmt: skip
        upgrade_database(sqlalchemy_url(url))
        with psycopg.connect(url) as conn:
            conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
            scope = conn.execute("SELECT n, total_length FROM lexical_scope_stats").fetchall()
            terms = conn.execute("SELECT term, df FROM lexical_term_stats ORDER BY term")
            assert scope == [(2, 4)] and terms.fetchall() == [("a", 2), ("b", 1)]
        downgrade_database(url, "0011_threads")
        with psycopg.connect(url) as conn:
            assert not table_names(conn) & POSTGRES_ONLY_TABLES
            trigger = "SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'memories_lexical%%'"
            assert count(conn, trigger) == 0


def test_term_bounds_are_backfilled_and_dropped(postgres_url: str) -> None:
    """0015 sets max_tf and min_length_per_tf from the live memories already there; its
    downgrade drops them and puts back 0013's trigger function (df still kept)."""
    with scratch_database(postgres_url) as url:
        upgrade_database(sqlalchemy_url(url), "0014_memory_tags_index")
        with psycopg.connect(url) as conn:
            conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
            ws = add_workspace(conn)
            ctx = add_context(conn, ws)
            for tokens, length, deleted in (("'a':1,2,3 'b':1", 4, None), ("'a':1", 6, None),
                                            ("'a':1,2,3,4,5 'c':1", 6, T0)):  # fmt: skip
                add_memory(conn, ws, ctx, lexical_tokens=tokens, lexical_length=length,
                           deleted_at=deleted)  # fmt: skip
        upgrade_database(sqlalchemy_url(url), "0015_lexical_term_bounds")
        bounds = "SELECT term, df, max_tf, min_length_per_tf FROM lexical_term_stats ORDER BY term"
        with psycopg.connect(url) as conn:
            conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
            # a: tf 3 in a memory of 4 (4/3), tf 1 in one of 6; the deleted memory not counted.
            assert conn.execute(bounds).fetchall() == [("a", 2, 3, 4 / 3), ("b", 1, 1, 4.0)]
            add_memory(conn, ws, ctx, lexical_tokens="'a':1,2,3,4 'd':1", lexical_length=5)
            assert conn.execute(bounds).fetchall() == [
                ("a", 3, 4, 5 / 4),
                ("b", 1, 1, 4.0),
                ("d", 1, 1, 5.0),
            ]
        downgrade_database(url, "0014_memory_tags_index")
        with psycopg.connect(url) as conn:
            conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
            columns = conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'lexical_term_stats' ORDER BY column_name"
            ).fetchall()
            assert [c for (c,) in columns] == ["context_id", "df", "term", "workspace_id"]
            add_memory(conn, ws, ctx, lexical_tokens="'b':1", lexical_length=1)
            terms = conn.execute("SELECT term, df FROM lexical_term_stats ORDER BY term")
            assert terms.fetchall() == [("a", 3), ("b", 2), ("d", 1)]
        upgrade_database(sqlalchemy_url(url))  # and up again, backfilling once more
        with psycopg.connect(url) as conn:
            conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
            assert conn.execute(bounds).fetchall() == [
                ("a", 3, 4, 5 / 4),
                ("b", 2, 1, 1.0),
                ("d", 1, 1, 5.0),
            ]


HALFVEC = "0016_hnsw_halfvec"
BEFORE_HALFVEC = "0015_lexical_term_bounds"
"""0016's parent; upgrading to 0016 itself (not head) keeps this test
true whatever comes after it."""


def hnsw_definitions(conn: Connection) -> dict[str, str]:
    rows = conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories' "
        "AND indexname LIKE 'ix_memories_hnsw_%%'"
    )
    return {name: definition for name, definition in rows}


def test_hnsw_indexes_are_rebuilt_over_halfvec_and_back(postgres_url: str) -> None:
    """0016 rebuilds each per-dimension HNSW index (made at run time over ``vector``) over
    the normalised ``halfvec``, same name and predicate, whatever the stored components; its
    downgrade rebuilds them over ``vector``."""
    with scratch_database(postgres_url) as url:
        upgrade_database(sqlalchemy_url(url), BEFORE_HALFVEC)
        with psycopg.connect(url) as conn:
            conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
            ws = add_workspace(conn)
            ctx = add_context(conn, ws)
            # The last one is beyond a half float's range (65,504): normalised first, it fits.
            for vector in ("[1,0,0]", "[0,1,0]", "[0.6,0.8,0]", "[1e-38,-3.4028235e38,0.1]"):
                add_memory(conn, ws, ctx, embedding=vector, embedding_status="ready")
            conn.execute(
                "CREATE INDEX ix_memories_hnsw_3 ON memories USING hnsw "
                "((embedding::vector(3)) vector_cosine_ops) "
                "WITH (m = 16, ef_construction = 64) WHERE vector_dims(embedding) = 3"
            )
        upgrade_database(sqlalchemy_url(url), HALFVEC)
        with psycopg.connect(url) as conn:
            definition = hnsw_definitions(conn)["ix_memories_hnsw_3"]
            assert "((l2_normalize(embedding))::halfvec(3)) halfvec_cosine_ops" in definition
            assert "WHERE (vector_dims(embedding) = 3)" in definition
            assert "m='16'" in definition and "ef_construction='64'" in definition
            valid = "SELECT indisvalid FROM pg_index WHERE indexrelid = %s::regclass"
            assert count(conn, valid, "ix_memories_hnsw_3") is True
        downgrade_database(url, BEFORE_HALFVEC)
        with psycopg.connect(url) as conn:
            definition = hnsw_definitions(conn)["ix_memories_hnsw_3"]
            assert "((embedding)::vector(3)) vector_cosine_ops" in definition
            assert "WHERE (vector_dims(embedding) = 3)" in definition
