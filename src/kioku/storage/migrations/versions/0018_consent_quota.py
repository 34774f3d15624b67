"""Consent tickets bounded per OAuth client and per address (issue 34, item 4).

``/authorize`` is open to anyone who knows a client id, and each call parks a consent ticket.
``oauth_grants.address`` records which address opened a ticket (consent tickets only; NULL on
codes and tokens), so opening one can drop the oldest live tickets of the same client or the
same address past their quotas (``kioku.service.oauth``). Two partial indexes find a client's
and an address's tickets, newest first, without reading the codes and tokens.

Revision ID: 0018_consent_quota
Revises: 0017_lexical_change_xid
"""

from __future__ import annotations

from alembic import op

from kioku.storage.migrations import run_for_dialect

revision = "0018_consent_quota"
down_revision = "0017_lexical_change_xid"
branch_labels = None
depends_on = None

_INDEXES = [
    "CREATE INDEX ix_oauth_grants_consent_client ON oauth_grants (client_id, created_at) "
    "WHERE kind = 'consent'",
    "CREATE INDEX ix_oauth_grants_consent_address ON oauth_grants (address, created_at) "
    "WHERE kind = 'consent'",
]
UPGRADES = {
    "sqlite": ["ALTER TABLE oauth_grants ADD COLUMN address TEXT", *_INDEXES],
    "postgresql": ["ALTER TABLE oauth_grants ADD COLUMN address text", *_INDEXES],
}


def upgrade() -> None:
    run_for_dialect(UPGRADES)


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_oauth_grants_consent_address")
    op.execute("DROP INDEX IF EXISTS ix_oauth_grants_consent_client")
    op.execute("ALTER TABLE oauth_grants DROP COLUMN address")
