"""A GIN index on ``memories.tags`` (PostgreSQL; SQLite: nothing to do).

A tags filter (``tags_any`` / ``tags_all``: ``tags ?| array``, ``tags ?& array``) had no index
on PostgreSQL: the vector leg's bounded count of the scope, and its exact search when the
filter leaves few rows, read every row of the workspace's contexts to find the tagged ones
(~600 ms at 100k memories under load, docs/benchmarks-postgres-scale.md). The default
``jsonb_ops`` operator class serves ``?|`` and ``?&`` (``jsonb_path_ops`` does not); the
planner combines it with the ``(workspace_id, context_id)`` index. SQLite keeps tags as JSON
text and filters the rows its other indexes already narrowed: no change there.

Revision ID: 0014_memory_tags_index
Revises: 0011_threads
"""

from __future__ import annotations

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0014_memory_tags_index"
down_revision = "0013_lexical_stats"
branch_labels = None
depends_on = None

UPGRADES: dict[str, list[str]] = {
    "sqlite": [],
    "postgresql": ["CREATE INDEX ix_memories_tags ON memories USING gin (tags)"],
}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_memories_tags")
