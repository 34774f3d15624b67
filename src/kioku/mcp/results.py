"""Compact JSON for tool results: what an agent needs to act on, nothing it would pay tokens for.

A tool returns a model (its service's REST model, or one of ``kioku.mcp.outputs``);
``agent_json`` is how an agent reads it, one view per model, and ``dumps`` writes it as the
tool's text. Bookkeeping fields (workspace id, embedding status, access counters, update
stamps) are left out and empty values are dropped; provenance (``source_type``,
``trust_tier``, ``suspicious``) is always there, ``suspicious: false`` included. Nothing that
carries meaning is shortened: content is returned whole, and cuts are said (``truncated``).
"""

from __future__ import annotations

import json
from functools import singledispatch
from typing import Any

from pydantic import BaseModel

from kioku.mcp.outputs import RecallAnswer
from kioku.models import (
    Context,
    ContextPage,
    ExploreResult,
    Feedback,
    ForgetCandidate,
    ForgetResult,
    Memory,
    MemoryPage,
    Neighbour,
    PinnedResult,
    RecallHit,
    State,
    StatePage,
    UpcomingResult,
)
from kioku.models.sleep import SleepReport

_BOOKKEEPING = {
    "id", "workspace_id", "embedding_status", "access_count", "last_accessed_at", "updated_at",
    "superseded_by", "deleted_at", "suspicious", "score", "score_breakdown",
}  # fmt: skip


def dumps(value: Any) -> str:
    """Compact JSON text (no spaces, UTF-8 kept: Japanese stays readable and short)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def tool_text(result: BaseModel) -> str:
    """A tool's result as the text the agent reads."""
    return dumps(agent_json(result))


@singledispatch
def agent_json(result: BaseModel) -> Any:
    """A tool result as an agent reads it; by default the model without its empty fields."""
    return result.model_dump(mode="json", exclude_none=True)


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
    data["suspicious"] = bool(memory.suspicious)  # provenance: said when false too
    return data


agent_json.register(Memory, memory_json)


def hit_json(hit: RecallHit, *, explain: bool) -> dict[str, Any]:
    """A recall result: the memory, its score, and (asked for) how the score was made."""
    data = memory_json(hit, listed=True)
    data["score"] = round(hit.score, 4)
    if explain:
        data["score_breakdown"] = hit.score_breakdown.model_dump(mode="json")
    return data


def neighbour_json(neighbour: Neighbour) -> dict[str, Any]:
    """A memory reached through the graph: the memory, its activation and path."""
    data = memory_json(neighbour, listed=True)
    for name in ("activation", "hops", "path"):
        data.pop(name, None)
    data.update(activation=neighbour.activation, path=neighbour.path)
    return data


@agent_json.register
def _recall(answer: RecallAnswer) -> Any:
    result = answer.result
    hits = [hit_json(hit, explain=answer.explain) for hit in result.results]
    data: dict[str, Any] = {"results": hits, "confidence": result.confidence}
    if result.withheld:
        data["withheld"] = result.withheld
    if answer.include_related:
        data["related"] = [neighbour_json(n) for n in result.related]
    return data


@agent_json.register
def _memory_page(page: MemoryPage) -> Any:
    return {
        "items": [memory_json(m, listed=True) for m in page.items],
        "next_cursor": page.next_cursor,
    }


def forget_json(candidate: ForgetCandidate) -> dict[str, Any]:
    """A memory forget_by_query matched: enough to recognise it, empties dropped."""
    data: dict[str, Any] = {"memory_id": candidate.id}
    for name, value in candidate.model_dump(mode="json", exclude={"id", "created_at"}).items():
        if value not in (None, "", []):
            data[name] = round(value, 4) if name == "score" else value
    return data


@agent_json.register
def _forget_result(result: ForgetResult) -> Any:
    data: dict[str, Any] = {
        "status": result.status,
        "matches": [forget_json(m) for m in result.matches],
        "count": result.count,
        "truncated": result.truncated,
    }
    if result.pinned_kept:
        data["pinned_kept"] = result.pinned_kept
    if result.confirmation:
        data["confirmation"] = result.confirmation
    return data


def _delivered(items: list[dict[str, Any]], result: PinnedResult | UpcomingResult) -> Any:
    """Delivered memories (load_pinned, upcoming) and whether the cap cut some."""
    return {
        "items": items,
        "truncated": result.truncated,
        "total_available": result.total_available,
    }


@agent_json.register
def _pinned(result: PinnedResult) -> Any:
    items = [{**memory_json(item, listed=True), "lane": item.lane} for item in result.items]
    return _delivered(items, result)


@agent_json.register
def _upcoming(result: UpcomingResult) -> Any:
    return _delivered([memory_json(item, listed=True) for item in result.items], result)


@agent_json.register
def _feedback(event: Feedback) -> Any:
    return {"feedback_id": event.feedback_id}


def state_json(state: State) -> dict[str, Any]:
    """A state key as an agent reads it."""
    data = {"key": state.key, "value": state.value, "expires_in_seconds": state.expires_in_seconds}
    if state.ttl_clamped:
        data["ttl_clamped"] = True
    return data


agent_json.register(State, state_json)


@agent_json.register
def _state_page(page: StatePage) -> Any:
    return {"items": [state_json(s) for s in page.items], "next_cursor": page.next_cursor}


@agent_json.register
def _context(created: Context) -> Any:
    return {"context_id": created.id, "name": created.name}


@agent_json.register
def _context_page(page: ContextPage) -> Any:
    items = [
        {"context_id": c.id, "name": c.name, "trust_tier": c.trust_tier,
         "memories": c.memory_count, "description": c.description}
        for c in page.items
    ]  # fmt: skip
    return {"items": items}


@agent_json.register
def _explore(result: ExploreResult) -> Any:
    return {"neighbours": [neighbour_json(n) for n in result.neighbours]}


@agent_json.register
def _sleep_report(report: SleepReport) -> Any:
    """A run as an agent reads it: its id, status and counts per phase (the actions
    themselves are for review: ``sleep_report`` on REST, the SDK and the CLI)."""
    data: dict[str, Any] = {
        "run_id": report.run_id, "status": report.status, "summary": report.summary,
        "actions": len(report.actions),
    }  # fmt: skip
    if report.error:
        data["error"] = report.error
    return data
