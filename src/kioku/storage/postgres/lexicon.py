"""Where PostgreSQL keeps a memory's tokens: its own row, as a ``tsvector`` and a length."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kioku.storage.postgres.codec import encode_tokens
from kioku.storage.shared.database import Transaction
from kioku.storage.shared.memories import Lexicon, MemoryBatch

_ARRAY_TYPES = {
    "tags": "jsonb", "importance": "float8", "trigger_from": "timestamptz",
    "trigger_until": "timestamptz", "access_count": "bigint", "last_accessed_at": "timestamptz",
    "created_at": "timestamptz", "updated_at": "timestamptz", "deleted_at": "timestamptz",
    "instruction_like": "boolean", "tainted": "boolean", "thread_position": "bigint",
    "lexical_length": "integer",
}  # fmt: skip
"""Each memory column's array type in a batch INSERT (the others travel as ``text[]``)."""
_CASTS = {"embedding": "::vector", "lexical_tokens": "::tsvector"}
"""Columns whose ``text`` element is cast to the column's type."""


def batch_insert(columns: Sequence[str]) -> str:
    """One INSERT of a batch of memories: each column (``workspace_id`` aside, one parameter:
    the statement names its tenant) an array, unnested in order."""
    arrays = [c for c in columns if c != "workspace_id"]
    values = ["%s" if c == "workspace_id" else f"r.{c}{_CASTS.get(c, '')}" for c in columns]
    unnest = ", ".join(f"%s::{_ARRAY_TYPES.get(c, 'text')}[]" for c in arrays)
    return (
        f"INSERT INTO memories ({', '.join(columns)}) SELECT {', '.join(values)} "
        f"FROM unnest({unnest}) WITH ORDINALITY AS r({', '.join(arrays)}, ord) ORDER BY r.ord"
    )


class PostgresLexicon(Lexicon):
    """``shared.memories.Lexicon`` on PostgreSQL (``encode_tokens`` in postgres/codec.py): in
    the row, so ``update`` has nothing left to do."""

    def insert(self, tx: Transaction, workspace_id: str, rows: MemoryBatch) -> None:
        if not rows:
            return
        # One statement (arrays unnested): every row lands or none, and the statistics
        # trigger (migration 0013) folds the whole batch into one upsert per distinct term.
        columns = [column for column in rows[0][0] if column != "workspace_id"]
        table = [
            (*(values[column] for column in columns), *encode_tokens(tokens))
            for values, tokens in rows
        ]
        arrays = [list(column) for column in zip(*table, strict=True)]
        statement = batch_insert(["workspace_id", *columns, "lexical_tokens", "lexical_length"])
        tx.execute(statement, (workspace_id, *arrays))

    def sets(self, tokens: str) -> tuple[list[str], list[Any]]:
        return ["lexical_tokens = %s::tsvector", "lexical_length = %s"], list(encode_tokens(tokens))
