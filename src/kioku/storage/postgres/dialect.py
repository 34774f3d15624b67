"""The shared SQL on PostgreSQL: run as written; arrays for lists; ``COLLATE "C"`` orders."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, LiteralString, cast

import numpy as np
from psycopg import Connection, Cursor, errors
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.shared.database import Params


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _dumps_sorted(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


class PostgresDialect:
    binary = ' COLLATE "C"'
    for_update = " FOR UPDATE"
    for_share = " FOR SHARE"
    for_no_key_update = " FOR NO KEY UPDATE"
    exclusive_writes = False
    json_param = "%s::jsonb"
    workspace_lock = "SELECT pg_advisory_xact_lock(%s, hashtext(%s))"
    vector = "vector_send(embedding) AS vector"

    def json_text(self, column: str) -> str:
        return f"{column}::text AS {column}"

    def time(self, value: datetime | None) -> datetime | None:
        return value

    def read_time(self, value: datetime) -> datetime:
        return value

    def read_optional_time(self, value: datetime | None) -> datetime | None:
        return value

    def json(self, value: Any, *, sort_keys: bool = False) -> Jsonb:
        return Jsonb(value, dumps=_dumps_sorted if sort_keys else _dumps)

    def read_json(self, value: Any) -> Any:
        return value  # psycopg parses jsonb

    def any(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(%s::text[])", [list(values)]

    def pair_in(self, columns: str, pairs: Sequence[tuple[str, int]]) -> tuple[str, list[Any]]:
        return (
            f"{columns} IN (SELECT * FROM unnest(%s::text[], %s::int[]))",
            [[pair[0] for pair in pairs], [pair[1] for pair in pairs]],
        )

    def has_tags(self, column: str, tags: Sequence[str], *, every: bool) -> tuple[str, list[Any]]:
        # A jsonb array of strings: ?| is "any of", ?& is "all of".
        return f"{column} {'?&' if every else '?|'} %s::text[]", [list(tags)]

    def chunks(self, values: Sequence[Any]) -> Iterator[Sequence[Any]]:
        yield values  # one array parameter, however long

    def integrity_error(self, exc: Exception) -> bool:
        return isinstance(exc, errors.IntegrityError)

    def unique_violation(self, exc: Exception, index: str | None = None) -> bool:
        return isinstance(exc, errors.UniqueViolation) and (
            index is None or exc.diag.constraint_name == index
        )

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        return f"starts_with({column}, %s)", [prefix]

    def text_pair_in(
        self, first: str, second: str, pairs: Sequence[tuple[str, str]]
    ) -> tuple[str, list[Any]]:
        return (
            f"({first}, {second}) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
            [[pair[0] for pair in pairs], [pair[1] for pair in pairs]],
        )

    def unindexed(self, column: str) -> str:
        return column

    def read_vector(self, value: bytes) -> np.ndarray:
        # vector_send: int16 dimension, int16 unused, then big-endian float4s.
        return np.frombuffer(value, dtype=">f4", offset=4).astype(np.float32)

    def write_vector(self, vector: np.ndarray) -> str:
        return encode_vector(vector)


def encode_vector(vector: np.ndarray) -> str:
    """pgvector's text form; 9 significant digits round-trip a float32 exactly."""
    return "[" + ",".join(f"{x:.9g}" for x in np.asarray(vector, dtype=np.float32).tolist()) + "]"


_STREAM_BATCH = 500


class PostgresTransaction:
    __slots__ = ("conn",)

    def __init__(self, conn: Connection[DictRow]) -> None:
        self.conn = conn

    def execute(self, query: str, params: Params = ()) -> Cursor[DictRow]:
        # The shared statements splice only their own fragments, never a value.
        return self.conn.execute(cast(LiteralString, query), params)

    def executemany(self, query: str, params: Iterable[Params]) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(cast(LiteralString, query), params)

    def stream(self, query: str, params: Params = ()) -> Iterator[DictRow]:
        with self.conn.cursor(name="kioku_stream") as cursor:
            cursor.itersize = _STREAM_BATCH
            cursor.execute(cast(LiteralString, query), params)
            yield from cursor


class PostgresSql:
    """``shared.database.Database`` over a ``PostgresDatabase`` (row-level security scopes)."""

    dialect = PostgresDialect()

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    @contextmanager
    def read(self, scope: str, *, snapshot: bool = False) -> Iterator[PostgresTransaction]:
        with self.db.transaction(scope, snapshot=snapshot) as conn:
            yield PostgresTransaction(conn)

    write = read  # one transaction either way; row-level security scopes it to ``scope``

    def snapshot(self, scope: str) -> AbstractContextManager[PostgresTransaction]:
        return self.read(scope, snapshot=True)

    @contextmanager
    def reads_together(self, scope: str) -> Iterator[None]:
        with self.db.session(scope):  # each ``read`` of the block joins this transaction
            yield

    @contextmanager
    def session(self, scope: str) -> Iterator[None]:
        with self.db.session(scope):
            yield
