"""Provenance that outlives context changes: who owns an external id, and external taint.

- ``memories.external_owner``: the channel that wrote the memory's ``external_id`` —
  ``ingest:key:<id>`` or ``ingest:local`` (the API key, or the local operator, that ingested
  it), ``slack:<source>``
  or ``markdown``. An external id is unique per *owner* among a context's live memories, and a
  connector only ever sees (updates, deletes, learns of) the ids it owns: a connector key
  cannot rewrite or delete an imported memory, nor another key's (issue 18, item 1).
  Backfill: rows of a context bound to a Slack connector go to ``slack:<source>``; other
  connector rows to the workspace's one ingest connector if it has exactly one (else
  ``ingest:legacy``: a worker then re-creates them beside the old ones); the rest (``import``)
  to ``markdown``.
- ``memories.tainted``: the text is external whatever its context — written by a connector,
  or derived (a Sleep summary) from a memory that was external when it was derived. A
  context's tier change recomputes every other row's tier from the context, never these
  (item 3). Backfill: connector rows, and Sleep rows that are external now.
- PostgreSQL: the backfill runs with ``kioku.workspace_id = '*'`` (row-level security).

Revision ID: 0010_provenance
Revises: 0009_lexical_per_workspace
"""

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0010_provenance"
down_revision = "0009_lexical_per_workspace"
branch_labels = None
depends_on = None

_OWNER_BACKFILL = """
    UPDATE memories SET external_owner = COALESCE(
        (SELECT 'slack:' || c.name FROM contexts x JOIN connectors c
         ON c.workspace_id = x.workspace_id AND c.id = x.connector_id
         WHERE x.workspace_id = memories.workspace_id AND x.id = memories.context_id
         AND c.kind = 'slack'),
        CASE WHEN source_type = 'connector' THEN COALESCE(
            (SELECT CASE WHEN count(*) = 1 THEN CASE WHEN max(c.name) LIKE 'key:%'
             THEN 'ingest:' || max(c.name) ELSE 'ingest:local' END END FROM connectors c
             WHERE c.workspace_id = memories.workspace_id AND c.kind = 'ingest'),
            'ingest:legacy') END,
        'markdown')
    WHERE external_id IS NOT NULL
"""
_TAINT_BACKFILL = (
    "UPDATE memories SET tainted = {true} WHERE source_type = 'connector' "
    "OR (source_type = 'sleep' AND trust_tier = 'external')"
)
_INDEX = [
    "DROP INDEX ux_memories_external",
    "CREATE UNIQUE INDEX ux_memories_external ON memories "
    "(workspace_id, context_id, external_owner, external_id) "
    "WHERE external_id IS NOT NULL AND deleted_at IS NULL",
]

SQLITE = [
    "ALTER TABLE memories ADD COLUMN external_owner TEXT "
    "CHECK (external_owner IS NULL OR length(external_owner) BETWEEN 1 AND 300)",
    "ALTER TABLE memories ADD COLUMN tainted INTEGER NOT NULL DEFAULT 0 CHECK (tainted IN (0, 1))",
    _OWNER_BACKFILL,
    _TAINT_BACKFILL.format(true="1"),
    *_INDEX,
]

POSTGRES = [
    "SELECT set_config('kioku.workspace_id', '*', true)",
    "ALTER TABLE memories ADD COLUMN external_owner text "
    "CHECK (external_owner IS NULL OR char_length(external_owner) BETWEEN 1 AND 300)",
    "ALTER TABLE memories ADD COLUMN tainted boolean NOT NULL DEFAULT false",
    _OWNER_BACKFILL,
    _TAINT_BACKFILL.format(true="true"),
    *_INDEX,
]

UPGRADES = {"sqlite": SQLITE, "postgresql": POSTGRES}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    # Two owners may hold one external id by now: the old index keeps the newest live one.
    if op.get_bind().dialect.name == "postgresql":
        op.execute("SELECT set_config('kioku.workspace_id', '*', true)")
    op.execute("DROP INDEX IF EXISTS ux_memories_external")
    op.execute(
        "UPDATE memories SET external_id = NULL WHERE external_id IS NOT NULL "
        "AND deleted_at IS NULL AND EXISTS (SELECT 1 FROM memories n "
        "WHERE n.workspace_id = memories.workspace_id AND n.context_id = memories.context_id "
        "AND n.external_id = memories.external_id AND n.deleted_at IS NULL "
        "AND (n.created_at > memories.created_at "
        "OR (n.created_at = memories.created_at AND n.id > memories.id)))"
    )
    op.execute(
        "CREATE UNIQUE INDEX ux_memories_external ON memories "
        "(workspace_id, context_id, external_id) "
        "WHERE external_id IS NOT NULL AND deleted_at IS NULL"
    )
    op.execute("ALTER TABLE memories DROP COLUMN tainted")
    op.execute("ALTER TABLE memories DROP COLUMN external_owner")
