"""Row-level security: the second wall behind the service checks, tried the way an attacker
(or a query that forgot its ``WHERE workspace_id``) would. PostgreSQL only."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql

from kioku.storage.base import Store
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres.connection import ALL_WORKSPACES
from kioku.storage.records import ApiKeyRow, AuditEvent, NewFeedback
from tests.storage.conftest import APP_ROLE, empty_postgres_database
from tests.storage.test_contract import T0, new_context, new_memory

TENANT_TABLES = {
    "workspaces": "id",
    "contexts": "workspace_id",
    "memories": "workspace_id",
    "retrieval_feedback": "workspace_id",
    "agent_states": "workspace_id",
    "api_keys": "workspace_id",
    "audit_events": "workspace_id",
    "connectors": "workspace_id",
    "ingest_requests": "workspace_id",
    # BM25's statistics (migration 0013): a tenant's terms are its own.
    "lexical_scope_stats": "workspace_id",
    "lexical_term_stats": "workspace_id",
}

GRAPH_AND_SLEEP_TABLES = ("memory_edges", "sleep_runs", "sleep_actions")


@pytest.fixture
def pg(postgres_database: str) -> Iterator[PostgresStore]:
    empty_postgres_database(postgres_database)
    store = PostgresStore(postgres_database)
    try:
        yield store
    finally:
        store.close()


def _fill(store: Store, name: str) -> str:
    ws = store.ensure_workspace(name).id
    ctx = new_context(store, ws, "notes")
    row = new_memory(ctx.id, f"secret of {name}")
    store.insert_memories(ws, [row])
    store.insert_feedback(
        ws, NewFeedback(f"fb-{name}", ctx.id, row.id, True, None, None, "agent", "api", T0)
    )
    store.set_state(ws, ctx.id, "cursor", '"1"', None, T0)
    key_hash = hashlib.sha256(name.encode()).hexdigest()
    store.insert_api_key(
        ApiKeyRow(
            f"key-{name}",
            ws,
            "bot",
            "kk_x",
            key_hash,
            "member",
            None,
            "owner",
            T0,
            None,
            None,
            None,
        )
    )
    store.append_audit(AuditEvent(ws, T0, "owner", "api", "create_key", "ok"))
    store.upsert_connector(ws, "ingest", f"worker-{name}", {}, T0)
    store.save_ingest_request(ws, ctx.id, "req-1", "hash", {"results": []}, T0)
    return ws


def _raw(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=False)


def _scoped(conn: psycopg.Connection[Any], scope: str | None) -> None:
    if scope is not None:
        conn.execute("SELECT set_config('kioku.workspace_id', %s, true)", (scope,))


def _tenants(conn: psycopg.Connection[Any], table: str) -> set[str]:
    return {row[0] for row in conn.execute(_select_tenants(table))}


def _select_tenants(table: str) -> sql.Composed:
    """``SELECT <tenant column> FROM <table>``: no WHERE, as a careless query would."""
    column = TENANT_TABLES[table]
    return sql.SQL("SELECT {} AS tenant FROM {}").format(
        sql.Identifier(column), sql.Identifier(table)
    )


def test_kioku_connects_as_a_role_the_policies_bind(pg: PostgresStore) -> None:
    with pg.db.transaction(ALL_WORKSPACES) as conn:
        role = conn.execute(
            "SELECT rolname, rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        forced = conn.execute(
            "SELECT relname FROM pg_class WHERE relrowsecurity AND relforcerowsecurity "
            "AND relname = ANY(%s)",
            ([*TENANT_TABLES, *GRAPH_AND_SLEEP_TABLES],),
        ).fetchall()
    assert role == {"rolname": APP_ROLE, "rolsuper": False, "rolbypassrls": False}
    assert {row["relname"] for row in forced} == {*TENANT_TABLES, *GRAPH_AND_SLEEP_TABLES}


def test_a_query_without_a_tenant_sees_no_rows(pg: PostgresStore) -> None:
    _fill(pg, "alpha")
    with _raw(pg.url) as conn:
        for table in TENANT_TABLES:
            assert _tenants(conn, table) == set(), table


def test_a_query_that_forgot_its_where_sees_only_its_tenant(pg: PostgresStore) -> None:
    alpha, beta = _fill(pg, "alpha"), _fill(pg, "beta")
    for ws in (alpha, beta):
        with pg.db.transaction(ws) as conn:
            for table in TENANT_TABLES:
                found = {row["tenant"] for row in conn.execute(_select_tenants(table))}
                assert found == {ws}, table
    with pg.db.transaction(ALL_WORKSPACES) as conn:
        rows = conn.execute("SELECT DISTINCT workspace_id FROM memories").fetchall()
    assert {row["workspace_id"] for row in rows} == {alpha, beta}


def test_writes_cannot_reach_or_create_another_tenants_rows(pg: PostgresStore) -> None:
    alpha, beta = _fill(pg, "alpha"), _fill(pg, "beta")
    with _raw(pg.url) as conn:
        _scoped(conn, alpha)
        # UPDATE and DELETE with no tenant filter touch alpha's rows only...
        assert conn.execute("UPDATE memories SET summary = 'pwned'").rowcount == 1
        assert conn.execute("DELETE FROM agent_states").rowcount == 1
        conn.commit()
    with pg.db.transaction(beta) as conn:
        summaries = [r["summary"] for r in conn.execute("SELECT summary FROM memories")]
        states = conn.execute("SELECT count(*) AS n FROM agent_states").fetchone()
    assert summaries == ["secret of beta"] and states == {"n": 1}
    # ...and a row written under alpha's scope cannot claim to be beta's.
    with _raw(pg.url) as conn:
        _scoped(conn, alpha)
        beta_context = conn.execute("SELECT count(*) FROM contexts").fetchone()
        assert beta_context == (1,)
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            conn.execute(
                "INSERT INTO agent_states (workspace_id, context_id, key, value, created_at, "
                "updated_at) SELECT %s, id, 'planted', '1', now(), now() FROM contexts",
                (beta,),
            )
    with _raw(pg.url) as conn:
        _scoped(conn, alpha)
        with pytest.raises(errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("UPDATE memories SET workspace_id = %s", (beta,))


def test_scope_ends_with_the_transaction(pg: PostgresStore) -> None:
    """Pooled connections are reused: one tenant's scope must not leak into the next borrower."""
    alpha = _fill(pg, "alpha")
    with pg.db.transaction(alpha) as conn:
        assert conn.execute("SELECT count(*) AS n FROM memories").fetchone() == {"n": 1}
    with pg.db.pool.connection() as conn:  # the same pool, no scope set
        assert conn.execute("SELECT count(*) AS n FROM memories").fetchone() == {"n": 0}
