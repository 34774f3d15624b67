"""The distribution check (tests/sql_distribution.py) on statements written to break it.

The storage suite runs every statement kioku sends PostgreSQL through ``violations``; these
show that it fails on the statements a Citus cluster could not keep on one tenant's node, and
passes the shapes kioku uses.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sql_distribution import violations

WS, OTHER = "ws-1", "ws-2"

ONE_TENANT = [
    ("SELECT * FROM memories WHERE workspace_id = %s AND id = %s", (WS, "m1")),
    (
        "SELECT m.id FROM memories m JOIN contexts c "
        "ON c.workspace_id = m.workspace_id AND c.id = m.context_id WHERE m.workspace_id = %s",
        (WS,),
    ),
    # Two tables bound to the same workspace are on the same node.
    (
        "SELECT m.id FROM memories m, contexts c WHERE m.workspace_id = %s "
        "AND c.workspace_id = %s AND c.id = m.context_id",
        (WS, WS),
    ),
    (
        "SELECT c.*, (SELECT count(*) FROM memories m WHERE m.workspace_id = c.workspace_id "
        "AND m.context_id = c.id) AS n FROM contexts c WHERE c.workspace_id = %s",
        (WS,),
    ),
    ("INSERT INTO memories (id, workspace_id, context_id) VALUES (%s, %s, %s)", ("m", WS, "c")),
    (
        "WITH live AS (SELECT 1 FROM memories WHERE workspace_id = %s AND id = %s) "
        "INSERT INTO retrieval_feedback (id, workspace_id, memory_id) SELECT %s, %s, %s FROM live",
        (WS, "m", "f", WS, "m"),
    ),
    (
        "UPDATE memories m SET embedding = u.v FROM unnest(%s::text[], %s::text[]) AS u(id, v) "
        "WHERE m.workspace_id = %s AND m.id = u.id",
        (["m"], ["[1]"], WS),
    ),
    ("SELECT * FROM memories WHERE workspace_id = %(ws)s", {"ws": WS}),
    ("SELECT * FROM memories WHERE workspace_id = 'ws-1'", None),
    # Global (reference or coordinator) tables and DDL are not the check's business.
    ("SELECT id, workspace_id FROM api_keys WHERE key_hash = %s", ("h",)),
    ("CREATE INDEX IF NOT EXISTS ix ON memories (workspace_id, id)", None),
]

LEAVES_ONE_TENANT = [
    ("SELECT * FROM memories WHERE id = %s", ("m1",), "memories memories: not restricted"),
    (
        "SELECT * FROM memories WHERE workspace_id = %s OR id = %s",
        (WS, "m1"),
        "memories memories: not restricted",
    ),
    (
        "SELECT * FROM memories WHERE NOT (workspace_id = %s)",
        (WS,),
        "memories memories: not restricted",
    ),
    (
        "SELECT m.id FROM memories m JOIN contexts c ON c.id = m.context_id "
        "WHERE m.workspace_id = %s",
        (WS,),
        "contexts c: not restricted",
    ),
    (
        "SELECT m.id FROM memories m, contexts c WHERE m.workspace_id = %s "
        "AND c.workspace_id = %s AND c.id = m.context_id",
        (WS, OTHER),
        "not joined on equal workspace_id",
    ),
    (
        "SELECT c.*, (SELECT count(*) FROM memories m WHERE m.context_id = c.id) AS n "
        "FROM contexts c WHERE c.workspace_id = %s",
        (WS,),
        "memories m: not restricted",
    ),
    (
        "INSERT INTO memories (id, context_id) VALUES (%s, %s)",
        ("m", "c"),
        "INSERT INTO memories names no workspace_id",
    ),
    ("UPDATE memories SET importance = 1 WHERE id = %s", ("m",), "memories: not restricted"),
    (
        "DELETE FROM memory_edges e USING memories m WHERE e.workspace_id = %s "
        "AND m.id = e.source_id",
        (WS,),
        "memories m: not restricted",
    ),
    ("SELECT * FROM memories WHERE workspace_id = = %s", (WS,), "cannot be parsed"),
]


@pytest.mark.parametrize(("sql", "params"), ONE_TENANT)
def test_statements_of_one_tenant_pass(sql: str, params: Any) -> None:
    assert violations(sql, params) == []


@pytest.mark.parametrize(("sql", "params", "expected"), LEAVES_ONE_TENANT)
def test_statements_that_leave_one_tenant_fail(sql: str, params: Any, expected: str) -> None:
    found = violations(sql, params)
    assert any(expected in problem for problem in found), found


def test_cross_tenant_upkeep_need_not_be_pinned_but_must_join_on_the_tenant() -> None:
    colocated = (
        "SELECT m.id FROM memories m JOIN contexts c ON c.id = m.context_id "
        "AND c.workspace_id = m.workspace_id WHERE m.embedding_status = 'pending'"
    )
    assert violations(colocated, None, cross_tenant=True) == []
    assert violations(colocated, None)  # the same outside upkeep is not pinned
    scattered = colocated.replace(" AND c.workspace_id = m.workspace_id", "")
    found = violations(scattered, None, cross_tenant=True)
    assert found and "not joined on equal workspace_id" in found[0]


def test_a_cte_carries_the_workspace_of_what_it_selects() -> None:
    sql = (
        "WITH ranked AS (SELECT m.workspace_id, m.id FROM memories m) "
        "SELECT x.id FROM memories x JOIN ranked r ON r.workspace_id = x.workspace_id "
        "AND r.id = x.id"
    )
    assert violations(sql, None, cross_tenant=True) == []
    unlinked = sql.replace("r.workspace_id = x.workspace_id AND ", "")
    assert violations(unlinked, None, cross_tenant=True)
