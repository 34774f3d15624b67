"""The Sleep operations every surface exposes, and the schedule inside ``kioku serve``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from kioku.clock import Clock, system_clock
from kioku.errors import ConflictError, NotFoundError
from kioku.models.sleep import (
    FactDifference,
    SleepAction,
    SleepKeptApart,
    SleepReport,
    SleepRequest,
    SleepRollback,
    SleepRun,
    SleepSkip,
)
from kioku.service.contexts import ContextService
from kioku.service.guard import operation
from kioku.service.jobs import Job, replica_name
from kioku.service.memories import lexical_text
from kioku.service.principal import Principal
from kioku.service.sleep.config import SleepConfig
from kioku.service.sleep.edges import decay_edges
from kioku.service.sleep.importance import rescore_importance
from kioku.service.sleep.llm import ChatModel, OpenAIChat
from kioku.service.sleep.llm_phases import llm_phases
from kioku.service.sleep.merge import merge_duplicates
from kioku.service.sleep.rollback import rollback_sleep_run
from kioku.service.sleep.runner import Phase, run_sleep
from kioku.service.sleep.sweep import sweep_state
from kioku.storage.ports import SleepPort, SleepSchedule
from kioku.storage.records import ContextRow
from kioku.storage.sleep import SleepActionRow, SleepRunRow
from kioku.vocabulary import SleepTrigger
from kioku.wording import count

log = logging.getLogger(__name__)


def run_view(row: SleepRunRow) -> SleepRun:
    return SleepRun(
        run_id=row.id, context_id=row.context_id, status=row.status,
        trigger=row.trigger, started_at=row.started_at,
        finished_at=row.finished_at, rolled_back_at=row.rolled_back_at,
        summary=row.summary, error=row.error,
    )  # fmt: skip


def action_view(row: SleepActionRow) -> SleepAction:
    return SleepAction(
        seq=row.seq, phase=row.phase, kind=row.kind, target=row.target,
        before=row.before, after=row.after, note=row.note, at=row.at,
    )  # fmt: skip


def kept_apart_view(row: SleepActionRow) -> SleepKeptApart | None:
    """A ``rejected`` action that kept a near-duplicate pair apart (``merge.py`` logs the
    differences in ``after``), as the report lists it; ``None`` for any other action."""
    after = row.after
    if row.kind != "rejected" or not isinstance(after, dict) or "differences" not in after:
        return None
    return SleepKeptApart(
        seq=row.seq, phase=row.phase, memory_ids=list(after.get("kept_apart") or []),
        differences=[FactDifference(**d) for d in after["differences"]],
        reason=row.note or "",
    )  # fmt: skip


class SleepService:
    """Run consolidation on a context, report a run, roll one back."""

    def __init__(
        self,
        store: SleepPort,
        contexts: ContextService,
        config: SleepConfig,
        *,
        chat: ChatModel | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self.store = store
        self.contexts = contexts
        self.config = config
        self.clock = clock
        self.chat = chat
        if chat is None and config.llm is not None:
            self.chat = OpenAIChat(config.llm)

    def phases(self, mode: str) -> list[tuple[str, Phase]]:
        """Phases 1-2 always; 3-5 in ``full`` mode (5 only with a chat model configured)."""
        phases: list[tuple[str, Phase]] = [("sweep", sweep_state), ("edges", decay_edges)]
        if mode == "full":
            phases += [("merge", merge_duplicates), ("importance", rescore_importance)]
            if self.chat is not None and self.config.llm is not None:
                phases.append(("llm", llm_phases(self.chat, self.config.llm)))
        return phases

    def run_context(
        self, workspace_id: str, context: ContextRow, mode: str, trigger: SleepTrigger
    ) -> str:
        """One run on a resolved context; returns its id."""
        return run_sleep(
            self.store, workspace_id, context, self.phases(mode),
            config=self.config, clock=self.clock, trigger=trigger,
        )  # fmt: skip

    def _report(self, workspace_id: str, run_id: str) -> SleepReport:
        row = self.store.get_sleep_run(workspace_id, run_id)
        if row is None:
            raise NotFoundError(f"Sleep run {run_id!r} not found", field="run_id")
        actions = self.store.list_sleep_actions(workspace_id, run_id)
        return SleepReport(
            **run_view(row).model_dump(),
            actions=[action_view(a) for a in actions],
            kept_apart=[kept for a in actions if (kept := kept_apart_view(a)) is not None],
        )

    def _run_of(self, principal: Principal, run_id: str) -> SleepRunRow:
        row = self.store.get_sleep_run(principal.workspace_id, run_id)
        if row is None or not principal.reaches([row.context_id]):
            raise NotFoundError(f"Sleep run {run_id!r} not found", field="run_id")
        return row

    @operation("write", audited=True)
    def sleep(
        self, principal: Principal, context_ref: str, data: SleepRequest | None = None
    ) -> SleepReport:
        """Consolidate a context now (docs/concepts.md) and return the run with every action.

        ``mode`` defaults to the context's ``sleep_mode`` (``full`` when it is ``off``: an
        explicit call is a request to run). ``ConflictError`` while a run is in progress."""
        context = self.contexts.resolve(principal, context_ref)
        mode = (data.mode if data else None) or context.sleep_mode
        run_id = self.run_context(
            principal.workspace_id, context, "full" if mode == "off" else mode, "manual"
        )
        return self._report(principal.workspace_id, run_id)

    @operation("read", in_context=False, allow_listed="resolves")
    def sleep_report(self, principal: Principal, run_id: str) -> SleepReport:
        """One run: status, counts per phase, and every action with its before/after."""
        return self._report(principal.workspace_id, self._run_of(principal, run_id).id)

    @operation("admin", audited=True, in_context=False, allow_listed="resolves")
    def rollback_sleep(self, principal: Principal, run_id: str) -> SleepRollback:
        """Undo everything a run changed (memories, tags, importance, edges; memories it
        wrote are erased). Only the context's latest run that is not rolled back."""
        run = self._run_of(principal, run_id)
        now = self.clock()
        outcome = rollback_sleep_run(
            self.store,
            principal.workspace_id,
            run.id,
            now,
            lexical_text,
            now - self.config.stale_after,
        )
        return SleepRollback(
            run=run_view(outcome.run),
            undone=outcome.undone,
            skipped=[SleepSkip(seq=seq, reason=reason) for seq, reason in outcome.skipped],
        )


