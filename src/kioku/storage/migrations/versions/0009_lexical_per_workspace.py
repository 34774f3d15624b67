"""The SQLite lexical index becomes one FTS5 table per workspace (PostgreSQL: nothing to do).

FTS5's ``bm25()`` counts N, avgdl and df over the table it ranks, and ``memories_fts`` held
every workspace of the file: one tenant's writes moved another's scores (a side channel) and
its postings lengthened another's queries. Upgrade moves each workspace's rows (same rowid =
``memories.seq``, same tokens) into ``memories_fts_<16 hex of sha256(workspace_id)>`` with a
delete trigger of its own, then drops the shared table and its trigger. Downgrade moves them
back. The DDL is written out here, frozen: ``kioku/storage/sqlite/lexical.py`` writes the same
for workspaces that store their first memory later. PostgreSQL keeps its tokens in a column of
the memory row and already computes its statistics per tenant: both directions are no-ops.

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
    # none: the trigger removed them) belongs to no workspace and goes with the old table.
    workspaces = bind.execute(
        text(
            "SELECT DISTINCT m.workspace_id FROM memories m "
            "JOIN memories_fts f ON f.rowid = m.seq ORDER BY m.workspace_id"
        )
    ).scalars()
    for workspace_id in list(workspaces):
        table = _table(workspace_id)
        literal = workspace_id.replace("'", "''")
        op.execute(f"CREATE VIRTUAL TABLE {table} {_FTS}")
        # exec_driver_sql: the id is a literal in the trigger, never read as a bind marker.
        bind.exec_driver_sql(
            f"CREATE TRIGGER {table}_delete AFTER DELETE ON memories "
            f"WHEN old.workspace_id = '{literal}' BEGIN "
            f"DELETE FROM {table} WHERE rowid = old.seq; END"
        )
        bind.execute(
            text(
                f"INSERT INTO {table} (rowid, tokens) SELECT f.rowid, f.tokens "
                "FROM memories_fts f JOIN memories m ON m.seq = f.rowid "
                "WHERE m.workspace_id = :ws ORDER BY f.rowid"
            ),
            {"ws": workspace_id},
        )
    op.execute("DROP TRIGGER IF EXISTS memories_fts_delete")
    op.execute("DROP TABLE memories_fts")


def downgrade() -> None:
    if not _is_sqlite():
        return
    bind = op.get_bind()
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
        op.execute(f"INSERT INTO memories_fts (rowid, tokens) SELECT rowid, tokens FROM {table}")
        op.execute(f"DROP TRIGGER IF EXISTS {table}_delete")
        op.execute(f"DROP TABLE {table}")
