"""MCP tools of the lanes beside recall (pinned delivery, feedback, state) and of contexts."""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, Field, JsonValue

from kioku.mcp.argument_types import BROWSE_FILTERS, CONTEXT_ID
from kioku.mcp.context import ToolContext, caller
from kioku.mcp.errors import tool_errors
from kioku.mcp.outputs import Deleted
from kioku.models import (
    DEFAULT_STATE_TTL,
    Context,
    ContextCreate,
    ContextPage,
    ContextStats,
    Feedback,
    FeedbackCreate,
    PinnedResult,
    RecallFilters,
    State,
    StatePage,
    StateSet,
    TrustTier,
    UpcomingResult,
)

STATE_KEY = Annotated[str, Field(description='e.g. "ticket:T-1001"; no "/".')]


@tool_errors
def load_pinned(
    ctx: ToolContext,
    context_id: CONTEXT_ID = "default",
    cap: Annotated[int, Field(description="Clamped to 1-1000.")] = 100,
    filters: BROWSE_FILTERS = None,
) -> PinnedResult:
    """Start every turn with this: goals, guardrails and rules pinned with
    delivery_mode="always", plus on_trigger memories due now. Use
    filters={"trust_tier": "trusted"} for rules you will obey."""
    runtime, principal = caller(ctx)
    return runtime.delivery.load_pinned(
        principal,
        context_id,
        cap=cap,
        filters=filters.to_recall_filters() if filters else RecallFilters(),
    )


@tool_errors
def upcoming(
    ctx: ToolContext,
    context_id: CONTEXT_ID = "default",
    start: Annotated[AwareDatetime | None, Field(description="Default: now.")] = None,
    end: Annotated[AwareDatetime | None, Field(description="Default: start + 7 days.")] = None,
) -> UpcomingResult:
    """on_trigger memories whose window meets [start, end): what falls due soon."""
    runtime, principal = caller(ctx)
    return runtime.delivery.upcoming(principal, context_id, start=start, end=end)


@tool_errors
def feedback(
    ctx: ToolContext,
    memory_id: Annotated[str, Field(description="A memory recall returned.")],
    helpful: Annotated[bool, Field(description="Did it help answer the query?")],
    context_id: CONTEXT_ID = "default",
    query: Annotated[str | None, Field(description="The query it was recalled for.")] = None,
    note: str | None = None,
) -> Feedback:
    """After using (or rejecting) a recalled memory: did it help? Nudges future ranking."""
    data = FeedbackCreate(memory_id=memory_id, helpful=helpful, query=query, note=note)
    runtime, principal = caller(ctx)
    return runtime.feedback.feedback(principal, context_id, data)


@tool_errors
def set_state(
    ctx: ToolContext,
    key: STATE_KEY,
    value: Annotated[JsonValue, Field(description="Any JSON (max 16 KiB).")],
    context_id: CONTEXT_ID = "default",
    ttl_seconds: Annotated[
        int | None, Field(description="Default 1 day (1 s-30 days); null: forever.")
    ] = DEFAULT_STATE_TTL,
) -> State:
    """Save where a task stands (phase, step, ids) to resume it later. Never recalled;
    expires by TTL; overwrites the key."""
    data = StateSet(value=value, ttl_seconds=ttl_seconds)
    runtime, principal = caller(ctx)
    return runtime.state.set_state(principal, context_id, key, data)


@tool_errors
def get_state(
    ctx: ToolContext,
    context_id: CONTEXT_ID = "default",
    key: Annotated[str | None, Field(description="Omit to list every live key.")] = None,
    cursor: Annotated[str | None, Field(description="When listing: next_cursor.")] = None,
) -> State | StatePage:
    """Read a task's saved state (expired: an error), or without key list live keys."""
    runtime, principal = caller(ctx)
    if key is not None:
        return runtime.state.get_state(principal, context_id, key)
    return runtime.state.list_state(principal, context_id, cursor=cursor)


@tool_errors
def delete_state(ctx: ToolContext, key: STATE_KEY, context_id: CONTEXT_ID = "default") -> Deleted:
    """Delete a state key when its task is done."""
    runtime, principal = caller(ctx)
    runtime.state.delete_state(principal, context_id, key)
    return Deleted(deleted=key)


@tool_errors
def list_contexts(ctx: ToolContext) -> ContextPage:
    """The memory spaces (contexts) you can use, with trust tier and memory counts."""
    runtime, principal = caller(ctx)
    return runtime.contexts.list_contexts(principal)


@tool_errors
def create_context(
    ctx: ToolContext,
    name: Annotated[str, Field(description="Lowercase a-z0-9_-, unique.")],
    description: str = "",
    trust_tier: Annotated[
        TrustTier, Field(description="external for text from outside (chat, web, mail).")
    ] = "trusted",
) -> Context:
    """Create a memory space for a project, agent or source."""
    data = ContextCreate(name=name, description=description, trust_tier=trust_tier)
    runtime, principal = caller(ctx)
    return runtime.contexts.create_context(principal, data)


@tool_errors
def stats(ctx: ToolContext, context_id: CONTEXT_ID = "default") -> ContextStats:
    """Counts per lane of a context (memories, pinned, state, feedback), last Sleep."""
    runtime, principal = caller(ctx)
    return runtime.stats.stats(principal, context_id)


LANE_TOOLS = [
    load_pinned, upcoming, feedback, set_state, get_state, delete_state, list_contexts,
    create_context, stats,
]  # fmt: skip
