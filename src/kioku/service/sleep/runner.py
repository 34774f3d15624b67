"""One Sleep run: open it, run the phases in order, close it with their counts.

Every phase writes through the store's logged primitives, each change committed with the action
that records it; so a run that dies half-way leaves a consistent store whose changes so far
are all in the log (and can be rolled back), and a run that fails is closed as ``failed``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kioku.search.facts import Facts
from kioku.service import telemetry
from kioku.service.memories import lexical_text
from kioku.service.sleep.config import SleepConfig
from kioku.service.sleep.log import log_sleep_action, start_sleep_run
from kioku.storage.ports import SleepPort
from kioku.storage.records import ContextRow
from kioku.storage.sleep import SleepRunRow
from kioku.vocabulary import SleepTrigger

log = logging.getLogger(__name__)


@dataclass
class RunContext:
    """What a phase needs: where it works, when, with which limits."""

    store: SleepPort
    workspace_id: str
    context: ContextRow
    run_id: str
    now: datetime
    config: SleepConfig
    summary: dict[str, Any] = field(default_factory=dict)
    read_facts: dict[str, tuple[str, Facts]] = field(default_factory=dict)
    """What each memory states (its text, read), once a run: the merge guard (``merge.py``)."""

    def tokens_of(self, summary: str, content: str, tags: list[str]) -> str:
        return lexical_text(summary, content, tags)

    def reject(self, phase: str, target: str, reason: str, proposal: Any = None) -> None:
        """Log a proposal the rules refused (nothing changes)."""
        log_sleep_action(
            self.store, self.workspace_id, self.run_id, phase, "rejected", target, self.now,
            after=proposal, note=reason,
        )  # fmt: skip
        counts = self.summary.setdefault("rejected", {})
        counts[phase] = counts.get(phase, 0) + 1


Phase = Callable[[RunContext], dict[str, Any]]


def run_sleep(
    store: SleepPort,
    workspace_id: str,
    context: ContextRow,
    phases: list[tuple[str, Phase]],
    *,
    config: SleepConfig,
    clock: Callable[[], datetime],
    trigger: SleepTrigger,
) -> str:
    """Run ``phases`` on one context as one logged run; returns the run id.

    ``ConflictError`` if another run of the context is in progress. A phase that raises
    closes the run as ``failed`` (what it logged so far stays, and can be rolled back).
    """
    run_id = str(uuid.uuid4())
    now = clock()
    start_sleep_run(
        store,
        workspace_id,
        SleepRunRow(run_id, workspace_id, context.id, "running", trigger, now),
        now - config.stale_after,
    )
    run = RunContext(store, workspace_id, context, run_id, now, config)
    try:
        for name, phase in phases:
            run.summary[name] = phase(run)
    except Exception as exc:
        log.exception("Sleep run %s of context %s failed", run_id, context.id)
        store.finish_sleep_run(
            workspace_id, run_id, "failed", clock(), run.summary, f"{type(exc).__name__}: {exc}"
        )
        telemetry.sleep_run(trigger, "failed", run.summary)
        return run_id
    store.finish_sleep_run(workspace_id, run_id, "done", clock(), run.summary)
    telemetry.sleep_run(trigger, "done", run.summary)
    return run_id
