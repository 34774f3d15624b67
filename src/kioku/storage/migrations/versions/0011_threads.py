"""Threads: a memory may belong to an ordered thread (a chat session, a Slack thread, a
Markdown file's sections) and know its place in it.

- ``memories.thread``: the source's thread id, 1-300 characters, scoped to the context.
- ``memories.thread_position``: the memory's place in the thread (0, 1, 2, ...).
- ``ix_memories_thread``: neighbours of a place are found by (context, thread, position).

Recall uses them to bring a strong hit's neighbours along (docs/concepts.md, *Threads*). Both
columns stay NULL on older rows: they are simply not part of any thread.
"""

from __future__ import annotations

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0011_threads"
down_revision = "0010_provenance"
branch_labels = None
depends_on = None

_INDEX = (
    "CREATE INDEX ix_memories_thread ON memories "
    "(workspace_id, context_id, thread, thread_position) WHERE thread IS NOT NULL"
)

SQLITE = [
    "ALTER TABLE memories ADD COLUMN thread TEXT "
    "CHECK (thread IS NULL OR length(thread) BETWEEN 1 AND 300)",
    "ALTER TABLE memories ADD COLUMN thread_position INTEGER "
    "CHECK (thread_position IS NULL OR (thread IS NOT NULL AND thread_position >= 0))",
    _INDEX,
]

POSTGRES = [
    "ALTER TABLE memories ADD COLUMN thread text "
    "CHECK (thread IS NULL OR char_length(thread) BETWEEN 1 AND 300)",
    "ALTER TABLE memories ADD COLUMN thread_position bigint "
    "CHECK (thread_position IS NULL OR (thread IS NOT NULL AND thread_position >= 0))",
    _INDEX,
]

UPGRADES = {"sqlite": SQLITE, "postgresql": POSTGRES}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_memories_thread")
    op.execute("ALTER TABLE memories DROP COLUMN thread_position")
    op.execute("ALTER TABLE memories DROP COLUMN thread")
