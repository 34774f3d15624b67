"""The MCP tool of Sleep: run consolidation now.

``sleep_report`` and ``rollback_sleep`` are deliberately not tools: reviewing a run action by
action and undoing it are an operator's work (REST, SDK, CLI; rollback needs admin), not steps
of an agent loop, and the tool list has a size budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context

from kioku.mcp.errors import tool_errors
from kioku.mcp.results import dumps
from kioku.mcp.server_parts import CONTEXT_ID, PrincipalOf
from kioku.models.sleep import SleepReport
from kioku.runtime import Runtime


def report_json(report: SleepReport) -> dict[str, Any]:
    """A run as an agent reads it: its id, status and counts per phase (the actions
    themselves are for review: ``sleep_report`` on REST, the SDK and the CLI)."""
    data: dict[str, Any] = {
        "run_id": report.run_id, "status": report.status, "summary": report.summary,
        "actions": len(report.actions),
    }  # fmt: skip
    if report.error:
        data["error"] = report.error
    return data


def sleep_tools(
    runtime: Callable[[], Runtime], principal_of: PrincipalOf
) -> list[Callable[..., str]]:
    """The Sleep tool functions (``runtime()`` at call time)."""

    @tool_errors
    def sleep(ctx: Context, context_id: CONTEXT_ID = "default") -> str:
        """Consolidate a context now: merge near-duplicates, decay edges, re-score
        importance (reversible). Returns run_id, counts."""
        report = runtime().sleep.sleep(principal_of(ctx), context_id)
        return dumps(report_json(report))

    return [sleep]
