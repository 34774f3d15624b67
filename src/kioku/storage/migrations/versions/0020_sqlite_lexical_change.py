"""Which change last touched a memory's searchable text (SQLite; PostgreSQL: migration 0017).

SQLite's lexical leg takes its candidates in a large scope from this process's tantivy index
(``storage/sqlite/lexical_sidecar.py``), which must never miss a memory that changed after it
was built or synced. SQLite has no transaction ids, so a clock does it: ``lexical_clock``
holds one counter, and every change to what the index holds of a memory moves it on and
stamps the memory's ``lexical_change`` with it, inside the writing transaction. An index
remembers the clock it read in its snapshot (its horizon); every later change has a greater
stamp (SQLite has one writer at a time, and a snapshot sees every commit before it or none of
a transaction), which a search reads from the database itself.

- insert: ``SQLiteLexicon.insert`` (the one place SQLite inserts memories) stamps a batch
  with one tick of the clock. Not a trigger: with an insert trigger on ``memories``, even one
  whose ``WHEN`` was false for every row, 20,000 inserts in batches of 500 ran at 12,400
  rows/s against 19,200 without. A row written before this migration keeps NULL: it is
  older than any index, which reads it when built;
- update of ``context_id``, ``trust_tier`` or liveness (``deleted_at`` set or cleared): a
  trigger, only when one of them changes (a recall's access count leaves it alone);
- new tokens (an edit, Sleep's merge) live in the workspace's FTS5 table, which has no
  trigger of its own (one table per workspace): ``SQLiteLexicon.update`` stamps those (an
  UPDATE of other columns never runs the trigger: SQLite leaves it out when compiling);
- ``ix_memories_lexical_change`` (workspace, change) finds the changed rows of a workspace.

Revision ID: 0020_sqlite_lexical_change
Revises: 0019_rejudge_long_text
"""

from __future__ import annotations

from kioku.storage.migrations import run_for_dialect

revision = "0020_sqlite_lexical_change"
down_revision = "0019_rejudge_long_text"
branch_labels = None
depends_on = None

_STAMP = (
    "UPDATE lexical_clock SET value = value + 1 WHERE id = 1; "
    "UPDATE memories SET lexical_change = (SELECT value FROM lexical_clock WHERE id = 1) "
    "WHERE seq = NEW.seq;"
)
SQLITE = [
    "CREATE TABLE lexical_clock (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL)",
    "INSERT INTO lexical_clock (id, value) VALUES (1, 0)",
    "ALTER TABLE memories ADD COLUMN lexical_change INTEGER",
    "CREATE TRIGGER memories_lexical_change_update "
    "AFTER UPDATE OF context_id, trust_tier, deleted_at ON memories "
    "WHEN OLD.context_id IS NOT NEW.context_id OR OLD.trust_tier IS NOT NEW.trust_tier "
    f"OR (OLD.deleted_at IS NULL) <> (NEW.deleted_at IS NULL) BEGIN {_STAMP} END",
    "CREATE INDEX ix_memories_lexical_change ON memories (workspace_id, lexical_change)",
]


UPGRADES = {"sqlite": SQLITE, "postgresql": []}
DOWNGRADES = {
    "sqlite": [
        "DROP TRIGGER IF EXISTS memories_lexical_change_update",
        "DROP INDEX IF EXISTS ix_memories_lexical_change",
        "ALTER TABLE memories DROP COLUMN lexical_change",
        "DROP TABLE IF EXISTS lexical_clock",
    ],
    "postgresql": [],
}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    run_for_dialect(DOWNGRADES)
