"""Core schema: workspaces, contexts, memories, and the lexical index (FTS5 on SQLite, a
``tsvector`` column on PostgreSQL).

Revision ID: 0001_core
Revises:
"""

from alembic import op

from kioku.storage.migrations import run_for_dialect

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


# PostgreSQL (18, with pgvector) mirrors the SQLite schema: same tables, columns, NOT NULL and
# CHECK constraints, foreign keys and cascades. The differences are deliberate:
# - timestamps are timestamptz and JSON columns jsonb (the type itself refuses invalid JSON);
# - every key leads with workspace_id, so the tables can be distributed by tenant (Citus).
#   SQLite also keeps contexts.id and memories.id unique on their own; here they are unique
#   within their workspace (ids are server-made uuid4s, and every store call is scoped);
# - seq is an identity column; the lexical index is a column of the memory row (see below).
POSTGRES = [
    # Needs a superuser once per database; IF NOT EXISTS lets a pre-created extension through
    # (managed PostgreSQL: an administrator runs CREATE EXTENSION, kioku's role migrates).
    "CREATE EXTENSION IF NOT EXISTS vector",
    """
    CREATE TABLE workspaces (
        id          text PRIMARY KEY,
        name        text NOT NULL UNIQUE CHECK (char_length(name) BETWEEN 1 AND 64),
        created_at  timestamptz NOT NULL
    )
    """,
    """
    CREATE TABLE contexts (
        id                 text NOT NULL,
        workspace_id       text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
        name               text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 64),
        description        text NOT NULL DEFAULT '',
        trust_tier         text NOT NULL DEFAULT 'trusted'
                           CHECK (trust_tier IN ('trusted', 'external')),
        sleep_mode         text NOT NULL DEFAULT 'edges_only'
                           CHECK (sleep_mode IN ('off', 'edges_only', 'full')),
        search_config      jsonb NOT NULL DEFAULT '{}',
        embedding_model    text,
        embedding_dim      integer CHECK (embedding_dim IS NULL OR embedding_dim > 0),
        vector_generation  bigint NOT NULL DEFAULT 0,
        created_at         timestamptz NOT NULL,
        updated_at         timestamptz NOT NULL,
        PRIMARY KEY (workspace_id, id),
        UNIQUE (workspace_id, name)
    )
    """,
    # embedding is a pgvector `vector` without a fixed dimension: each context may use its own
    # model. An HNSW index needs a fixed dimension, so it is not built here; a later step adds
    # one partial index per dimension in use (on embedding::vector(n)).
    # lexical_tokens holds kioku's own tokens (NFKC, Sudachi, stemming all happen in kioku),
    # written by the store as a tsvector literal (::tsvector keeps every lexeme verbatim; its
    # positions carry the term counts), and lexical_length the number of tokens: BM25's
    # document length (see storage/postgres/search.py). Being columns of the row, they need
    # no delete trigger.
    """
    CREATE TABLE memories (
        seq               bigint GENERATED ALWAYS AS IDENTITY,
        id                text NOT NULL,
        workspace_id      text NOT NULL,
        context_id        text NOT NULL,
        summary           text NOT NULL CHECK (char_length(summary) BETWEEN 1 AND 500),
        content           text NOT NULL DEFAULT '',
        type              text NOT NULL DEFAULT 'note' CHECK (char_length(type) BETWEEN 1 AND 64),
        tags              jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(tags) = 'array'),
        importance        double precision NOT NULL DEFAULT 0.5
                          CHECK (importance BETWEEN 0.0 AND 1.0),
        delivery_mode     text NOT NULL DEFAULT 'on_recall'
                          CHECK (delivery_mode IN ('on_recall', 'always', 'on_trigger')),
        trigger_from      timestamptz,
        trigger_until     timestamptz,
        source_type       text NOT NULL
                          CHECK (source_type IN ('manual', 'api', 'import', 'connector', 'sleep')),
        source_uri        text,
        trust_tier        text NOT NULL CHECK (trust_tier IN ('trusted', 'external')),
        embedding_status  text NOT NULL DEFAULT 'pending'
                          CHECK (embedding_status IN ('pending', 'ready', 'failed')),
        embedding         vector,
        embedding_model   text,
        lexical_tokens    tsvector NOT NULL DEFAULT ''::tsvector,
        lexical_length    integer NOT NULL DEFAULT 0 CHECK (lexical_length >= 0),
        access_count      bigint NOT NULL DEFAULT 0 CHECK (access_count >= 0),
        last_accessed_at  timestamptz,
        superseded_by     text,
        created_at        timestamptz NOT NULL,
        updated_at        timestamptz NOT NULL,
        deleted_at        timestamptz,
        PRIMARY KEY (workspace_id, id),
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
    # The embedding queue is read oldest first (ORDER BY seq). SQLite's index on
    # (embedding_status) carries the rowid, which is seq; here seq is named.
    "CREATE INDEX ix_memories_pending ON memories (seq) WHERE embedding_status = 'pending'",
    "CREATE INDEX ix_memories_lexical ON memories USING gin (lexical_tokens)",
]

UPGRADES = {"sqlite": SQLITE, "postgresql": POSTGRES}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    # memories_fts exists on SQLite only. The vector extension stays on PostgreSQL: it may
    # predate kioku (created by an administrator) and other schemas may use it.
    for table in ("memories_fts", "memories", "contexts", "workspaces"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
