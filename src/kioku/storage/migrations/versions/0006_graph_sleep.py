"""The association graph and Sleep's reversible log (SPEC §6, §8).

- ``memory_edges``: one undirected edge per pair of memories of one context, stored once with
  ``source_id < target_id`` (code point order); ``weight`` in (0, 1]; ``origin`` says how it
  was made; ``trust_tier`` is ``external`` when either end is. Purging a memory or deleting its
  context removes its edges (cascade).
- ``sleep_runs``: one row per consolidation run of one context.
- ``sleep_actions``: every change a run made, in order, with the values before and after, so
  ``rollback_sleep`` can restore them exactly. A trigger refuses UPDATE (a rollback is a new
  fact about the run, not an edit of its log); rows go only with their run or context, or when
  a purge erases every trace of a memory.
- PostgreSQL: the three tables get the tenant policy of migration 0005.

Revision ID: 0006_graph_sleep
Revises: 0005_replicas
"""

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0006_graph_sleep"
down_revision = "0005_replicas"
branch_labels = None
depends_on = None

_ORIGINS = "'hebbian', 'declared', 'sleep'"
_STATUSES = "'running', 'done', 'failed', 'rolled_back'"

SQLITE = [
    f"""
    CREATE TABLE memory_edges (
        workspace_id  TEXT NOT NULL,
        context_id    TEXT NOT NULL,
        source_id     TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        target_id     TEXT NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        weight        REAL NOT NULL CHECK (weight > 0 AND weight <= 1),
        origin        TEXT NOT NULL CHECK (origin IN ({_ORIGINS})),
        trust_tier    TEXT NOT NULL CHECK (trust_tier IN ('trusted', 'external')),
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        PRIMARY KEY (workspace_id, source_id, target_id),
        CHECK (source_id < target_id),
        FOREIGN KEY (workspace_id, context_id)
            REFERENCES contexts (workspace_id, id) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX ix_memory_edges_target ON memory_edges (workspace_id, target_id)",
    "CREATE INDEX ix_memory_edges_context ON memory_edges (workspace_id, context_id)",
    f"""
    CREATE TABLE sleep_runs (
        id            TEXT NOT NULL PRIMARY KEY,
        workspace_id  TEXT NOT NULL,
        context_id    TEXT NOT NULL,
        status        TEXT NOT NULL CHECK (status IN ({_STATUSES})),
        trigger       TEXT NOT NULL CHECK (trigger IN ('schedule', 'manual')),
        started_at    TEXT NOT NULL,
        finished_at   TEXT,
        rolled_back_at TEXT,
        summary       TEXT NOT NULL DEFAULT '{{}}' CHECK (json_valid(summary)),
        error         TEXT,
        UNIQUE (workspace_id, id),
        FOREIGN KEY (workspace_id, context_id)
            REFERENCES contexts (workspace_id, id) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX ix_sleep_runs_context ON sleep_runs (workspace_id, context_id, started_at)",
    """
    CREATE TABLE sleep_actions (
        workspace_id  TEXT NOT NULL,
        run_id        TEXT NOT NULL,
        seq           INTEGER NOT NULL CHECK (seq >= 1),
        phase         TEXT NOT NULL,
        kind          TEXT NOT NULL,
        target        TEXT NOT NULL,
        before        TEXT CHECK (before IS NULL OR json_valid(before)),
        after         TEXT CHECK (after IS NULL OR json_valid(after)),
        note          TEXT,
        at            TEXT NOT NULL,
        PRIMARY KEY (workspace_id, run_id, seq),
        FOREIGN KEY (workspace_id, run_id)
            REFERENCES sleep_runs (workspace_id, id) ON DELETE CASCADE
    )
    """,
    """
    CREATE TRIGGER sleep_actions_no_update BEFORE UPDATE ON sleep_actions
    BEGIN SELECT RAISE(ABORT, 'sleep_actions is append-only'); END
    """,
]

SCOPE = "current_setting('kioku.workspace_id', true)"

POSTGRES = [
    f"""
    CREATE TABLE memory_edges (
        workspace_id  text NOT NULL,
        context_id    text NOT NULL,
        source_id     text NOT NULL,
        target_id     text NOT NULL,
        weight        double precision NOT NULL CHECK (weight > 0 AND weight <= 1),
        origin        text NOT NULL CHECK (origin IN ({_ORIGINS})),
        trust_tier    text NOT NULL CHECK (trust_tier IN ('trusted', 'external')),
        created_at    timestamptz NOT NULL,
        updated_at    timestamptz NOT NULL,
        PRIMARY KEY (workspace_id, source_id, target_id),
        CHECK (source_id COLLATE "C" < target_id COLLATE "C"),
        FOREIGN KEY (workspace_id, source_id)
            REFERENCES memories (workspace_id, id) ON DELETE CASCADE,
        FOREIGN KEY (workspace_id, target_id)
            REFERENCES memories (workspace_id, id) ON DELETE CASCADE,
        FOREIGN KEY (workspace_id, context_id)
            REFERENCES contexts (workspace_id, id) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX ix_memory_edges_target ON memory_edges (workspace_id, target_id)",
    "CREATE INDEX ix_memory_edges_context ON memory_edges (workspace_id, context_id)",
    f"""
    CREATE TABLE sleep_runs (
        id            text NOT NULL,
        workspace_id  text NOT NULL,
        context_id    text NOT NULL,
        status        text NOT NULL CHECK (status IN ({_STATUSES})),
        trigger       text NOT NULL CHECK (trigger IN ('schedule', 'manual')),
        started_at    timestamptz NOT NULL,
        finished_at   timestamptz,
        rolled_back_at timestamptz,
        summary       jsonb NOT NULL DEFAULT '{{}}',
        error         text,
        PRIMARY KEY (workspace_id, id),
        FOREIGN KEY (workspace_id, context_id)
            REFERENCES contexts (workspace_id, id) ON DELETE CASCADE
    )
    """,
    "CREATE INDEX ix_sleep_runs_context ON sleep_runs (workspace_id, context_id, started_at)",
    """
    CREATE TABLE sleep_actions (
        workspace_id  text NOT NULL,
        run_id        text NOT NULL,
        seq           integer NOT NULL CHECK (seq >= 1),
        phase         text NOT NULL,
        kind          text NOT NULL,
        target        text NOT NULL,
        before        jsonb,
        after         jsonb,
        note          text,
        at            timestamptz NOT NULL,
        PRIMARY KEY (workspace_id, run_id, seq),
        FOREIGN KEY (workspace_id, run_id)
            REFERENCES sleep_runs (workspace_id, id) ON DELETE CASCADE
    )
    """,
    """
    CREATE FUNCTION sleep_actions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'sleep_actions is append-only' USING ERRCODE = 'restrict_violation';
    END $$
    """,
    """
    CREATE TRIGGER sleep_actions_no_update BEFORE UPDATE ON sleep_actions
    FOR EACH ROW EXECUTE FUNCTION sleep_actions_append_only()
    """,
    *(
        statement
        for table in ("memory_edges", "sleep_runs", "sleep_actions")
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
    for table in ("sleep_actions", "sleep_runs", "memory_edges"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS sleep_actions_append_only()")
