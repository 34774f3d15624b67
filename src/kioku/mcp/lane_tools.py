"""MCP tools of the lanes beside recall (pinned delivery, feedback, state) and of contexts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import AwareDatetime, Field, JsonValue

from kioku.mcp.errors import tool_errors
from kioku.mcp.results import dumps, memory_json
from kioku.mcp.server_parts import BROWSE_FILTERS, CONTEXT_ID, PrincipalOf
from kioku.models import (
    DEFAULT_STATE_TTL,
    ContextCreate,
    FeedbackCreate,
    RecallFilters,
    State,
    StateSet,
    TrustTier,
)
from kioku.runtime import Runtime

STATE_KEY = Annotated[str, Field(description='e.g. "ticket:T-1001"; no "/".')]


def state_json(state: State) -> dict[str, Any]:
    """A state key as an agent reads it."""
    data = {"key": state.key, "value": state.value, "expires_in_seconds": state.expires_in_seconds}
    if state.ttl_clamped:
        data["ttl_clamped"] = True
    return data


def lane_tools(
    runtime: Callable[[], Runtime], principal_of: PrincipalOf
) -> list[Callable[..., str]]:
    """The pinned, feedback, state and context tool functions (``runtime()`` at call time)."""

    @tool_errors
    def load_pinned(
        ctx: Context,
        context_id: CONTEXT_ID = "default",
        cap: Annotated[int, Field(description="Clamped to 1-1000.")] = 100,
        filters: BROWSE_FILTERS = None,
    ) -> str:
        """Start every turn with this: goals, guardrails and rules pinned with
        delivery_mode="always", plus on_trigger memories due now. Use
        filters={"trust_tier": "trusted"} for rules you will obey."""
        result = runtime().delivery.load_pinned(
            principal_of(ctx),
            context_id,
            cap=cap,
            filters=filters.to_recall_filters() if filters else RecallFilters(),
        )
        items = [{**memory_json(item, listed=True), "lane": item.lane} for item in result.items]
        return dumps(
            {
                "items": items,
                "truncated": result.truncated,
                "total_available": result.total_available,
            }
        )

    @tool_errors
    def upcoming(
        ctx: Context,
        context_id: CONTEXT_ID = "default",
        start: Annotated[AwareDatetime | None, Field(description="Default: now.")] = None,
        end: Annotated[AwareDatetime | None, Field(description="Default: start + 7 days.")] = None,
    ) -> str:
        """on_trigger memories whose window meets [start, end): what falls due soon."""
        result = runtime().delivery.upcoming(principal_of(ctx), context_id, start=start, end=end)
        items = [memory_json(item, listed=True) for item in result.items]
        return dumps(
            {
                "items": items,
                "truncated": result.truncated,
                "total_available": result.total_available,
            }
        )

    @tool_errors
    def feedback(
        ctx: Context,
        memory_id: Annotated[str, Field(description="A memory recall returned.")],
        helpful: Annotated[bool, Field(description="Did it help answer the query?")],
        context_id: CONTEXT_ID = "default",
        query: Annotated[str | None, Field(description="The query it was recalled for.")] = None,
        note: str | None = None,
    ) -> str:
        """After using (or rejecting) a recalled memory: did it help? Nudges future ranking."""
        data = FeedbackCreate(memory_id=memory_id, helpful=helpful, query=query, note=note)
        event = runtime().feedback.feedback(principal_of(ctx), context_id, data)
        return dumps({"feedback_id": event.feedback_id})

    @tool_errors
    def set_state(
        ctx: Context,
        key: STATE_KEY,
        value: Annotated[JsonValue, Field(description="Any JSON (max 16 KiB).")],
        context_id: CONTEXT_ID = "default",
        ttl_seconds: Annotated[
            int | None, Field(description="Default 1 day (1 s-30 days); null: forever.")
        ] = DEFAULT_STATE_TTL,
    ) -> str:
        """Save where a task stands (phase, step, ids) to resume it later. Never recalled;
        expires by TTL; overwrites the key."""
        data = StateSet(value=value, ttl_seconds=ttl_seconds)
        return dumps(
            state_json(runtime().state.set_state(principal_of(ctx), context_id, key, data))
        )

    @tool_errors
    def get_state(
        ctx: Context,
        context_id: CONTEXT_ID = "default",
        key: Annotated[str | None, Field(description="Omit to list every live key.")] = None,
        cursor: Annotated[str | None, Field(description="When listing: next_cursor.")] = None,
    ) -> str:
        """Read a task's saved state (expired: an error), or without key list live keys."""
        principal = principal_of(ctx)
        if key is not None:
            return dumps(state_json(runtime().state.get_state(principal, context_id, key)))
        page = runtime().state.list_state(principal, context_id, cursor=cursor)
        return dumps(
            {"items": [state_json(s) for s in page.items], "next_cursor": page.next_cursor}
        )

    @tool_errors
    def delete_state(ctx: Context, key: STATE_KEY, context_id: CONTEXT_ID = "default") -> str:
        """Delete a state key when its task is done."""
        runtime().state.delete_state(principal_of(ctx), context_id, key)
        return dumps({"deleted": key})

    @tool_errors
    def list_contexts(ctx: Context) -> str:
        """The memory spaces (contexts) you can use, with trust tier and memory counts."""
        page = runtime().contexts.list_contexts(principal_of(ctx))
        items = [
            {"context_id": c.id, "name": c.name, "trust_tier": c.trust_tier,
             "memories": c.memory_count, "description": c.description}
            for c in page.items
        ]  # fmt: skip
        return dumps({"items": items})

    @tool_errors
    def create_context(
        ctx: Context,
        name: Annotated[str, Field(description="Lowercase a-z0-9_-, unique.")],
        description: str = "",
        trust_tier: Annotated[
            TrustTier, Field(description="external for text from outside (chat, web, mail).")
        ] = "trusted",
    ) -> str:
        """Create a memory space for a project, agent or source."""
        data = ContextCreate(name=name, description=description, trust_tier=trust_tier)
        created = runtime().contexts.create_context(principal_of(ctx), data)
        return dumps({"context_id": created.id, "name": created.name})

    @tool_errors
    def stats(ctx: Context, context_id: CONTEXT_ID = "default") -> str:
        """Counts per lane of a context (memories, pinned, state, feedback), last Sleep."""
        result = runtime().stats.stats(principal_of(ctx), context_id)
        return dumps(result.model_dump(mode="json", exclude_none=True))

    return [
        load_pinned,
        upcoming,
        feedback,
        set_state,
        get_state,
        delete_state,
        list_contexts,
        create_context,
        stats,
    ]
