"""OAuth clients and grants (hashes of secrets only). Not workspace-scoped: a grant is found
by its secret's hash before its workspace is known."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from kioku.storage.records import OAuthGrant
from kioku.storage.shared.database import ALL_WORKSPACES, Database, Dialect, record

_COLUMNS = (
    "secret_hash, kind, client_id, workspace_id, key_id, scopes, params, family, expires_at, "
    "created_at, revoked_at"
)


def _grant(d: Dialect, row: Any) -> OAuthGrant:
    return record(
        d,
        OAuthGrant,
        row,
        times=("expires_at", "created_at"),
        optional_times=("revoked_at",),
        json=("scopes", "params"),
    )


class OAuthStore(Protocol):
    """OAuth primitives (registered clients and their grants), written once for both backends."""

    sql: Database

    def insert_oauth_client(self, client_id: str, metadata: dict[str, Any], now: datetime) -> None:
        d = self.sql.dialect
        with self.sql.write(ALL_WORKSPACES) as tx:
            tx.execute(
                "INSERT INTO oauth_clients (client_id, metadata, created_at) VALUES (%s, %s, %s)",
                (client_id, d.json(metadata), d.time(now)),
            )

    def get_oauth_client(self, client_id: str) -> dict[str, Any] | None:
        with self.sql.read(ALL_WORKSPACES) as tx:
            row = tx.execute(
                "SELECT metadata FROM oauth_clients WHERE client_id = %s", (client_id,)
            ).fetchone()
        return None if row is None else self.sql.dialect.read_json(row["metadata"])

    def insert_oauth_grants(self, grants: list[OAuthGrant]) -> None:
        if not grants:
            return
        d = self.sql.dialect
        with self.sql.write(ALL_WORKSPACES) as tx:
            tx.executemany(
                f"INSERT INTO oauth_grants ({_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    (
                        g.secret_hash, g.kind, g.client_id, g.workspace_id, g.key_id,
                        d.json(g.scopes), d.json(g.params), g.family, d.time(g.expires_at),
                        d.time(g.created_at), None,
                    )
                    for g in grants
                ],
            )  # fmt: skip

    def get_oauth_grant(self, secret_hash: str) -> OAuthGrant | None:
        with self.sql.read(ALL_WORKSPACES) as tx:
            row = tx.execute(
                f"SELECT {_COLUMNS} FROM oauth_grants WHERE secret_hash = %s", (secret_hash,)
            ).fetchone()
        return None if row is None else _grant(self.sql.dialect, row)

    def take_oauth_grant(self, secret_hash: str, kind: str, now: datetime) -> OAuthGrant | None:
        """Use up a one-time grant (consent ticket, code): it is revoked as it is read, so two
        concurrent redemptions cannot both succeed.

        The row is locked as it is read (PostgreSQL FOR UPDATE, SQLite's write lock): a second
        racing caller waits for the first to commit, then reads the latest version, with
        ``revoked_at`` set (an UPDATE ... RETURNING joined to its own old row would hand it
        the stale version instead).
        """
        d = self.sql.dialect
        with self.sql.write(ALL_WORKSPACES) as tx:
            row = tx.execute(
                f"SELECT {_COLUMNS} FROM oauth_grants WHERE secret_hash = %s AND kind = %s"
                + d.for_update,
                (secret_hash, kind),
            ).fetchone()
            if row is not None:
                tx.execute(
                    "UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, %s) "
                    "WHERE secret_hash = %s",
                    (d.time(now), secret_hash),
                )
        return None if row is None else _grant(d, row)

    def revoke_oauth_family(self, family: str, now: datetime) -> int:
        with self.sql.write(ALL_WORKSPACES) as tx:
            return tx.execute(
                "UPDATE oauth_grants SET revoked_at = %s WHERE family = %s AND revoked_at IS NULL",
                (self.sql.dialect.time(now), family),
            ).rowcount

    def revoke_oauth_grant(self, secret_hash: str, now: datetime) -> bool:
        with self.sql.write(ALL_WORKSPACES) as tx:
            return bool(
                tx.execute(
                    "UPDATE oauth_grants SET revoked_at = %s "
                    "WHERE secret_hash = %s AND revoked_at IS NULL",
                    (self.sql.dialect.time(now), secret_hash),
                ).rowcount
            )

    def sweep_oauth(self, expired_before: datetime, unused_since: datetime) -> int:
        """Delete grants (consent tickets, codes, tokens) that expired before
        ``expired_before``, then clients registered before ``unused_since`` that hold no grant
        at all; returns how many rows went."""
        d = self.sql.dialect
        with self.sql.write(ALL_WORKSPACES) as tx:
            grants = tx.execute(
                "DELETE FROM oauth_grants WHERE expires_at < %s", (d.time(expired_before),)
            ).rowcount
            clients = tx.execute(
                "DELETE FROM oauth_clients WHERE created_at < %s AND NOT EXISTS ("
                "SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)",
                (d.time(unused_since),),
            ).rowcount
        return grants + clients
