"""Compact JSON for tool results: what an agent needs to act on, nothing it would pay tokens for.

Bookkeeping fields (workspace id, embedding status, access counters, update stamps) are left
out, empty values are dropped, and ``suspicious`` appears only when it is true. Nothing that
carries meaning is shortened: content is returned whole, and cuts are said (``truncated``).
"""

from __future__ import annotations

import json
from typing import Any

from kioku.models import ForgetCandidate, Memory, RecallHit

_BOOKKEEPING = {
    "id", "workspace_id", "embedding_status", "access_count", "last_accessed_at", "updated_at",
    "superseded_by", "deleted_at", "suspicious", "score", "score_breakdown",
}  # fmt: skip


def dumps(value: Any) -> str:
    """Compact JSON text (no spaces, UTF-8 kept: Japanese stays readable and short)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


# What a memory is unless said otherwise: a listed memory leaves these out (the tools'
# descriptions and schemas name the defaults), so a page of results does not repeat them.
LISTING_DEFAULTS = {"type": "note", "importance": 0.5, "delivery_mode": "on_recall"}


def memory_json(memory: Memory, *, listed: bool = False) -> dict[str, Any]:
    """One memory as an agent reads it: ``memory_id`` first, empties dropped. ``listed``: one
    of a page from one context (recall, list_memories, load_pinned, explore), which leaves out
    the context id the caller named and the fields at their defaults (``LISTING_DEFAULTS``)."""
    data: dict[str, Any] = {"memory_id": memory.id}
    for name, value in memory.model_dump(mode="json", exclude=_BOOKKEEPING).items():
        if value in (None, "", []):
            continue
        if listed and (name == "context_id" or LISTING_DEFAULTS.get(name, ...) == value):
            continue
        data[name] = value
    if memory.deleted_at is not None:
        data["deleted_at"] = memory.deleted_at.isoformat()
    if memory.suspicious:
        data["suspicious"] = True
    return data


def hit_json(hit: RecallHit, *, explain: bool) -> dict[str, Any]:
    """A recall result: the memory, its score, and (asked for) how the score was made."""
    data = memory_json(hit, listed=True)
    data["score"] = round(hit.score, 4)
    if explain:
        data["score_breakdown"] = hit.score_breakdown.model_dump(mode="json")
    return data


def forget_json(candidate: ForgetCandidate) -> dict[str, Any]:
    """A memory forget_by_query matched: enough to recognise it, empties dropped."""
    data: dict[str, Any] = {"memory_id": candidate.id}
    for name, value in candidate.model_dump(mode="json", exclude={"id", "created_at"}).items():
        if value not in (None, "", []):
            data[name] = round(value, 4) if name == "score" else value
    return data
