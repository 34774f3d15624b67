"""Conversions between PostgreSQL rows and records; kioku's tokens as a ``tsvector`` literal."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from kioku.storage.records import ContextRow, MemoryRow

MEMORY_COLUMNS = (
    "id, workspace_id, context_id, summary, content, type, tags, importance, delivery_mode, "
    "trigger_from, trigger_until, source_type, source_uri, trust_tier, embedding_status, "
    "access_count, last_accessed_at, superseded_by, created_at, updated_at, deleted_at, "
    "instruction_like, external_id, external_owner, tainted, thread, thread_position"
)

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


def encode_tsquery_groups(groups: Sequence[Sequence[str]], excluding: Sequence[str]) -> str:
    """OR of the groups (each the AND of its terms), and none of ``excluding``."""
    any_group = " | ".join(
        "(" + " & ".join(_quote_lexeme(term) for term in group) + ")" for group in groups
    )
    return f"({any_group}) & !({encode_tsquery(list(excluding))})"


def encode_vector(vector: np.ndarray) -> str:
    """pgvector's text form; 9 significant digits round-trip a float32 exactly."""
    return "[" + ",".join(f"{x:.9g}" for x in np.asarray(vector, dtype=np.float32).tolist()) + "]"


def memory_from_row(row: dict[str, Any]) -> MemoryRow:
    return MemoryRow(
        id=row["id"],
        workspace_id=row["workspace_id"],
        context_id=row["context_id"],
        summary=row["summary"],
        content=row["content"],
        type=row["type"],
        tags=row["tags"],
        importance=row["importance"],
        delivery_mode=row["delivery_mode"],
        trigger_from=row["trigger_from"],
        trigger_until=row["trigger_until"],
        source_type=row["source_type"],
        source_uri=row["source_uri"],
        trust_tier=row["trust_tier"],
        embedding_status=row["embedding_status"],
        access_count=row["access_count"],
        last_accessed_at=row["last_accessed_at"],
        superseded_by=row["superseded_by"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        deleted_at=row["deleted_at"],
        instruction_like=row["instruction_like"],
        external_id=row["external_id"],
        external_owner=row["external_owner"],
        tainted=bool(row["tainted"]),
        thread=row["thread"],
        thread_position=row["thread_position"],
    )


def context_from_row(row: dict[str, Any], memory_count: int | None = None) -> ContextRow:
    return ContextRow(
        id=row["id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        description=row["description"],
        trust_tier=row["trust_tier"],
        sleep_mode=row["sleep_mode"],
        search_config=row["search_config"],
        embedding_model=row["embedding_model"],
        embedding_dim=row["embedding_dim"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        memory_count=memory_count,
        connector_id=row["connector_id"],
    )
