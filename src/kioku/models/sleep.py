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
    rollback), ``sweep_state`` (expired keys: not restored) or ``rejected`` (a proposal
    refused by the rules, or a near-duplicate pair kept apart because the two state different
    facts: nothing changed)."""

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


class FactDifference(BaseModel):
    """One kind of fact two memories state differently (docs/sleep.md)."""

    kind: str = Field(
        description="identifier, version, date, time, amount, number, negation or name."
    )
    first: list[str] = Field(
        description="As written in the first memory: what only it states (negation: its "
        "negating words)."
    )
    second: list[str] = Field(description="The same for the second memory.")


class SleepKeptApart(BaseModel):
    """A near-duplicate pair a merge left apart because the two state different facts
    (INV-1001 and INV-1002): both stay live. One ``rejected`` action of the run."""

    seq: int = Field(description="The action's place in the run's log.")
    phase: str = Field(description="merge (cosine) or llm_merge (the model's judgement).")
    memory_ids: list[str] = Field(description="The two memories, first and second.")
    differences: list[FactDifference]
    reason: str = Field(description="The logged note, in words.")


class SleepReport(SleepRun):
    """A run with every action it logged, in order."""

    actions: list[SleepAction]
    kept_apart: list[SleepKeptApart] = Field(
        default_factory=list,
        description="Near-duplicates not merged because they state different facts (also "
        "among the actions, as rejected).",
    )


class SleepSkip(BaseModel):
    """An action a rollback left alone, and why."""

    seq: int
    reason: str


class SleepRollback(BaseModel):
    """What ``rollback_sleep`` restored."""

    run: SleepRun
    undone: int = Field(description="Changes put back.")
    skipped: list[SleepSkip] = Field(description="Changes left alone (changed or purged since).")
