"""What shared SQL needs of a backend: transactions scoped to a workspace, and a dialect.

Statements are written once, with ``%s`` placeholders (``%%`` for a literal ``%``): PostgreSQL
runs them as written, SQLite after ``%s`` becomes ``?``. Rows are read by column name. Where
the engines differ, the ``Dialect`` supplies the fragment or the value encoding; it never
adds a statement, so a shared query costs what the backend's own did.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, TypeVar

import numpy as np

ALL_WORKSPACES = "*"
"""The scope of work that is not one tenant's (a key by its hash, a workspace by name, the
embedding queue). Never a workspace id (those are UUIDs)."""

Params = Sequence[Any] | Mapping[str, Any]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Transaction(Protocol):
    def execute(self, query: str, params: Params = ()) -> Cursor:
        """Run one statement (``%s`` placeholders); rows are read by column name."""
        ...

    def executemany(self, query: str, params: Iterable[Params]) -> None:
        """Run one statement once per parameter set (PostgreSQL pipelines them)."""
        ...

    def stream(self, query: str, params: Params = ()) -> Iterator[Any]:
        """The rows of one query, fetched a batch at a time (PostgreSQL: a server-side
        cursor), so a big result never sits in memory."""
        ...


class Dialect(Protocol):
    """How one engine spells what the shared SQL needs."""

    binary: str
    """Appended to a text sort key for code point order (SQLite's BINARY is the default)."""
    for_update: str
    """Appended to a SELECT whose rows the transaction then writes (SQLite: its write lock)."""
    for_share: str
    """Appended to a SELECT whose rows must stay as read until the commit."""
    json_param: str
    """The placeholder for JSON given as text (``%s::jsonb`` on PostgreSQL)."""
    exclusive_writes: bool
    """A write transaction takes the database's one write lock (SQLite): a write that is
    usually needless is looked for first."""
    for_no_key_update: str
    """Appended to a SELECT whose rows the transaction then updates without touching their
    keys (PostgreSQL ``FOR NO KEY UPDATE``: inserts referencing them need not wait)."""
    workspace_lock: str
    """A statement taking a transaction-scoped lock on (key, workspace id), serializing the
    read-compute-write of a workspace's graph (SQLite: none, its write lock already does)."""
    vector: str
    """A select-list item reading ``memories.embedding`` as ``vector`` (see ``read_vector``)."""

    def json_text(self, column: str) -> str:
        """A select-list item reading a JSON column back as its text, named ``column``."""
        ...

    def time(self, value: datetime | None) -> Any:
        """A timestamp as the engine stores it."""
        ...

    def read_time(self, value: Any) -> datetime:
        """A NOT NULL timestamp column as read."""
        ...

    def read_optional_time(self, value: Any) -> datetime | None: ...

    def json(self, value: Any, *, sort_keys: bool = False) -> Any:
        """A JSON column's parameter (values JSON cannot hold are kept as their text)."""
        ...

    def read_json(self, value: Any) -> Any: ...

    def any(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values`` (text): the condition and its parameters."""
        ...

    def pair_in(self, columns: str, pairs: Sequence[tuple[str, int]]) -> tuple[str, list[Any]]:
        """``(a, b)`` is one of ``pairs`` (text, integer): the condition and its parameters."""
        ...

    def has_tags(self, column: str, tags: Sequence[str], *, every: bool) -> tuple[str, list[Any]]:
        """The JSON array of strings ``column`` holds any (``every``: all) of ``tags``."""
        ...

    def chunks(self, values: Sequence[Any]) -> Iterator[Sequence[Any]]:
        """``values`` in pieces one statement can bind (PostgreSQL: one piece, an array)."""
        ...

    def integrity_error(self, exc: Exception) -> bool:
        """``exc`` is the engine's refusal of a write that breaks a constraint."""
        ...

    def unique_violation(self, exc: Exception, index: str | None = None) -> bool:
        """``exc`` is the engine's unique violation (of ``index``, if named)."""
        ...

    def starts_with(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        """``column`` begins with ``prefix`` taken literally (no LIKE wildcards)."""
        ...

    def text_pair_in(
        self, first: str, second: str, pairs: Sequence[tuple[str, str]]
    ) -> tuple[str, list[Any]]:
        """``(first, second)`` is one of ``pairs`` (text, text): the condition and its
        parameters. Each pair is looked up on an index that starts with both columns."""
        ...

    def unindexed(self, column: str) -> str:
        """``column`` in a condition the planner must not pick an index for (SQLite
        ``+column``: the primary key beats the workspace index on an id list)."""
        ...

    def read_vector(self, value: Any) -> np.ndarray:
        """The ``vector`` select-list item as a float32 array."""
        ...

    def write_vector(self, vector: np.ndarray) -> Any:
        """A vector as the parameter of a memory INSERT's ``embedding`` column."""
        ...


class Database(Protocol):
    """A backend's connections as the shared SQL sees them."""

    @property
    def dialect(self) -> Dialect: ...

    def read(self, scope: str) -> AbstractContextManager[Transaction]:
        """Reads for workspace ``scope`` (or ``ALL_WORKSPACES``); one statement each needs
        no common snapshot (SQLite: autocommit, PostgreSQL: one transaction)."""
        ...

    def snapshot(self, scope: str) -> AbstractContextManager[Transaction]:
        """Reads that all see one snapshot of the database (a read-only transaction)."""
        ...

    def reads_together(self, scope: str) -> AbstractContextManager[None]:
        """Several reads on this thread in one round of connection upkeep: PostgreSQL runs
        every ``read`` of the block in one transaction (one pool checkout, one scope
        statement, one commit, instead of one of each per read); SQLite reads are local
        autocommit statements with nothing to save, so the block changes nothing there.
        No writes inside (PostgreSQL would commit them at the end of the block)."""
        ...

    def session(self, scope: str) -> AbstractContextManager[None]:
        """One write transaction for several store calls on this thread: each call's own
        ``write`` joins it, so they land together or not at all."""
        ...

    def write(self, scope: str) -> AbstractContextManager[Transaction]:
        """A write transaction for workspace ``scope``: committed at the end of the block,
        rolled back if it raises; it joins the caller's session if one is open."""
        ...


R = TypeVar("R")


def record(
    d: Dialect,
    cls: type[R],
    row: Any,
    *,
    times: Sequence[str] = (),
    optional_times: Sequence[str] = (),
    json: Sequence[str] = (),
) -> R:
    """A row whose column names are ``cls``'s fields, as that record: the named timestamp and
    JSON columns decoded (a NULL JSON column stays ``None``)."""
    values = dict(row)  # a sqlite3.Row or a psycopg dict row
    for key in times:
        values[key] = d.read_time(values[key])
    for key in optional_times:
        values[key] = d.read_optional_time(values[key])
    for key in json:
        if values[key] is not None:
            values[key] = d.read_json(values[key])
    return cls(**values)


def select_among(
    tx: Transaction,
    d: Dialect,
    query: str,
    column: str,
    values: Sequence[Any],
    before: Sequence[Any] = (),
    after: Sequence[Any] = (),
) -> list[Any]:
    """The rows of ``query`` whose ``{among}`` reads "``column`` is one of ``values``", run
    once per piece of ``values`` one statement can bind; its parameters are ``before``, the
    values', then ``after``."""
    rows: list[Any] = []
    for chunk in d.chunks(values):
        condition, params = d.any(column, chunk)
        rows += tx.execute(query.format(among=condition), (*before, *params, *after)).fetchall()
    return rows
