"""OAuth clients and grants on PostgreSQL (hashes of secrets only)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from kioku.storage.postgres.connection import ALL_WORKSPACES, PostgresDatabase
from kioku.storage.records import OAuthGrant

_COLUMNS = (
    "secret_hash, kind, client_id, workspace_id, key_id, scopes, params, family, expires_at, "
    "created_at, revoked_at"
)
_PLACEHOLDERS = "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s"


def _grant(row: dict[str, Any]) -> OAuthGrant:
    return OAuthGrant(**row)


class PostgresOAuthLane:
    """Mixed into ``PostgresStore``."""

    db: PostgresDatabase

    def insert_oauth_client(self, client_id: str, metadata: dict[str, Any], now: datetime) -> None:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            conn.execute(
                "INSERT INTO oauth_clients (client_id, metadata, created_at) VALUES (%s, %s, %s)",
                (client_id, Jsonb(metadata), now),
            )

    def get_oauth_client(self, client_id: str) -> dict[str, Any] | None:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            row = conn.execute(
                "SELECT metadata FROM oauth_clients WHERE client_id = %s", (client_id,)
            ).fetchone()
        return None if row is None else row["metadata"]

    def insert_oauth_grants(self, grants: list[OAuthGrant]) -> None:
        if not grants:
            return
        with self.db.transaction(ALL_WORKSPACES) as conn, conn.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO oauth_grants ({_COLUMNS}) VALUES ({_PLACEHOLDERS})",
                [
                    (
                        g.secret_hash, g.kind, g.client_id, g.workspace_id, g.key_id,
                        Jsonb(g.scopes), Jsonb(g.params), g.family, g.expires_at,
                        g.created_at, None,
                    )
                    for g in grants
                ],
            )  # fmt: skip

    def get_oauth_grant(self, secret_hash: str) -> OAuthGrant | None:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM oauth_grants WHERE secret_hash = %s", (secret_hash,)
            ).fetchone()
        return None if row is None else _grant(row)

    def take_oauth_grant(self, secret_hash: str, kind: str, now: datetime) -> OAuthGrant | None:
        """Use up a one-time grant (consent ticket, code): it is revoked as it is read, so two
        concurrent redemptions cannot both succeed.

        FOR UPDATE locks the row: a second racing caller waits for the first to commit, then
        reads the latest version, with ``revoked_at`` set (an UPDATE ... RETURNING joined to
        its own old row would hand it the stale version instead).
        """
        with self.db.transaction(ALL_WORKSPACES) as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM oauth_grants WHERE secret_hash = %s AND kind = %s "
                "FOR UPDATE",
                (secret_hash, kind),
            ).fetchone()
            if row is not None:
                conn.execute(
                    "UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, %s) "
                    "WHERE secret_hash = %s",
                    (now, secret_hash),
                )
        return None if row is None else _grant(row)

    def revoke_oauth_family(self, family: str, now: datetime) -> int:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            return conn.execute(
                "UPDATE oauth_grants SET revoked_at = %s WHERE family = %s AND revoked_at IS NULL",
                (now, family),
            ).rowcount

    def revoke_oauth_grant(self, secret_hash: str, now: datetime) -> bool:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            return bool(
                conn.execute(
                    "UPDATE oauth_grants SET revoked_at = %s "
                    "WHERE secret_hash = %s AND revoked_at IS NULL",
                    (now, secret_hash),
                ).rowcount
            )

    def sweep_oauth(self, expired_before: datetime, unused_since: datetime) -> int:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            grants = conn.execute(
                "DELETE FROM oauth_grants WHERE expires_at < %s", (expired_before,)
            ).rowcount
            clients = conn.execute(
                "DELETE FROM oauth_clients c WHERE c.created_at < %s AND NOT EXISTS ("
                "SELECT 1 FROM oauth_grants g WHERE g.client_id = c.client_id)",
                (unused_since,),
            ).rowcount
        return grants + clients
