"""PostgreSQL's spelling of the memory filter: lists travel as one array parameter each
(``= ANY(%s)``), so no statement grows with them; tags are a jsonb array (``?|``, ``?&``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, LiteralString, cast

from kioku.storage.postgres.dialect import PostgresDialect
from kioku.storage.records import MemoryFilter
from kioku.storage.shared.filters import memory_filter

_DIALECT = PostgresDialect()


def filter_sql(
    workspace_id: str, context_ids: Sequence[str], flt: MemoryFilter
) -> tuple[LiteralString, list[Any]]:
    """Build the WHERE clause (``%s`` placeholders); the workspace scope always comes first."""
    where, params = memory_filter(_DIALECT, workspace_id, context_ids, flt)
    # Built from the filter's own fragments only: every value is a parameter.
    return cast(LiteralString, where), params
