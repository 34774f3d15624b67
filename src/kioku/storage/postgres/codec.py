"""Conversions between PostgreSQL rows and records; kioku's tokens as a ``tsvector`` literal."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from kioku.storage.postgres.dialect import PostgresDialect, encode_vector
from kioku.storage.records import ContextRow, MemoryRow
from kioku.storage.shared import rows
from kioku.storage.shared.rows import MEMORY_COLUMNS

__all__ = [
    "MEMORY_COLUMNS",
    "context_from_row",
    "encode_tokens",
    "encode_vector",
    "memory_from_row",
]

_DIALECT = PostgresDialect()

# tsvector keeps at most 256 positions per lexeme; BM25's tf saturation makes the cap harmless.
_MAX_TF = 256


# A tsvector holds at most 1 MB; a memory's content may be 1 MB of text (max_content_bytes).
_MAX_TSVECTOR_BYTES = 900_000
# A lexeme must stay under 2 KB (tsvector and tsquery refuse longer words); FTS5 has no limit.
_MAX_LEXEME_BYTES = 1024


def lexeme(token: str) -> str:
    """The lexeme stored and searched for ``token``: the token itself, or for one too long for
    PostgreSQL its digest. The digest form holds a space, which no kioku token does, so it can
    never be mistaken for a real token; one token still matches only itself."""
    if len(token.encode()) <= _MAX_LEXEME_BYTES:
        return token
    return "long token " + hashlib.sha256(token.encode()).hexdigest()


def _quote_lexeme(token: str) -> str:
    # tsvector/tsquery input syntax: a quoted lexeme, with ' doubled and \ escaped.
    word = lexeme(token)
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def encode_tokens(tokens: str) -> tuple[str, int]:
    """kioku's space-joined tokens → (a ``tsvector`` literal, the document length in tokens).

    The literal is cast with ``::tsvector``, which stores every lexeme verbatim (no parser, no
    lower-casing, no dictionary): kioku has normalized, segmented and stemmed already. The
    positions of a lexeme are 1..tf, not the places it occurs: they only carry its count
    (no phrase search uses them), which BM25 reads back as ``cardinality(positions)``.
    A document too big for one tsvector keeps its most frequent lexemes (the length counts
    every token); SQLite's FTS5 has no such cap.
    """
    words = tokens.split()
    kept: list[str] = []
    budget = _MAX_TSVECTOR_BYTES
    # Most frequent first: if a huge document overflows the budget, its rarest lexemes go.
    for word, n in Counter(lexeme(word) for word in words).most_common():
        tf = min(n, _MAX_TF)
        budget -= len(word.encode()) + 8 + 2 * tf  # lexeme, entry + alignment, positions
        if budget < 0:
            break
        kept.append(f"{_quote_lexeme(word)}:{','.join(str(p) for p in range(1, tf + 1))}")
    return " ".join(kept), len(words)


def encode_tsquery(terms: list[str]) -> str:
    """OR of the terms, each a verbatim lexeme."""
    return " | ".join(_quote_lexeme(term) for term in terms)


def encode_tsquery_repeated(term: str, times: int) -> str:
    """``term`` at ``times`` consecutive positions: with positions 1..tf (``encode_tokens``),
    a memory matches exactly when the term's tf is at least ``times``."""
    return " <-> ".join([_quote_lexeme(term)] * times)


def encode_tsquery_groups(groups: Sequence[Sequence[str]], excluding: Sequence[str]) -> str:
    """OR of the groups (each the AND of its terms), and none of ``excluding`` (if any)."""
    any_group = " | ".join(
        "(" + " & ".join(_quote_lexeme(term) for term in group) + ")" for group in groups
    )
    if not excluding:
        return any_group
    return f"({any_group}) & !({encode_tsquery(list(excluding))})"


def memory_from_row(row: dict[str, Any]) -> MemoryRow:
    return rows.memory_from_row(_DIALECT, row)


def context_from_row(row: dict[str, Any], memory_count: int | None = None) -> ContextRow:
    return rows.context_from_row(_DIALECT, row, memory_count)
