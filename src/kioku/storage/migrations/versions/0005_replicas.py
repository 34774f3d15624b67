"""Several replicas on one database: job claims, embedding leases, row-level security.

- ``job_claims``: one row per background job (a state sweep, later Sleep); a replica runs a
  job only after winning its row with a conditional upsert, so one replica runs each period.
- ``memories.embedding_lease_until``: a worker claims pending memories for a while; the other
  replicas' workers skip them instead of embedding the same texts twice.
- PostgreSQL only: row-level security on every tenant table, keyed by the transaction's
  ``kioku.workspace_id`` setting (see ``storage/postgres/connection.py``). It is a second wall
  behind the service's checks and the ``workspace_id`` in every query: a query that forgot
  its tenant sees no rows at all. FORCE applies it to the tables' owner as well; superusers
  and roles with BYPASSRLS are never subject to it (run kioku as neither; see
  docs/scaling.md).

Revision ID: 0005_replicas
Revises: 0004_oauth
"""

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0005_replicas"
down_revision = "0004_oauth"
branch_labels = None
depends_on = None

SQLITE = [
    """
    CREATE TABLE job_claims (
        name           TEXT PRIMARY KEY,
        holder         TEXT NOT NULL,
        claimed_at     TEXT NOT NULL,
        claimed_until  TEXT NOT NULL,
        runs           INTEGER NOT NULL DEFAULT 1
    )
    """,
    "ALTER TABLE memories ADD COLUMN embedding_lease_until TEXT",
]

SCOPE = "current_setting('kioku.workspace_id', true)"
"""The transaction's tenant; ``'*'`` for work that is no one tenant's, NULL/'' for none."""

TENANT_TABLES = (
    # table, the column holding the tenant
    ("workspaces", "id"),
    ("contexts", "workspace_id"),
    ("memories", "workspace_id"),
    ("retrieval_feedback", "workspace_id"),
    ("agent_states", "workspace_id"),
    ("api_keys", "workspace_id"),
    ("audit_events", "workspace_id"),
)


def _row_level_security(table: str, column: str) -> list[str]:
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        # USING filters what is read, updated and deleted; with no WITH CHECK clause the same
        # condition is checked on every row written: no tenant can write another's rows.
        f"CREATE POLICY tenant_isolation ON {table} USING ({column} = {SCOPE} OR {SCOPE} = '*')",
    ]


POSTGRES = [
    """
    CREATE TABLE job_claims (
        name           text PRIMARY KEY,
        holder         text NOT NULL,
        claimed_at     timestamptz NOT NULL,
        claimed_until  timestamptz NOT NULL,
        runs           bigint NOT NULL DEFAULT 1
    )
    """,
    "ALTER TABLE memories ADD COLUMN embedding_lease_until timestamptz",
    *(s for table, column in TENANT_TABLES for s in _row_level_security(table, column)),
]

UPGRADES = {"sqlite": SQLITE, "postgresql": POSTGRES}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table, _ in TENANT_TABLES:
            op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
            op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
            op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE memories DROP COLUMN embedding_lease_until")
    op.execute("DROP TABLE IF EXISTS job_claims")
