"""Connectors: where external text comes from, and what keeps its ingestion idempotent.

- ``connectors``: one row per source feeding a workspace (a Slack export, an ingestion
  worker), by ``(workspace_id, kind, name)``; ``config`` holds what the source needs to find
  its contexts again (a Slack channel id → context id map).
- ``contexts.connector_id``: the connector a context is bound to. SPEC §2: such a context is
  always ``external`` (the service refuses to make it trusted).
- ``memories.external_id``: the source's own id for a memory (a Slack thread's ``ts``, a
  Markdown section's ``path#anchor``, an ingest op's ``external_id``). Unique among a
  context's *live* memories, so a re-import finds the memory to leave alone or update in
  place, and a forgotten one can come back as a new memory.
- ``ingest_requests``: the answer to each ``Idempotency-Key`` (per context), so a replayed
  request changes nothing and gets the same per-op results. Rows go with their context.
- ``api_keys.role`` may be ``connector``: a key that can only ingest, and whose every write
  is stamped ``source_type=connector``. SQLite cannot change a CHECK in place: the table is
  rebuilt (nothing in it changes; ``oauth_grants`` keeps referring to it by name).
- PostgreSQL: the new tables get the tenant policy of migration 0005.

Revision ID: 0008_connectors
Revises: 0006_graph_sleep
"""

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0008_connectors"
down_revision = "0006_graph_sleep"
branch_labels = None
depends_on = None

_KINDS = "'slack', 'ingest'"
_ROLES = "'owner', 'admin', 'member', 'viewer', 'connector'"

SQLITE = [
    f"""
    CREATE TABLE connectors (
        id            TEXT NOT NULL PRIMARY KEY,
        workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        kind          TEXT NOT NULL CHECK (kind IN ({_KINDS})),
        name          TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        config        TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(config)),
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        UNIQUE (workspace_id, kind, name),
        UNIQUE (workspace_id, id)
    )
    """,
    "ALTER TABLE contexts ADD COLUMN connector_id TEXT REFERENCES connectors (id)",
    "ALTER TABLE memories ADD COLUMN external_id TEXT "
    "CHECK (external_id IS NULL OR length(external_id) BETWEEN 1 AND 512)",
    "CREATE UNIQUE INDEX ux_memories_external ON memories (workspace_id, context_id, external_id) "
    "WHERE external_id IS NOT NULL AND deleted_at IS NULL",
    """
    CREATE TABLE ingest_requests (
        workspace_id     TEXT NOT NULL,
        context_id       TEXT NOT NULL,
        idempotency_key  TEXT NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 200),
        request_hash     TEXT NOT NULL,
        response         TEXT NOT NULL CHECK (json_valid(response)),
        created_at       TEXT NOT NULL,
        PRIMARY KEY (workspace_id, context_id, idempotency_key),
        FOREIGN KEY (workspace_id, context_id)
            REFERENCES contexts (workspace_id, id) ON DELETE CASCADE
    )
    """,
    f"""
    CREATE TABLE api_keys_0008 (
        id            TEXT PRIMARY KEY,
        workspace_id  TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        name          TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
        prefix        TEXT NOT NULL,
        key_hash      TEXT NOT NULL UNIQUE CHECK (length(key_hash) = 64),
        role          TEXT NOT NULL CHECK (role IN ({_ROLES})),
        context_ids   TEXT CHECK (context_ids IS NULL OR
                              (json_valid(context_ids) AND json_type(context_ids) = 'array')),
        created_by    TEXT NOT NULL,
        created_at    TEXT NOT NULL,
        expires_at    TEXT,
        revoked_at    TEXT,
        last_used_at  TEXT
    )
    """,
    "INSERT INTO api_keys_0008 SELECT id, workspace_id, name, prefix, key_hash, role, "
    "context_ids, created_by, created_at, expires_at, revoked_at, last_used_at FROM api_keys",
    "DROP TABLE api_keys",
    "ALTER TABLE api_keys_0008 RENAME TO api_keys",
    "CREATE INDEX ix_api_keys_workspace ON api_keys (workspace_id, created_at)",
]

SCOPE = "current_setting('kioku.workspace_id', true)"

POSTGRES = [
    f"""
    CREATE TABLE connectors (
        id            text NOT NULL,
        workspace_id  text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        kind          text NOT NULL CHECK (kind IN ({_KINDS})),
        name          text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
        config        jsonb NOT NULL DEFAULT '{{}}',
        created_at    timestamptz NOT NULL,
        updated_at    timestamptz NOT NULL,
        PRIMARY KEY (workspace_id, id),
        UNIQUE (workspace_id, kind, name)
    )
    """,
    "ALTER TABLE contexts ADD COLUMN connector_id text",
    "ALTER TABLE contexts ADD FOREIGN KEY (workspace_id, connector_id) "
    "REFERENCES connectors (workspace_id, id)",
    "ALTER TABLE memories ADD COLUMN external_id text "
    "CHECK (external_id IS NULL OR char_length(external_id) BETWEEN 1 AND 512)",
    "CREATE UNIQUE INDEX ux_memories_external ON memories (workspace_id, context_id, external_id) "
    "WHERE external_id IS NOT NULL AND deleted_at IS NULL",
    """
    CREATE TABLE ingest_requests (
        workspace_id     text NOT NULL,
        context_id       text NOT NULL,
        idempotency_key  text NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 200),
        request_hash     text NOT NULL,
        response         jsonb NOT NULL,
        created_at       timestamptz NOT NULL,
        PRIMARY KEY (workspace_id, context_id, idempotency_key),
        FOREIGN KEY (workspace_id, context_id)
            REFERENCES contexts (workspace_id, id) ON DELETE CASCADE
    )
    """,
    "ALTER TABLE api_keys DROP CONSTRAINT api_keys_role_check",
    f"ALTER TABLE api_keys ADD CONSTRAINT api_keys_role_check CHECK (role IN ({_ROLES}))",
    *(
        statement
        for table in ("connectors", "ingest_requests")
        for statement in (
            f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
            f"CREATE POLICY tenant_isolation ON {table} "
            f"USING (workspace_id = {SCOPE} OR {SCOPE} = '*')",
        )
    ),
]

UPGRADES = {"sqlite": SQLITE, "postgresql": POSTGRES}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS ingest_requests")
    op.execute("DROP INDEX IF EXISTS ux_memories_external")
    op.execute("ALTER TABLE memories DROP COLUMN external_id")
    op.execute("ALTER TABLE contexts DROP COLUMN connector_id")
    op.execute("DROP TABLE IF EXISTS connectors")
