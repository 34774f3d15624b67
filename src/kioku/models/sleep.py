"""Wire models of Sleep: a run, its actions, a rollback (docs/concepts.md, "Sleep")."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from kioku.models.base import InputModel
from kioku.vocabulary import RunStatus, SleepTrigger


class SleepRequest(InputModel):
    """Run Sleep now on one context."""

    mode: Literal["edges_only", "full"] | None = Field(
        default=None,
        description="Phases to run; default the context's sleep_mode (full if it is off).",
    )


class SleepAction(BaseModel):
    """One logged action of a run: what changed, with the exact values before and after.

    ``kind`` is ``supersede``, ``tags``, ``importance``, ``edge``, ``create`` (undone by
    rollback), ``sweep_state`` (expired keys: not restored) or ``rejected`` (an LLM proposal
    refused by the rules: nothing changed)."""

    seq: int
    phase: str
    kind: str
    target: str
    before: Any
    after: Any
    note: str | None
    at: datetime


class SleepRun(BaseModel):
    """A consolidation run of one context and what it did, phase by phase."""

    run_id: str
    context_id: str
    status: RunStatus
    trigger: SleepTrigger
    started_at: datetime
    finished_at: datetime | None
    rolled_back_at: datetime | None
    summary: dict[str, Any] = Field(description="Counts per phase.")
    error: str | None


class SleepReport(SleepRun):
    """A run with every action it logged, in order."""

    actions: list[SleepAction]


class SleepSkip(BaseModel):
    """An action a rollback left alone, and why."""

    seq: int
    reason: str


class SleepRollback(BaseModel):
    """What ``rollback_sleep`` restored."""

    run: SleepRun
    undone: int = Field(description="Changes put back.")
    skipped: list[SleepSkip] = Field(description="Changes left alone (changed or purged since).")
