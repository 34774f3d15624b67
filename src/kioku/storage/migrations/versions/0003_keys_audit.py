"""API keys (stored as SHA-256 hashes) and the append-only audit log.

Revision ID: 0003_keys_audit
Revises: 0002_feedback_state
"""

from alembic import op

revision = "0003_keys_audit"
down_revision = "0002_feedback_state"
branch_labels = None
depends_on = None

SQLITE = [
    """
    CREATE TABLE api_keys (
        id            TEXT PRIMARY KEY,
        workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        name          TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
        prefix        TEXT NOT NULL,
        key_hash      TEXT NOT NULL UNIQUE CHECK (length(key_hash) = 64),
        role          TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
        context_ids   TEXT CHECK (context_ids IS NULL OR
                              (json_valid(context_ids) AND json_type(context_ids) = 'array')),
        created_by    TEXT NOT NULL,
        created_at    TEXT NOT NULL,
        expires_at    TEXT,
        revoked_at    TEXT,
        last_used_at  TEXT
    )
    """,
    "CREATE INDEX ix_api_keys_workspace ON api_keys (workspace_id, created_at)",
    # workspace_id is NULL for a denied attempt nobody could be identified for (a bad key).
    """
    CREATE TABLE audit_events (
        seq           INTEGER PRIMARY KEY AUTOINCREMENT,
        workspace_id  TEXT,
        at            TEXT NOT NULL,
        actor         TEXT NOT NULL,
        channel       TEXT NOT NULL,
        action        TEXT NOT NULL CHECK (length(action) BETWEEN 1 AND 64),
        outcome       TEXT NOT NULL CHECK (outcome IN ('ok', 'denied')),
        context_id    TEXT,
        target        TEXT,
        detail        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(detail))
    )
    """,
    "CREATE INDEX ix_audit_workspace ON audit_events (workspace_id, seq)",
    """
    CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events BEGIN
        SELECT RAISE(ABORT, 'audit_events is append-only');
    END
    """,
    """
    CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events BEGIN
        SELECT RAISE(ABORT, 'audit_events is append-only');
    END
    """,
]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect != "sqlite":
        raise RuntimeError(f"kioku has no migration for the {dialect} backend yet")
    for statement in SQLITE:
        op.execute(statement)


def downgrade() -> None:
    for table in ("audit_events", "api_keys"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
