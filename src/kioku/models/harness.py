"""What an agent harness sends a hook endpoint and gets back (docs/integrations.md).

Claude Code's hooks post the event as JSON (a ``command`` hook reads it on stdin; ``kioku-hook``
forwards it) and read ``hookSpecificOutput.additionalContext`` from the answer. The event is
read leniently: Claude Code adds fields over time, and an unknown one must never fail a hook.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from kioku.models.base import MAX_QUERY_CHARS
from kioku.vocabulary import Confidence

HookTrust = Literal["trusted", "all"]
DEFAULT_MIN_CONFIDENCE: Confidence = "moderate"
"""Memories join a prompt when recall is at least this sure: ``moderate`` promises a relevant
memory is probably among them, and held-out questions whose answer is not stored reach it
0.5-3 % of the time (docs/concepts.md, *Confidence*); ``high`` is quieter still, and rare."""


class ClaudeCodeHookEvent(BaseModel):
    """A Claude Code hook's input: the fields kioku reads; others are ignored."""

    model_config = ConfigDict(extra="ignore")

    hook_event_name: str = Field(min_length=1, max_length=64)
    session_id: str | None = Field(default=None, max_length=200)
    prompt: str | None = Field(
        default=None, description="UserPromptSubmit: what the user typed (recall uses its start)."
    )
    source: str | None = Field(
        default=None, max_length=64, description="SessionStart: startup, resume, clear, compact."
    )


class HookOptions(BaseModel):
    """How the hook answers (query parameters of the endpoint; ``kioku setup`` writes them)."""

    contexts: list[str] = Field(default_factory=lambda: ["default"], min_length=1, max_length=8)
    trust: HookTrust = "trusted"
    pinned_chars: int = Field(default=4000, ge=400, le=100_000)
    recall_k: int = Field(default=3, ge=0, le=20)
    recall_chars: int = Field(default=2000, ge=200, le=100_000)
    min_confidence: Confidence = DEFAULT_MIN_CONFIDENCE
    capture: bool = False


class HookSpecificOutput(BaseModel):
    hookEventName: str
    additionalContext: str


class ClaudeCodeHookAnswer(BaseModel):
    """What Claude Code reads: context to add to the turn, or nothing (``{}``)."""

    model_config = ConfigDict(extra="forbid")

    hookSpecificOutput: HookSpecificOutput | None = None
    captured: str | None = Field(
        default=None, description="The id of the memory the prompt was captured as (capture on)."
    )

    def wire(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


MAX_HOOK_QUERY_CHARS = MAX_QUERY_CHARS