def sleep_job(
    store: SleepSchedule,
    run_context: Callable[[str, ContextRow, str, SleepTrigger], str],
    every: timedelta,
) -> Job:
    """The schedule: each tick, every context whose ``sleep_mode`` is not ``off`` and whose
    own job ``sleep:<context_id>`` this replica wins for the period is run. The claim is in
    the database, so with several replicas each context runs once per period."""
    holder = replica_name()

    def run(now: Any) -> list[dict[str, str]]:
        ran: list[dict[str, str]] = []
        for workspace in store.list_workspaces():
            for context in store.list_contexts(workspace.id):
                if context.sleep_mode == "off":
                    continue
                if not store.claim_job(f"sleep:{context.id}", holder, now, now + every):
                    continue
                try:
                    run_id = run_context(workspace.id, context, context.sleep_mode, "schedule")
                except ConflictError:  # a manual run is in progress: next period
                    continue
                except Exception:
                    log.exception("scheduled Sleep of context %s failed", context.id)
                    continue
                ran.append({"context": context.name, "context_id": context.id,
                            "workspace_id": workspace.id, "run_id": run_id})  # fmt: skip
        return ran

    return Job("sleep", min(every, timedelta(minutes=5)), run, describe_sleeps)


def describe_sleeps(ran: list[dict[str, str]]) -> str:
    """The schedule's pass in words, with each run's id whole (``kioku sleep report`` takes
    it): ``slept 1 context: default (run 796eff34-…)``."""
    if not ran:
        return "no context was due"
    runs = ", ".join(f"{r['context']} (run {r['run_id']})" for r in ran)
    return f"slept {count(len(ran), 'context')}: {runs}"
