"""The MCP tool of Sleep: run consolidation now.

``sleep_report`` and ``rollback_sleep`` are deliberately not tools: reviewing a run action by
action and undoing it are an operator's work (REST, SDK, CLI; rollback needs admin), not steps
of an agent loop, and the tool list has a size budget.
"""

from __future__ import annotations

from kioku.mcp.argument_types import CONTEXT_ID
from kioku.mcp.context import ToolContext, caller
from kioku.mcp.errors import tool_errors
from kioku.models.sleep import SleepReport


@tool_errors
def sleep(ctx: ToolContext, context_id: CONTEXT_ID = "default") -> SleepReport:
    """Consolidate a context now: merge near-duplicates, decay edges, re-score
    importance (reversible). Returns run_id, counts."""
    runtime, principal = caller(ctx)
    return runtime.sleep.sleep(principal, context_id)


SLEEP_TOOLS = [sleep]
