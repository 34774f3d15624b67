"""The injection tripwire reads the whole text: verdicts taken on its first 2,048 characters
are cleared, and external memories without a verdict are indexed for the sweep that judges them.

Until issue 34 the tripwire judged only what is embedded (``EMBED_MAX_CHARS``, 2,048
characters of summary and content), so an order after that much filler was stored as
``instruction_like = false``. This clears the verdict of every external memory longer than
that; the ``verdict-sweep`` job (``service/jobs.py``) judges the whole text again within a
minute of the server starting, and reads judge a row without a verdict meanwhile. The partial
index ``ix_memories_unjudged`` keeps the sweep's look for work an index probe (it holds only
rows waiting for a verdict: usually none). PostgreSQL: as every workspace (row-level security).

Revision ID: 0019_rejudge_long_text
Revises: 0018_consent_quota
"""

from __future__ import annotations

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0019_rejudge_long_text"
down_revision = "0018_consent_quota"
branch_labels = None
depends_on = None

_CLEAR = (
    "UPDATE memories SET instruction_like = NULL WHERE trust_tier = 'external' "
    "AND {length}(summary) + {length}(content) + 1 > 2048"
)
_INDEX = (
    "CREATE INDEX ix_memories_unjudged ON memories (workspace_id) "
    "WHERE trust_tier = 'external' AND instruction_like IS NULL AND deleted_at IS NULL"
)

UPGRADES = {
    "sqlite": [_CLEAR.format(length="length"), _INDEX],
    "postgresql": [
        "SELECT set_config('kioku.workspace_id', '*', true)",
        _CLEAR.format(length="char_length"),
        _INDEX,
    ],
}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    # Cleared verdicts stay cleared: reads judge those rows (an older kioku does the same).
    op.execute("DROP INDEX IF EXISTS ix_memories_unjudged")
