"""The feedback lane (append-only retrieval feedback), the agent state lane (TTL key/value),
and the stored verdict of the instruction detector on each memory.

Neither table is joined into the FTS index or the vectors: nothing here can be recalled.

Revision ID: 0002_feedback_state
Revises: 0001_core
"""

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0002_feedback_state"
down_revision = "0001_core"
branch_labels = None
depends_on = None

SQLITE = [
    # Whether a memory's text reads like instructions to an agent, judged once per text change
    # (the detector is costly on large texts); NULL means "not judged yet": judged on read.
    "ALTER TABLE memories ADD COLUMN instruction_like INTEGER "
    "CHECK (instruction_like IS NULL OR instruction_like IN (0, 1))",
    # The memory reference cascades (purge erases a memory's feedback with it); there is no
    # direct foreign key to the context because the context's cascade would reach this table
    # before the memory's and trip the no-delete trigger. A context delete still removes every
    # event: it deletes the memories, and their feedback goes with them.
    """
    CREATE TABLE retrieval_feedback (
        seq           INTEGER PRIMARY KEY AUTOINCREMENT,
        id            TEXT NOT NULL UNIQUE,
        workspace_id  TEXT NOT NULL,
        context_id    TEXT NOT NULL,
        memory_id     TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        helpful       INTEGER NOT NULL CHECK (helpful IN (0, 1)),
        query         TEXT CHECK (query IS NULL OR length(query) BETWEEN 1 AND 4000),
        note          TEXT CHECK (note IS NULL OR length(note) BETWEEN 1 AND 2000),
        actor         TEXT NOT NULL CHECK (length(actor) BETWEEN 1 AND 200),
        channel       TEXT NOT NULL,
        created_at    TEXT NOT NULL
    )
    """,
    "CREATE INDEX ix_feedback_memory ON retrieval_feedback (workspace_id, memory_id)",
    "CREATE INDEX ix_feedback_context ON retrieval_feedback (workspace_id, context_id, seq)",
    """
    CREATE TRIGGER retrieval_feedback_no_update BEFORE UPDATE ON retrieval_feedback BEGIN
        SELECT RAISE(ABORT, 'retrieval_feedback is append-only');
    END
    """,
    # Deleting an event is refused while its memory exists: only the purge cascade may.
    """
    CREATE TRIGGER retrieval_feedback_no_delete BEFORE DELETE ON retrieval_feedback
    WHEN EXISTS (SELECT 1 FROM memories WHERE id = old.memory_id) BEGIN
        SELECT RAISE(ABORT, 'retrieval_feedback is append-only');
    END
    """,
    """
    CREATE TABLE agent_states (
        workspace_id  TEXT NOT NULL,
        context_id    TEXT NOT NULL,
        key           TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 256),
        value         TEXT NOT NULL CHECK (json_valid(value)),
        expires_at    TEXT,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        PRIMARY KEY (workspace_id, context_id, key),
        FOREIGN KEY (workspace_id, context_id)
            REFERENCES contexts (workspace_id, id) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX ix_agent_states_expiry ON agent_states (workspace_id, context_id, expires_at) "
    "WHERE expires_at IS NOT NULL",
]


# PostgreSQL: the same tables (see 0001 for the type choices); 0/1 flags become booleans.
POSTGRES = [
    "ALTER TABLE memories ADD COLUMN instruction_like boolean",
    # The memory reference includes workspace_id (memories are keyed by it), so an event can
    # only point at a memory of its own workspace. No context foreign key, as on SQLite.
    """
    CREATE TABLE retrieval_feedback (
        seq           bigint GENERATED ALWAYS AS IDENTITY,
        id            text NOT NULL,
        workspace_id  text NOT NULL,
        context_id    text NOT NULL,
        memory_id     text NOT NULL,
        helpful       boolean NOT NULL,
        query         text CHECK (query IS NULL OR char_length(query) BETWEEN 1 AND 4000),
        note          text CHECK (note IS NULL OR char_length(note) BETWEEN 1 AND 2000),
        actor         text NOT NULL CHECK (char_length(actor) BETWEEN 1 AND 200),
        channel       text NOT NULL,
        created_at    timestamptz NOT NULL,
        PRIMARY KEY (workspace_id, id),
        FOREIGN KEY (workspace_id, memory_id)
            REFERENCES memories (workspace_id, id) ON DELETE CASCADE
    )
    """,
    # seq is named where SQLite's index carries it as the rowid (newest first per memory); the
    # index also serves the purge cascade, which PostgreSQL does not index on its own.
    "CREATE INDEX ix_feedback_memory ON retrieval_feedback (workspace_id, memory_id, seq)",
    "CREATE INDEX ix_feedback_context ON retrieval_feedback (workspace_id, context_id, seq)",
    # One function for the three triggers. A DELETE passes only once its memory is gone, which
    # is the purge cascade (it runs after the memory's row is deleted). restrict_violation is
    # an integrity error, as SQLite's RAISE(ABORT) is.
    """
    CREATE FUNCTION retrieval_feedback_append_only() RETURNS trigger
    LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' AND NOT EXISTS (
            SELECT 1 FROM memories WHERE workspace_id = OLD.workspace_id AND id = OLD.memory_id
        ) THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'retrieval_feedback is append-only' USING ERRCODE = 'restrict_violation';
    END
    $$
    """,
    "CREATE TRIGGER retrieval_feedback_no_update BEFORE UPDATE ON retrieval_feedback "
    "FOR EACH ROW EXECUTE FUNCTION retrieval_feedback_append_only()",
    "CREATE TRIGGER retrieval_feedback_no_delete BEFORE DELETE ON retrieval_feedback "
    "FOR EACH ROW EXECUTE FUNCTION retrieval_feedback_append_only()",
    # TRUNCATE skips row triggers; SQLite has no such statement, PostgreSQL needs the guard.
    "CREATE TRIGGER retrieval_feedback_no_truncate BEFORE TRUNCATE ON retrieval_feedback "
    "FOR EACH STATEMENT EXECUTE FUNCTION retrieval_feedback_append_only()",
    """
    CREATE TABLE agent_states (
        workspace_id  text NOT NULL,
        context_id    text NOT NULL,
        key           text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 256),
        value         jsonb NOT NULL,
        expires_at    timestamptz,
        created_at    timestamptz NOT NULL,
        updated_at    timestamptz NOT NULL,
        PRIMARY KEY (workspace_id, context_id, key),
        FOREIGN KEY (workspace_id, context_id)
            REFERENCES contexts (workspace_id, id) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX ix_agent_states_expiry ON agent_states (workspace_id, context_id, expires_at) "
    "WHERE expires_at IS NOT NULL",
]

UPGRADES = {"sqlite": SQLITE, "postgresql": POSTGRES}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    for table in ("agent_states", "retrieval_feedback"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
    if op.get_bind().dialect.name == "postgresql":
        # Dropping the table took its triggers, not the function they called.
        op.execute("DROP FUNCTION IF EXISTS retrieval_feedback_append_only()")
    op.execute("ALTER TABLE memories DROP COLUMN instruction_like")
