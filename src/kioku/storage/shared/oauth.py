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

    def open_consent_ticket(
        self,
        ticket: OAuthGrant,
        address: str | None,
        per_client: int,
        per_address: int,
        now: datetime,
    ) -> int:
        """Insert a consent ticket opened from ``address``, then delete the other tickets of
        its client, and of its address, that expired or were used, and the oldest live ones
        past ``per_client`` / ``per_address`` (the new ticket counts, and always stays).
        Returns how many went. (Tickets opened in the same instant are ranked by hash.)"""
        d = self.sql.dialect
        at = d.time(now)
        removed = 0
        with self.sql.write(ALL_WORKSPACES) as tx:
            tx.execute(
                f"INSERT INTO oauth_grants ({_COLUMNS}, address) "
                "VALUES (%s, 'consent', %s, NULL, NULL, %s, %s, %s, %s, %s, NULL, %s)",
                (ticket.secret_hash, ticket.client_id, d.json(ticket.scopes),
                 d.json(ticket.params), ticket.family, d.time(ticket.expires_at),
                 d.time(ticket.created_at), address),
            )  # fmt: skip
            for column, value, quota in (("client_id", ticket.client_id, per_client),
                                         ("address", address, per_address)):  # fmt: skip
                if value is None:
                    continue
                mine = f"kind = 'consent' AND {column} = %s AND secret_hash <> %s"
                removed += tx.execute(
                    f"DELETE FROM oauth_grants WHERE {mine} AND (expires_at <= %s "
                    "OR revoked_at IS NOT NULL OR secret_hash NOT IN ("
                    f"SELECT secret_hash FROM oauth_grants WHERE {mine} "
                    "AND expires_at > %s AND revoked_at IS NULL "
                    "ORDER BY created_at DESC, secret_hash LIMIT %s))",
                    (value, ticket.secret_hash, at, value, ticket.secret_hash, at,
                     max(quota - 1, 0)),
                ).rowcount  # fmt: skip
        return removed

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

    def sweep_oauth(
        self, expired_before: datetime, unused_since: datetime, now: datetime | None = None
    ) -> int:
        """Delete grants (consent tickets, codes, tokens) that expired before
        ``expired_before``, consent tickets that expired before ``now`` or were used (nothing
        needs them then: a ticket gone reads as "expired or used", as one kept would), then
        clients registered before ``unused_since`` that hold no grant at all; returns how many
        rows went."""
        d = self.sql.dialect
        with self.sql.write(ALL_WORKSPACES) as tx:
            grants = tx.execute(
                "DELETE FROM oauth_grants WHERE expires_at < %s", (d.time(expired_before),)
            ).rowcount
            if now is not None:
                grants += tx.execute(
                    "DELETE FROM oauth_grants WHERE kind = 'consent' "
                    "AND (expires_at <= %s OR revoked_at IS NOT NULL)",
                    (d.time(now),),
                ).rowcount
            clients = tx.execute(
                "DELETE FROM oauth_clients WHERE created_at < %s AND NOT EXISTS ("
                "SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)",
                (d.time(unused_since),),
            ).rowcount
        return grants + clients
