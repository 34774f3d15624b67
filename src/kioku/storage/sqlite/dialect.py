"""The shared SQL on SQLite: ``%s`` becomes ``?``, timestamps are UTC text, JSON is text."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np

from kioku.storage.shared.database import Params
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.times import decode_required_time, decode_time, encode_optional_time

# Bound parameters per statement stay well under SQLite's limit.
ID_CHUNK = 500


def chunked(values: Sequence[str], size: int = ID_CHUNK) -> Iterator[Sequence[str]]:
    """Split a long id list into statement-sized pieces."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


_PLACEHOLDER = re.compile(r"%[s%]")


@lru_cache(maxsize=1024)
def native(query: str) -> str:
    """A psycopg-style statement in SQLite's placeholder style."""
    return _PLACEHOLDER.sub(lambda m: "?" if m[0] == "%s" else "%", query)


def marks(values: Sequence[Any]) -> str:
    return ", ".join("%s" for _ in values)


class SQLiteDialect:
    binary = ""
    for_update = ""
    for_share = ""
    for_no_key_update = ""
    exclusive_writes = True
    json_param = "%s"
    workspace_lock = ""  # BEGIN IMMEDIATE serializes every writer already
    vector = "embedding AS vector"

    def json_text(self, column: str) -> str:
        return column

    def time(self, value: datetime | None) -> str | None:
        return encode_optional_time(value)

    def read_time(self, value: str) -> datetime:
        return decode_required_time(value)

    def read_optional_time(self, value: str | None) -> datetime | None:
        return decode_time(value)

    def json(self, value: Any, *, sort_keys: bool = False) -> str:
        return json.dumps(value, ensure_ascii=False, sort_keys=sort_keys, default=str)

    def read_json(self, value: str) -> Any:
        return json.loads(value)

    def any(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} IN ({marks(values)})", list(values)

    def pair_in(self, columns: str, pairs: Sequence[tuple[str, int]]) -> tuple[str, list[Any]]:
        rows = ", ".join("(%s, %s)" for _ in pairs)
        return f"{columns} IN (VALUES {rows})", [value for pair in pairs for value in pair]

    def has_tags(self, column: str, tags: Sequence[str], *, every: bool) -> tuple[str, list[Any]]:
        if every:
            one = f"EXISTS (SELECT 1 FROM json_each({column}) t WHERE t.value = %s)"
            return " AND ".join(one for _ in tags), list(tags)
        return (
            f"EXISTS (SELECT 1 FROM json_each({column}) t WHERE t.value IN ({marks(tags)}))",
            list(tags),
        )

    def chunks(self, values: Sequence[Any]) -> Iterator[Sequence[Any]]:
        return chunked(values)

    def integrity_error(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)

    def unique_violation(self, exc: Exception, index: str | None = None) -> bool:
        # SQLite's message names the index's columns, not the index.
        return (
            self.integrity_error(exc)
            and "UNIQUE" in str(exc)
            and (index is None or _UNIQUE_COLUMN[index] in str(exc))
        )

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        return f"substr({column}, 1, %s) = %s", [len(prefix), prefix]

    def text_pair_in(
        self, first: str, second: str, pairs: Sequence[tuple[str, str]]
    ) -> tuple[str, list[Any]]:
        # A subquery over VALUES: SQLite 3.40 looks each row up on the primary key, where for
        # "IN (VALUES …)" or an OR of equalities it may scan the workspace's rows.
        rows = ", ".join("(%s, %s)" for _ in pairs)
        return (
            f"({first}, {second}) IN (SELECT column1, column2 FROM (VALUES {rows}))",
            [value for pair in pairs for value in pair],
        )

    def unindexed(self, column: str) -> str:
        return f"+{column}"

    def read_vector(self, value: bytes) -> np.ndarray:
        return decode_vector(value)

    def write_vector(self, vector: np.ndarray) -> bytes:
        return encode_vector(vector)


def encode_vector(vector: np.ndarray) -> bytes:
    """A vector as stored: little-endian float32 bytes."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def decode_vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


_UNIQUE_COLUMN = {"ux_memories_external": "external_id"}
"""A column that tells a unique index's violations apart from the others'."""


class SQLiteTransaction:
    __slots__ = ("conn",)

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, query: str, params: Params = ()) -> sqlite3.Cursor:
        return self.conn.execute(native(query), params)

    def executemany(self, query: str, params: Iterable[Params]) -> None:
        self.conn.executemany(native(query), params)

    def stream(self, query: str, params: Params = ()) -> Iterator[sqlite3.Row]:
        yield from self.conn.execute(native(query), params)  # sqlite3 steps as it is read


class SQLiteSql:
    """``shared.database.Database`` over a ``SQLiteDatabase`` (one file: no workspace scope)."""

    dialect = SQLiteDialect()

    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db

    @contextmanager
    def read(self, scope: str) -> Iterator[SQLiteTransaction]:
        yield SQLiteTransaction(self.db.connection())

    @contextmanager
    def snapshot(self, scope: str) -> Iterator[SQLiteTransaction]:
        with self.db.read() as conn:
            yield SQLiteTransaction(conn)

    @contextmanager
    def reads_together(self, scope: str) -> Iterator[None]:
        yield  # each read is one local autocommit statement: no transaction to share

    @contextmanager
    def session(self, scope: str) -> Iterator[None]:
        with self.db.session():
            yield

    @contextmanager
    def write(self, scope: str) -> Iterator[SQLiteTransaction]:
        with self.db.write() as conn:
            yield SQLiteTransaction(conn)
