"""OAuth clients and grants on SQLite (hashes of secrets only)."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from kioku.storage.records import OAuthGrant
from kioku.storage.sqlite.codec import decode_required_time, decode_time, encode_time
from kioku.storage.sqlite.connection import SQLiteDatabase

_COLUMNS = (
    "secret_hash, kind, client_id, workspace_id, key_id, scopes, params, family, expires_at, "
    "created_at, revoked_at"
)


def _grant(row: sqlite3.Row) -> OAuthGrant:
    return OAuthGrant(
        secret_hash=row["secret_hash"], kind=row["kind"], client_id=row["client_id"],
        workspace_id=row["workspace_id"], key_id=row["key_id"], scopes=json.loads(row["scopes"]),
        params=json.loads(row["params"]), family=row["family"],
        expires_at=decode_required_time(row["expires_at"]),
        created_at=decode_required_time(row["created_at"]),
        revoked_at=decode_time(row["revoked_at"]),
    )  # fmt: skip


class SQLiteOAuthLane:
    """Mixed into ``SQLiteStore``."""

    db: SQLiteDatabase

    def insert_oauth_client(self, client_id: str, metadata: dict[str, Any], now: datetime) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO oauth_clients (client_id, metadata, created_at) VALUES (?, ?, ?)",
                (client_id, json.dumps(metadata), encode_time(now)),
            )

    def get_oauth_client(self, client_id: str) -> dict[str, Any] | None:
        row = (
            self.db.connection()
            .execute("SELECT metadata FROM oauth_clients WHERE client_id = ?", (client_id,))
            .fetchone()
        )
        return None if row is None else json.loads(row[0])

    def insert_oauth_grants(self, grants: list[OAuthGrant]) -> None:
        with self.db.write() as conn:
            for g in grants:
                conn.execute(
                    f"INSERT INTO oauth_grants ({_COLUMNS}) VALUES ({', '.join('?' * 11)})",
                    (
                        g.secret_hash, g.kind, g.client_id, g.workspace_id, g.key_id,
                        json.dumps(g.scopes), json.dumps(g.params), g.family,
                        encode_time(g.expires_at), encode_time(g.created_at), None,
                    ),
                )  # fmt: skip

    def get_oauth_grant(self, secret_hash: str) -> OAuthGrant | None:
        row = (
            self.db.connection()
            .execute(f"SELECT {_COLUMNS} FROM oauth_grants WHERE secret_hash = ?", (secret_hash,))
            .fetchone()
        )
        return None if row is None else _grant(row)

    def take_oauth_grant(self, secret_hash: str, kind: str, now: datetime) -> OAuthGrant | None:
        """Use up a one-time grant (consent ticket, code): it is revoked as it is read, so two
        concurrent redemptions cannot both succeed."""
        with self.db.write() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM oauth_grants WHERE secret_hash = ? AND kind = ?",
                (secret_hash, kind),
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                "UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, ?) "
                "WHERE secret_hash = ?",
                (encode_time(now), secret_hash),
            )
        return _grant(row)

    def revoke_oauth_family(self, family: str, now: datetime) -> int:
        with self.db.write() as conn:
            return conn.execute(
                "UPDATE oauth_grants SET revoked_at = ? WHERE family = ? AND revoked_at IS NULL",
                (encode_time(now), family),
            ).rowcount

    def revoke_oauth_grant(self, secret_hash: str, now: datetime) -> bool:
        with self.db.write() as conn:
            return bool(
                conn.execute(
                    "UPDATE oauth_grants SET revoked_at = ? "
                    "WHERE secret_hash = ? AND revoked_at IS NULL",
                    (encode_time(now), secret_hash),
                ).rowcount
            )

    def sweep_oauth(self, expired_before: datetime, unused_since: datetime) -> int:
        with self.db.write() as conn:
            grants = conn.execute(
                "DELETE FROM oauth_grants WHERE expires_at < ?", (encode_time(expired_before),)
            ).rowcount
            clients = conn.execute(
                "DELETE FROM oauth_clients WHERE created_at < ? AND NOT EXISTS ("
                "SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)",
                (encode_time(unused_since),),
            ).rowcount
        return grants + clients
