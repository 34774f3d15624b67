"""Which transaction last changed a memory's searchable text (PostgreSQL; SQLite: nothing).

The lexical index a replica keeps beside PostgreSQL for large scopes
(``storage/postgres/lexical_index.py``) must never miss a memory that changed after it was
built or synced. ``memories.lexical_xid`` names the transaction (``pg_current_xact_id()``)
that last inserted the row or changed what the index holds of it: its tokens, its length,
its context, its trust tier, whether it is soft-deleted. The index remembers the horizon of
the snapshot it last read (``pg_snapshot_xmin``: every transaction below it had ended), and
a search adds the memories with ``lexical_xid >= horizon`` from the database itself, so a
write is searchable the moment it commits, on every replica.

- insert: the column's default (a row written before this migration keeps NULL: it is older
  than any index, which reads it when built);
- update: a BEFORE UPDATE trigger stamps it only when one of those columns changes (a recall's
  access count, importance or tags leave it alone: the index does not hold them, and the
  search's exact re-score in PostgreSQL reads them);
- ``ix_memories_lexical_xid`` (workspace, xid) finds the changed rows of a workspace, and
  the column's statistics are gathered at once (``ANALYZE memories (lexical_xid)``: a sample,
  about a second at a million rows).

Revision ID: 0017_lexical_change_xid
Revises: 0016_hnsw_halfvec
"""

from __future__ import annotations

from alembic import op

revision = "0017_lexical_change_xid"
down_revision = "0016_hnsw_halfvec"
branch_labels = None
depends_on = None

POSTGRES = [
    # No default while adding: a volatile default would rewrite every existing row.
    "ALTER TABLE memories ADD COLUMN lexical_xid xid8",
    "ALTER TABLE memories ALTER COLUMN lexical_xid SET DEFAULT pg_current_xact_id()",
    """
    CREATE FUNCTION memories_lexical_xid() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.lexical_xid := pg_current_xact_id();
        RETURN NEW;
    END $$
    """,
    "CREATE TRIGGER memories_lexical_xid BEFORE UPDATE ON memories FOR EACH ROW "
    "WHEN (OLD.lexical_tokens IS DISTINCT FROM NEW.lexical_tokens "
    "OR OLD.lexical_length IS DISTINCT FROM NEW.lexical_length "
    "OR OLD.context_id IS DISTINCT FROM NEW.context_id "
    "OR OLD.trust_tier IS DISTINCT FROM NEW.trust_tier "
    "OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL)) "
    "EXECUTE FUNCTION memories_lexical_xid()",
    "CREATE INDEX ix_memories_lexical_xid ON memories (workspace_id, lexical_xid)",
    # The planner's statistics for the new column (all NULL so far): without them it guesses
    # that a third of the rows pass ``lexical_xid >= x`` (a 1M table's sync would scan it all).
    "ANALYZE memories (lexical_xid)",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in POSTGRES:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS memories_lexical_xid ON memories")
    op.execute("DROP FUNCTION IF EXISTS memories_lexical_xid()")
    op.execute("DROP INDEX IF EXISTS ix_memories_lexical_xid")
    op.execute("ALTER TABLE memories DROP COLUMN IF EXISTS lexical_xid")
