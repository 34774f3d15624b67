"""Background jobs that must run once per period across every replica (state and OAuth sweeps,
Sleep).

Each replica of ``kioku serve`` runs a ``JobRunner``. On every tick it tries to *claim* each
due job in the database (``Store.claim_job``: a conditional upsert that exactly one claimer
wins) for one period; only the winner runs it. A replica that dies mid-job loses nothing: the
jobs are idempotent sweeps and the claim runs out at the end of its period.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kioku.clock import Clock, system_clock
from kioku.service.suspicious import memory_is_suspicious
from kioku.storage.shared.jobs import JobStore
from kioku.storage.shared.memories import MemoryStore
from kioku.storage.shared.oauth import OAuthStore
from kioku.storage.shared.state import StateStore
from kioku.wording import count, plain

log = logging.getLogger(__name__)

MIN_TICK = 0.5
MAX_TICK = 30.0


@dataclass(frozen=True)
class Job:
    """A named piece of upkeep, run at most once per ``every`` across all replicas."""

    name: str
    every: timedelta
    run: Callable[[datetime], Any]
    """Called with "now"; what it returns is logged (e.g. how many rows a sweep removed), as
    JSON-ready data (the ``result`` field of a JSON log line)."""
    describe: Callable[[Any], str] = plain
    """What it returned, as the end of a sentence (``deleted 3 expired state keys``)."""


def sweep_expired_state(store: StateStore, every: timedelta) -> Job:
    """Delete expired state keys of every workspace (reads already hide them; this frees
    the space). The name is fixed: every replica claims the same job."""
    return Job(
        "state-sweep",
        every,
        lambda now: store.sweep_state(None, None, now),
        lambda n: f"deleted {count(n, 'expired state key')}",
    )


GRANT_RETENTION = timedelta(days=1)
"""How long an OAuth code's or token's row outlives its expiry (code 5 min, access token 1 h,
refresh token 30 days): meanwhile a replayed code or rotated-out refresh token is still
recognised, and ends its grant. Consent tickets (10 min) go as soon as they expire or are
used: nothing recognises a ticket later, and strangers can open them."""
UNUSED_CLIENT_RETENTION = timedelta(hours=24)
"""A registered OAuth client that holds no grant is deleted this long after registering: one
never used, or whose every grant expired and was swept (it registers again)."""


def sweep_oauth(store: OAuthStore, every: timedelta) -> Job:
    """Delete expired OAuth grants, spent consent tickets and registered clients that hold
    none (retention above)."""
    return Job(
        "oauth-sweep",
        every,
        lambda now: store.sweep_oauth(now - GRANT_RETENTION, now - UNUSED_CLIENT_RETENTION, now),
        lambda n: f"deleted {count(n, 'OAuth row')} (expired grants, spent tickets, idle clients)",
    )


VERDICT_SWEEP_EVERY = timedelta(minutes=1)
VERDICT_BATCH = 500
VERDICT_BATCHES_PER_RUN = 20
"""At most 10,000 memories judged per run (about 2 s of CPU for ordinary notes)."""


def judge_unjudged(store: MemoryStore) -> int:
    """Judge external memories that hold no injection-tripwire verdict and store each (rows
    written while their context was trusted, and verdicts cleared by migration 0019); returns
    how many were stored. Until then reads judge such a row, but ranking counts it unflagged."""
    stored = 0
    for _ in range(VERDICT_BATCHES_PER_RUN):
        rows = store.unjudged_external(VERDICT_BATCH)
        verdicts = [(ws, mid, memory_is_suspicious(summary, content))
                    for ws, mid, summary, content in rows]  # fmt: skip
        stored += store.store_verdicts(verdicts) if verdicts else 0
        if len(rows) < VERDICT_BATCH:
            break
    return stored


def sweep_verdicts(store: MemoryStore, every: timedelta = VERDICT_SWEEP_EVERY) -> Job:
    """``judge_unjudged`` once per ``every`` across the replicas."""
    return Job(
        "verdict-sweep",
        every,
        lambda now: judge_unjudged(store),
        lambda n: f"judged {count(n, 'external memory', 'external memories')}",
    )


def replica_name() -> str:
    """Who holds a claim: host, process and a random part (two runners in one process differ)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class JobRunner:
    """Claims and runs due jobs, in one background thread or one pass at a time (tests)."""

    def __init__(
        self,
        store: JobStore,
        jobs: Sequence[Job],
        *,
        holder: str | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self.store = store
        self.jobs = list(jobs)
        self.holder = holder or replica_name()
        self.clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_due(self) -> list[str]:
        """One pass: run every job this replica wins a claim on; returns their names."""
        ran: list[str] = []
        for job in self.jobs:
            now = self.clock()
            if not self.store.claim_job(job.name, self.holder, now, now + job.every):
                continue
            try:
                result = job.run(now)
            except Exception:
                log.exception("job %s failed on %s", job.name, self.holder)
                continue
            fields = {"job": job.name, "holder": self.holder, "result": result}
            said = job.describe(result)
            log.info("job %s ran on %s: %s", job.name, self.holder, said, extra={"fields": fields})
            ran.append(job.name)
        return ran

    @property
    def tick_seconds(self) -> float:
        shortest = min((job.every.total_seconds() for job in self.jobs), default=MAX_TICK)
        return max(MIN_TICK, min(MAX_TICK, shortest / 4))

    def start(self) -> None:
        if self._thread is not None or not self.jobs:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="kioku-jobs", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_due()
            except Exception:  # the database away for a moment: try again next tick
                log.exception("job runner error on %s; retrying", self.holder)
            self._stop.wait(self.tick_seconds)
