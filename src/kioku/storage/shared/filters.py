"""``MemoryFilter`` → a SQL ``WHERE`` fragment over the ``memories`` table aliased ``m``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kioku.storage.records import MemoryFilter
from kioku.storage.shared.database import Dialect


def memory_filter(
    d: Dialect,
    workspace_id: str,
    context_ids: Sequence[str],
    flt: MemoryFilter,
    *,
    scope_prefix: str = "",
) -> tuple[str, list[Any]]:
    """The WHERE clause (``%s`` placeholders) and its parameters; the workspace scope is
    always the first condition. ``scope_prefix`` goes before the two scope columns (SQLite's
    ``+`` keeps the planner off their index when the caller names the rows already)."""
    contexts, params = d.any(f"{scope_prefix}m.context_id", context_ids)
    clauses = [f"{scope_prefix}m.workspace_id = %s", contexts]
    params.insert(0, workspace_id)
    if not flt.include_deleted:
        clauses.append("m.deleted_at IS NULL")
    if not flt.include_superseded:
        clauses.append("m.superseded_by IS NULL")
    lists = (
        ("m.type", flt.types),
        ("m.source_type", flt.source_types),
        ("m.delivery_mode", flt.delivery_modes),
    )
    for column, values in lists:
        if values is not None:
            clause, values_params = d.any(column, values)
            clauses.append(clause)
            params += values_params
    for tags, every in ((flt.tags_any, False), (flt.tags_all, True)):
        if tags:
            clause, tag_params = d.has_tags("m.tags", tags, every=every)
            clauses.append(clause)
            params += tag_params
    bounds = (
        ("m.importance >= %s", flt.importance_min),
        ("m.importance <= %s", flt.importance_max),
        ("m.created_at > %s", d.time(flt.created_after)),
        ("m.created_at < %s", d.time(flt.created_before)),
        ("m.trust_tier = %s", flt.trust_tier),
    )
    for clause, value in bounds:
        if value is not None:
            clauses.append(clause)
            params.append(value)
    return " AND ".join(clauses), params
