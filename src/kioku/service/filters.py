"""Wire filters (``RecallFilters``) → the storage ``MemoryFilter`` plus the contexts to search."""

from __future__ import annotations

from collections.abc import Sequence

from kioku.errors import InvalidInputError
from kioku.models import RecallFilters, TagFilter
from kioku.storage.records import MemoryFilter


def _as_list(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def memory_filter(filters: RecallFilters) -> MemoryFilter:
    """Translate and cross-check the filters (ranges must not be empty)."""
    tags_any: list[str] | None = None
    tags_all: list[str] | None = None
    if isinstance(filters.tags, TagFilter):
        tags_any, tags_all = filters.tags.any, filters.tags.all
    elif filters.tags is not None:
        tags_any = list(filters.tags)
    low, high = filters.importance_min, filters.importance_max
    if low is not None and high is not None and low > high:
        raise InvalidInputError(
            "importance_min must not exceed importance_max", field="filters.importance_min"
        )
    after, before = filters.created_after, filters.created_before
    if after is not None and before is not None and after >= before:
        raise InvalidInputError(
            "created_after must be before created_before", field="filters.created_after"
        )
    return MemoryFilter(
        types=_as_list(filters.type),
        tags_any=tags_any or None,
        tags_all=tags_all or None,
        importance_min=low,
        importance_max=high,
        created_after=after,
        created_before=before,
        source_types=_as_list(filters.source_type),
        trust_tier=filters.trust_tier,
        delivery_modes=_as_list(filters.delivery_mode),
        include_superseded=filters.include_superseded,
        include_deleted=filters.include_deleted,
    )
