"""The SQLite lexical index becomes one FTS5 table per workspace (PostgreSQL: nothing to do).

FTS5's ``bm25()`` counts N, avgdl and df over the table it ranks, and ``memories_fts`` held
every workspace of the file: one tenant's writes moved another's scores (a side channel) and
its postings lengthened another's queries. Upgrade moves each workspace's rows (same rowid =
``memories.seq``, same tokens) into ``memories_fts_<16 hex of sha256(workspace_id)>`` and
drops the shared table. Its delete trigger becomes one that queues ``(workspace_id, seq)`` in
``lexical_deletions``; the store removes the queued rows from each workspace's table before
its transaction commits (see ``kioku/storage/sqlite/lexical.py``, which creates the tables of
workspaces that store their first memory later; the DDL here is written out, frozen).
Downgrade moves the rows of live memories back into one ``memories_fts`` with its old trigger.
PostgreSQL keeps its tokens in a column of the memory row and already computes its statistics
per tenant: both directions are no-ops there.

Revision ID: 0009_lexical_per_workspace
Revises: 0008_connectors
"""

import hashlib

from alembic import op
from sqlalchemy import text

revision = "0009_lexical_per_workspace"
down_revision = "0008_connectors"
branch_labels = None
depends_on = None

_FTS = "USING fts5(tokens, tokenize = 'unicode61 remove_diacritics 0')"


def _table(workspace_id: str) -> str:
    return "memories_fts_" + hashlib.sha256(workspace_id.encode()).hexdigest()[:16]


def _is_sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"


def upgrade() -> None:
    if not _is_sqlite():
        return
    bind = op.get_bind()
    # Workspaces with an indexed memory. An FTS row whose memory is gone (there should be
    # none: the old trigger removed them) belongs to no workspace and goes with the old table.
    workspaces = bind.execute(
        text(
            "SELECT DISTINCT m.workspace_id FROM memories m "
            "JOIN memories_fts f ON f.rowid = m.seq ORDER BY m.workspace_id"
        )
    ).scalars()
    for workspace_id in list(workspaces):
        table = _table(workspace_id)
        op.execute(f"CREATE VIRTUAL TABLE {table} {_FTS}")
        bind.execute(
            text(
                f"INSERT INTO {table} (rowid, tokens) SELECT f.rowid, f.tokens "
                "FROM memories_fts f JOIN memories m ON m.seq = f.rowid "
                "WHERE m.workspace_id = :ws ORDER BY f.rowid"
            ),
            {"ws": workspace_id},
        )
    op.execute("DROP TRIGGER memories_fts_delete")
    op.execute("DROP TABLE memories_fts")
    op.execute("CREATE TABLE lexical_deletions (workspace_id TEXT NOT NULL, seq INTEGER NOT NULL)")
    op.execute(
        "CREATE TRIGGER memories_lexical_delete AFTER DELETE ON memories BEGIN "
        "INSERT INTO lexical_deletions (workspace_id, seq) VALUES (old.workspace_id, old.seq); "
        "END"
    )


def downgrade() -> None:
    if not _is_sqlite():
        return
    bind = op.get_bind()
    op.execute("DROP TRIGGER memories_lexical_delete")
    op.execute("DROP TABLE lexical_deletions")
    op.execute(f"CREATE VIRTUAL TABLE memories_fts {_FTS}")
    op.execute(
        "CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN "
        "DELETE FROM memories_fts WHERE rowid = old.seq; END"
    )
    tables = bind.execute(
        text(
            "SELECT name FROM sqlite_schema WHERE type = 'table' "
            "AND name GLOB 'memories_fts_*' AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
        )
    ).scalars()
    for table in list(tables):
        # Live memories only: a deletion still queued (not drained yet) stays deleted.
        op.execute(
            f"INSERT INTO memories_fts (rowid, tokens) SELECT rowid, tokens FROM {table} "
            "WHERE rowid IN (SELECT seq FROM memories) ORDER BY rowid"
        )
        op.execute(f"DROP TABLE {table}")
