"""``/hooks/claude-code``: Claude Code's hooks, answered (docs/integrations.md).

An ``http`` hook posts its event here itself; a ``command`` hook runs ``kioku-hook``, which
forwards the event read on stdin. The answer is Claude Code's own hook output JSON
(``hookSpecificOutput.additionalContext``), or ``{}`` when there is nothing to add.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from kioku.api.deps import PrincipalDep, RuntimeDep
from kioku.api.errors import query_model
from kioku.models.harness import (
    DEFAULT_MIN_CONFIDENCE,
    ClaudeCodeHookEvent,
    HookOptions,
    HookTrust,
)
from kioku.vocabulary import Confidence

router = APIRouter(prefix="/hooks", tags=["harness"])


@router.post("/claude-code", operation_id="claude_code_hook")
def claude_code_hook(
    event: ClaudeCodeHookEvent,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    context: Annotated[
        list[str] | None,
        Query(description="Contexts whose pinned rules to add (default: default)."),
    ] = None,
    trust: Annotated[
        HookTrust, Query(description="trusted (default): only what may be obeyed; all.")
    ] = "trusted",
    pinned_chars: Annotated[int, Query(description="Cap of each pinned block.")] = 4000,
    recall_k: Annotated[int, Query(description="Memories to add for a prompt (0: none).")] = 3,
    recall_chars: Annotated[int, Query(description="Cap of the memories block.")] = 2000,
    min_confidence: Annotated[
        Confidence, Query(description="Add memories only when recall is at least this sure.")
    ] = DEFAULT_MIN_CONFIDENCE,
    capture: Annotated[
        bool, Query(description="Write each prompt as a memory in the session's thread.")
    ] = False,
) -> dict[str, Any]:
    """What a Claude Code hook adds to the turn: on SessionStart and UserPromptSubmit the
    pinned rules of the contexts (byte-identical while they are unchanged, capped, the cut
    said), and for a prompt the memories recall finds for it at or above `min_confidence`;
    with `capture`, the prompt is stored in the thread `claude-code:<session_id>`. Other
    events get `{}`."""
    options = query_model(
        HookOptions,
        {"contexts": "context"},
        contexts=context or ["default"],
        trust=trust,
        pinned_chars=pinned_chars,
        recall_k=recall_k,
        recall_chars=recall_chars,
        min_confidence=min_confidence,
        capture=capture,
    )
    return runtime.harness.claude_code_hook(principal, event, options).wire()
