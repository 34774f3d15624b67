"""OAuth 2.1 for MCP clients: registered (public) clients, pending consents, codes, tokens.

Every secret (consent ticket, code, access and refresh token) is stored as its SHA-256 only.

Revision ID: 0004_oauth
Revises: 0003_keys_audit
"""

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0004_oauth"
down_revision = "0003_keys_audit"
branch_labels = None
depends_on = None

SQLITE = [
    """
    CREATE TABLE oauth_clients (
        client_id   TEXT PRIMARY KEY,
        metadata    TEXT NOT NULL CHECK (json_valid(metadata)),
        created_at  TEXT NOT NULL
    )
    """,
    # A consent ticket, an authorization code, an access or a refresh token: one row each,
    # keyed by the hash of the secret. A grant always stands for an API key: revoking or
    # expiring the key ends every grant made with it.
    """
    CREATE TABLE oauth_grants (
        secret_hash   TEXT PRIMARY KEY CHECK (length(secret_hash) = 64),
        kind          TEXT NOT NULL CHECK (kind IN ('consent', 'code', 'access', 'refresh')),
        client_id     TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
        workspace_id  TEXT REFERENCES workspaces (id) ON DELETE CASCADE,
        key_id        TEXT REFERENCES api_keys (id) ON DELETE CASCADE,
        scopes        TEXT NOT NULL CHECK (json_valid(scopes)),
        params        TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(params)),
        family        TEXT NOT NULL,
        expires_at    TEXT NOT NULL,
        revoked_at    TEXT,
        created_at    TEXT NOT NULL,
        CHECK (kind = 'consent' OR (workspace_id IS NOT NULL AND key_id IS NOT NULL))
    )
    """,
    "CREATE INDEX ix_oauth_grants_family ON oauth_grants (family)",
]


# PostgreSQL: the same tables (see 0001 for the type choices), with SQLite's keys: clients and
# grants are found by client id and by secret hash before any workspace is known (and a
# consent ticket has no workspace yet), so neither can be keyed by workspace_id.
POSTGRES = [
    """
    CREATE TABLE oauth_clients (
        client_id   text PRIMARY KEY,
        metadata    jsonb NOT NULL,
        created_at  timestamptz NOT NULL
    )
    """,
    """
    CREATE TABLE oauth_grants (
        secret_hash   text PRIMARY KEY CHECK (char_length(secret_hash) = 64),
        kind          text NOT NULL CHECK (kind IN ('consent', 'code', 'access', 'refresh')),
        client_id     text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
        workspace_id  text REFERENCES workspaces (id) ON DELETE CASCADE,
        key_id        text REFERENCES api_keys (id) ON DELETE CASCADE,
        scopes        jsonb NOT NULL,
        params        jsonb NOT NULL DEFAULT '{}',
        family        text NOT NULL,
        expires_at    timestamptz NOT NULL,
        revoked_at    timestamptz,
        created_at    timestamptz NOT NULL,
        CHECK (kind = 'consent' OR (workspace_id IS NOT NULL AND key_id IS NOT NULL))
    )
    """,
    "CREATE INDEX ix_oauth_grants_family ON oauth_grants (family)",
]

UPGRADES = {"sqlite": SQLITE, "postgresql": POSTGRES}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    for table in ("oauth_grants", "oauth_clients"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
