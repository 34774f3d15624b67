"""Where PostgreSQL keeps a memory's tokens: its own row, as a ``tsvector`` and a length."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kioku.storage.postgres.codec import encode_tokens
from kioku.storage.shared.database import Transaction
from kioku.storage.shared.memories import Lexicon


class PostgresLexicon(Lexicon):
    """``shared.memories.Lexicon`` on PostgreSQL (``encode_tokens`` in postgres/codec.py): in
    the row, so ``update`` has nothing left to do."""

    columns = ", lexical_tokens, lexical_length"
    marks = ", %s::tsvector, %s"

    def insert(
        self, tx: Transaction, workspace_id: str, statement: str, rows: Sequence[tuple[Any, str]]
    ) -> None:
        # executemany pipelines the rows; in one transaction, all land or none.
        tx.executemany(statement, [(*values, *encode_tokens(tokens)) for values, tokens in rows])

    def sets(self, tokens: str) -> tuple[list[str], list[Any]]:
        return ["lexical_tokens = %s::tsvector", "lexical_length = %s"], list(encode_tokens(tokens))
