"""Core schema: workspaces, contexts, memories (+ FTS5 lexical index on SQLite).

Revision ID: 0001_core
Revises:
"""

from alembic import op

revision = "0001_core"
down_revision = None
branch_labels = None
depends_on = None

SQLITE = [
    """
    CREATE TABLE workspaces (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 64),
        created_at  TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE contexts (
        id                 TEXT PRIMARY KEY,
        workspace_id       TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name               TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
        description        TEXT NOT NULL DEFAULT '',
        trust_tier         TEXT NOT NULL DEFAULT 'trusted'
                           CHECK (trust_tier IN ('trusted', 'external')),
        sleep_mode         TEXT NOT NULL DEFAULT 'edges_only'
                           CHECK (sleep_mode IN ('off', 'edges_only', 'full')),
        search_config      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(search_config)),
        embedding_model    TEXT,
        embedding_dim      INTEGER CHECK (embedding_dim IS NULL OR embedding_dim > 0),
        vector_generation  INTEGER NOT NULL DEFAULT 0,
        created_at         TEXT NOT NULL,
        updated_at         TEXT NOT NULL,
        UNIQUE (workspace_id, name),
        UNIQUE (workspace_id, id)
    )
    """,
    """
    CREATE TABLE memories (
        seq               INTEGER PRIMARY KEY AUTOINCREMENT,
        id                TEXT NOT NULL UNIQUE,
        workspace_id      TEXT NOT NULL,
        context_id        TEXT NOT NULL,
        summary           TEXT NOT NULL CHECK (length(summary) BETWEEN 1 AND 500),
        content           TEXT NOT NULL DEFAULT '',
        type              TEXT NOT NULL DEFAULT 'note' CHECK (length(type) BETWEEN 1 AND 64),
        tags              TEXT NOT NULL DEFAULT '[]'
                          CHECK (json_valid(tags) AND json_type(tags) = 'array'),
        importance        REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0.0 AND 1.0),
        delivery_mode     TEXT NOT NULL DEFAULT 'on_recall'
                          CHECK (delivery_mode IN ('on_recall', 'always', 'on_trigger')),
        trigger_from      TEXT,
        trigger_until     TEXT,
        source_type       TEXT NOT NULL
                          CHECK (source_type IN ('manual', 'api', 'import', 'connector', 'sleep')),
        source_uri        TEXT,
        trust_tier        TEXT NOT NULL CHECK (trust_tier IN ('trusted', 'external')),
        embedding_status  TEXT NOT NULL DEFAULT 'pending'
                          CHECK (embedding_status IN ('pending', 'ready', 'failed')),
        embedding         BLOB,
        embedding_model   TEXT,
        access_count      INTEGER NOT NULL DEFAULT 0 CHECK (access_count >= 0),
        last_accessed_at  TEXT,
        superseded_by     TEXT,
        created_at        TEXT NOT NULL,
        updated_at        TEXT NOT NULL,
        deleted_at        TEXT,
        CHECK ((delivery_mode = 'on_trigger') = (trigger_from IS NOT NULL)),
        CHECK (trigger_until IS NULL
               OR (trigger_from IS NOT NULL AND trigger_until > trigger_from)),
        CHECK ((embedding_status = 'ready') = (embedding IS NOT NULL)),
        FOREIGN KEY (workspace_id, context_id)
            REFERENCES contexts (workspace_id, id) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX ix_memories_listing ON memories (workspace_id, context_id, created_at, id)",
    "CREATE INDEX ix_memories_delivery ON memories (workspace_id, context_id, delivery_mode)",
    "CREATE INDEX ix_memories_pending ON memories (embedding_status) "
    "WHERE embedding_status = 'pending'",
    """
    CREATE VIRTUAL TABLE memories_fts USING fts5(
        tokens, tokenize = 'unicode61 remove_diacritics 0'
    )
    """,
    # The FTS row dies with its memory whatever deletes it (purge, context delete cascade).
    """
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        DELETE FROM memories_fts WHERE rowid = old.seq;
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
    for table in ("memories_fts", "memories", "contexts", "workspaces"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
