"""``MemoryFilter`` → a PostgreSQL ``WHERE`` fragment over ``memories`` aliased ``m``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, LiteralString

from kioku.storage.records import MemoryFilter


def filter_sql(
    workspace_id: str, context_ids: Sequence[str], flt: MemoryFilter
) -> tuple[LiteralString, list[Any]]:
    """Build the WHERE clause (``%s`` placeholders); the workspace scope always comes first.

    Lists travel as one array parameter each (``= ANY(%s)``), so no statement grows with them.
    Tags are a jsonb array of strings: ``?|`` is "any of", ``?&`` is "all of".
    """
    clauses: list[LiteralString] = ["m.workspace_id = %s", "m.context_id = ANY(%s)"]
    params: list[Any] = [workspace_id, list(context_ids)]
    if not flt.include_deleted:
        clauses.append("m.deleted_at IS NULL")
    if not flt.include_superseded:
        clauses.append("m.superseded_by IS NULL")
    if flt.types is not None:
        clauses.append("m.type = ANY(%s)")
        params.append(list(flt.types))
    if flt.tags_any:
        clauses.append("m.tags ?| %s::text[]")
        params.append(list(flt.tags_any))
    if flt.tags_all:
        clauses.append("m.tags ?& %s::text[]")
        params.append(list(flt.tags_all))
    if flt.importance_min is not None:
        clauses.append("m.importance >= %s")
        params.append(flt.importance_min)
    if flt.importance_max is not None:
        clauses.append("m.importance <= %s")
        params.append(flt.importance_max)
    if flt.created_after is not None:
        clauses.append("m.created_at > %s")
        params.append(flt.created_after)
    if flt.created_before is not None:
        clauses.append("m.created_at < %s")
        params.append(flt.created_before)
    if flt.source_types is not None:
        clauses.append("m.source_type = ANY(%s)")
        params.append(list(flt.source_types))
    if flt.trust_tier is not None:
        clauses.append("m.trust_tier = %s")
        params.append(flt.trust_tier)
    if flt.delivery_modes is not None:
        clauses.append("m.delivery_mode = ANY(%s)")
        params.append(list(flt.delivery_modes))
    return " AND ".join(clauses), params
