"""``MemoryFilter`` → a SQL ``WHERE`` fragment over the ``memories`` table aliased ``m``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kioku.storage.records import MemoryFilter
from kioku.storage.sqlite.codec import encode_time

# Bound parameters per statement stay well under SQLite's limit.
_ID_CHUNK = 500


def chunked(values: Sequence[str], size: int = _ID_CHUNK) -> Iterator[Sequence[str]]:
    """Split a long id list into statement-sized pieces."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def placeholders(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def filter_sql(
    workspace_id: str, context_ids: Sequence[str], flt: MemoryFilter, *, by_rowid: bool = False
) -> tuple[str, list[Any]]:
    """Build the WHERE clause; the workspace scope is always the first condition.

    ``by_rowid``: the caller already names the rows (``m.seq IN ...``); the scope columns are
    then prefixed with ``+`` so SQLite looks the rows up by key instead of scanning the
    context's index.
    """
    plus = "+" if by_rowid else ""
    clauses = [
        f"{plus}m.workspace_id = ?",
        f"{plus}m.context_id IN ({placeholders(context_ids)})",
    ]
    params: list[Any] = [workspace_id, *context_ids]
    if not flt.include_deleted:
        clauses.append("m.deleted_at IS NULL")
    if not flt.include_superseded:
        clauses.append("m.superseded_by IS NULL")
    if flt.types is not None:
        clauses.append(f"m.type IN ({placeholders(flt.types)})")
        params.extend(flt.types)
    if flt.tags_any:
        clauses.append(
            "EXISTS (SELECT 1 FROM json_each(m.tags) t "
            f"WHERE t.value IN ({placeholders(flt.tags_any)}))"
        )
        params.extend(flt.tags_any)
    for tag in flt.tags_all or ():
        clauses.append("EXISTS (SELECT 1 FROM json_each(m.tags) t WHERE t.value = ?)")
        params.append(tag)
    if flt.importance_min is not None:
        clauses.append("m.importance >= ?")
        params.append(flt.importance_min)
    if flt.importance_max is not None:
        clauses.append("m.importance <= ?")
        params.append(flt.importance_max)
    if flt.created_after is not None:
        clauses.append("m.created_at > ?")
        params.append(encode_time(flt.created_after))
    if flt.created_before is not None:
        clauses.append("m.created_at < ?")
        params.append(encode_time(flt.created_before))
    if flt.source_types is not None:
        clauses.append(f"m.source_type IN ({placeholders(flt.source_types)})")
        params.extend(flt.source_types)
    if flt.trust_tier is not None:
        clauses.append("m.trust_tier = ?")
        params.append(flt.trust_tier)
    if flt.delivery_modes is not None:
        clauses.append(f"m.delivery_mode IN ({placeholders(flt.delivery_modes)})")
        params.extend(flt.delivery_modes)
    return " AND ".join(clauses), params
