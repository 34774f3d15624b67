"""Migration 0010 on a database already in use (SQLite, and PostgreSQL as the non-superuser
application role, under row-level security): every external id gets the owner that wrote it,
connector rows and external Sleep summaries are tainted, and downgrade goes back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from kioku.storage.migrations import downgrade_database, upgrade_database
from kioku.storage.postgres.throwaway import scratch_database
from tests.postgres import app_role_url
from tests.storage.test_postgres_migrations import sqlalchemy_url

T = "2026-01-01T00:00:00Z"
OLD = "0009_lexical_per_workspace"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    with scratch_database(request.getfixturevalue("postgres_url")) as superuser:
        yield sqlalchemy_url(app_role_url(superuser))


def run(url: str, *statements: str, params: dict[str, Any] | None = None) -> list[Any]:
    """Run ``statements`` in one transaction (as every workspace); the last one's rows."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT set_config('kioku.workspace_id', '*', true)"))
            rows: list[Any] = []
            for statement in statements:
                result = conn.execute(text(statement), params or {})
                rows = list(result) if result.returns_rows else []
            return rows
    finally:
        engine.dispose()


def memory(mid: str, ctx: str, source: str, tier: str, xid: str | None) -> str:
    external = "NULL" if xid is None else f"'{xid}'"
    return (
        "INSERT INTO memories (id, workspace_id, context_id, summary, source_type, trust_tier, "
        f"created_at, updated_at, external_id) VALUES ('{mid}', 'ws', '{ctx}', 'memory {mid}', "
        f"'{source}', '{tier}', :t, :t, {external})"
    )


def test_upgrade_backfills_owners_and_taint_and_downgrade_returns(url: str) -> None:
    upgrade_database(url, OLD)
    run(
        url,
        "INSERT INTO workspaces (id, name, created_at) VALUES ('ws', 'default', :t)",
        "INSERT INTO connectors (id, workspace_id, kind, name, created_at, updated_at) VALUES "
        "('c-slack', 'ws', 'slack', 'acme', :t, :t), ('c-in', 'ws', 'ingest', 'key:k1', :t, :t)",
        "INSERT INTO contexts (id, workspace_id, name, trust_tier, created_at, updated_at, "
        "connector_id) VALUES ('docs', 'ws', 'docs', 'trusted', :t, :t, NULL), "
        "('chan', 'ws', 'chan', 'external', :t, :t, 'c-slack')",
        memory("md", "docs", "import", "trusted", "policy.md#refund"),
        memory("conn", "docs", "connector", "external", "policy.md#refund-2"),
        memory("slack", "chan", "connector", "external", "1700000000.000100"),
        memory("sum", "docs", "sleep", "external", None),
        memory("plain", "docs", "manual", "trusted", None),
        params={"t": T},
    )
    upgrade_database(url)
    rows = run(url, "SELECT id, external_owner, tainted FROM memories")
    assert {r[0]: (r[1], bool(r[2])) for r in rows} == {
        "md": ("markdown", False),
        "conn": ("ingest:key:k1", True),
        "slack": ("slack:acme", True),
        "sum": (None, True),
        "plain": (None, False),
    }
    # The same external id may now be held by two owners, never twice by one.
    dup = memory("dup", "docs", "connector", "external", "policy.md#refund")
    set_owner = "UPDATE memories SET external_owner = :o WHERE id = 'dup'"
    run(url, dup, set_owner, params={"t": T, "o": "ingest:key:k2"})
    with pytest.raises(IntegrityError):
        run(url, set_owner, params={"o": "markdown"})
    downgrade_database(url, OLD)
    live = run(url, "SELECT id, external_id FROM memories WHERE id IN ('md', 'dup')")
    assert sorted(xid for _, xid in live if xid is not None) == ["policy.md#refund"]
    columns = run(url, "SELECT * FROM memories WHERE id = 'md'")
    assert "external_owner" not in columns[0]._fields and "tainted" not in columns[0]._fields
