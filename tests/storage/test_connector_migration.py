"""Migration 0008 on a SQLite database already in use: the API key table is rebuilt (to allow
the connector role) without losing a key or the OAuth grants that refer to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kioku.storage.migrations import upgrade_database


def test_upgrading_keeps_keys_and_grants_and_allows_connector_keys(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    url = f"sqlite:///{path}"
    upgrade_database(url, "0006_graph_sleep")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("INSERT INTO workspaces VALUES ('ws', 'default', '2026-01-01T00:00:00Z')")
        conn.execute(
            "INSERT INTO api_keys (id, workspace_id, name, prefix, key_hash, role, created_by, "
            "created_at) VALUES ('k1', 'ws', 'agent', 'kk_abc', ?, 'member', 'owner', "
            "'2026-01-01T00:00:00Z')",
            ("a" * 64,),
        )
        conn.execute("INSERT INTO oauth_clients VALUES ('c1', '{}', '2026-01-01T00:00:00Z')")
        conn.execute(
            "INSERT INTO oauth_grants (secret_hash, kind, client_id, workspace_id, key_id, "
            "scopes, family, expires_at, created_at) VALUES (?, 'access', 'c1', 'ws', 'k1', "
            "'[]', 'f', '2027-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
            ("b" * 64,),
        )
    upgrade_database(url)
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        assert conn.execute("SELECT id, role FROM api_keys").fetchall() == [("k1", "member")]
        assert conn.execute("SELECT key_id FROM oauth_grants").fetchall() == [("k1",)]
        conn.execute(
            "INSERT INTO api_keys (id, workspace_id, name, prefix, key_hash, role, created_by, "
            "created_at) VALUES ('k2', 'ws', 'sync', 'kk_def', ?, 'connector', 'owner', "
            "'2026-01-01T00:00:00Z')",
            ("c" * 64,),
        )
        # The foreign key still holds: deleting the key takes its grants with it.
        conn.execute("DELETE FROM api_keys WHERE id = 'k1'")
        assert conn.execute("SELECT count(*) FROM oauth_grants").fetchone() == (0,)
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        indexes = {row[1] for row in conn.execute("PRAGMA index_list(api_keys)")}
        assert "ix_api_keys_workspace" in indexes
