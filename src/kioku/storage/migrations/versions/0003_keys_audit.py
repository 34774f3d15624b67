"""API keys (stored as SHA-256 hashes) and the append-only audit log.

Revision ID: 0003_keys_audit
Revises: 0002_feedback_state
"""

from alembic import op

from kioku.storage.migrations import run_for_dialect

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


# PostgreSQL: the same tables (see 0001 for the type choices). These two keep SQLite's keys:
# a key is found by its hash and touched by its id before any workspace is known, and an
# audit event may have no workspace at all, so neither can be keyed by workspace_id.
POSTGRES = [
    """
    CREATE TABLE api_keys (
        id            text PRIMARY KEY,
        workspace_id  text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        name          text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
        prefix        text NOT NULL,
        key_hash      text NOT NULL UNIQUE CHECK (char_length(key_hash) = 64),
        role          text NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
        context_ids   jsonb CHECK (context_ids IS NULL OR jsonb_typeof(context_ids) = 'array'),
        created_by    text NOT NULL,
        created_at    timestamptz NOT NULL,
        expires_at    timestamptz,
        revoked_at    timestamptz,
        last_used_at  timestamptz
    )
    """,
    "CREATE INDEX ix_api_keys_workspace ON api_keys (workspace_id, created_at)",
    """
    CREATE TABLE audit_events (
        seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        workspace_id  text,
        at            timestamptz NOT NULL,
        actor         text NOT NULL,
        channel       text NOT NULL,
        action        text NOT NULL CHECK (char_length(action) BETWEEN 1 AND 64),
        outcome       text NOT NULL CHECK (outcome IN ('ok', 'denied')),
        context_id    text,
        target        text,
        detail        jsonb NOT NULL DEFAULT '{}'
    )
    """,
    "CREATE INDEX ix_audit_workspace ON audit_events (workspace_id, seq)",
    # One function for UPDATE, DELETE and TRUNCATE (which skips row triggers, so PostgreSQL
    # needs a statement trigger that SQLite has no use for).
    """
    CREATE FUNCTION audit_events_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'audit_events is append-only' USING ERRCODE = 'restrict_violation';
    END
    $$
    """,
    "CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events "
    "FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()",
    "CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events "
    "FOR EACH ROW EXECUTE FUNCTION audit_events_append_only()",
    "CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events "
    "FOR EACH STATEMENT EXECUTE FUNCTION audit_events_append_only()",
]

UPGRADES = {"sqlite": SQLITE, "postgresql": POSTGRES}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    for table in ("audit_events", "api_keys"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
    if op.get_bind().dialect.name == "postgresql":
        # Dropping the table took its triggers, not the function they called.
        op.execute("DROP FUNCTION IF EXISTS audit_events_append_only()")
