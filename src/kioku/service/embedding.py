"""Embedding after the write: a background worker that drains memories waiting for a vector.

The queue is the database itself (``embedding_status = 'pending'``), so nothing is lost when the
process dies: on start the worker picks up where the last one stopped. Work is *claimed* with a
lease (``Store.claim_embeddings``): several replicas' workers on one database take different
memories, and a crashed worker's claim runs out after its lease (``KIOKU_EMBED_LEASE_SECONDS``).
It is bounded: past ``queue_limit`` pending memories, writers embed inline (back-pressure
instead of unbounded lag). Each memory costs a bounded amount: only its first
``EMBED_MAX_CHARS`` characters are embedded, each call has a wall-clock budget
(``item_budget`` per memory; a memory over it is marked ``failed``, its reason logged), and
claims take turns across workspaces, so no tenant's memories stall another's.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Sequence
from datetime import timedelta

from kioku.clock import Clock, system_clock
from kioku.embeddings.base import Embedder
from kioku.service import telemetry
from kioku.service.deadline import DeadlineExceeded, call_within
from kioku.storage.ports import EmbeddingPort
from kioku.storage.records import EmbeddingJob
from kioku.wording import count

log = logging.getLogger(__name__)

_BATCH = 32
ITEM_BUDGET = timedelta(seconds=20)
"""Default wall-clock budget to embed one memory (bounded to ``EMBED_MAX_CHARS``: the bundled
model takes about a second on a busy core)."""
EMBEDDING_LEASE = timedelta(seconds=60)
"""How long a claim on pending memories lasts by default: far longer than embedding one batch
takes, short enough that a killed worker's batch is soon taken up by another."""


class EmbeddingScheduler:
    """Embeds pending memories, inline on request or in one background thread."""

    def __init__(
        self,
        store: EmbeddingPort,
        embedder: Embedder,
        *,
        queue_limit: int = 10_000,
        lease: timedelta = EMBEDDING_LEASE,
        item_budget: timedelta = ITEM_BUDGET,
        clock: Clock = system_clock,
    ) -> None:
        self.store = store
        self.clock = clock
        self.embedder = embedder
        self.queue_limit = queue_limit
        self.lease = lease
        self.item_budget = item_budget
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- inline

    def embed_jobs(self, jobs: Sequence[EmbeddingJob]) -> int:
        """Embed these jobs now and store their vectors; returns how many landed.

        Once the scheduler is stopped (the server is shutting down) no further batch starts:
        what is left stays pending, for the worker of the next start."""
        landed = 0
        for start in range(0, len(jobs), _BATCH):
            if self._stop.is_set():
                left = count(len(jobs) - start, "memory", "memories")
                log.warning("shutting down: %s left pending", left)
                break
            landed += self._embed_batch(jobs[start : start + _BATCH])
        telemetry.embedded(landed)
        return landed

    def _embed_batch(self, jobs: Sequence[EmbeddingJob]) -> int:
        texts = [job.text for job in jobs]
        budget = self.item_budget.total_seconds() * len(jobs)
        try:
            vectors = call_within(
                lambda: self.embedder.embed_documents(texts), budget, "kioku-embed-call"
            )
        except Exception as exc:
            if len(jobs) == 1:
                self._fail(jobs[0], exc)
                return 0
            # One bad (or slow) text must not sink its neighbours: retry one by one.
            return sum(self._embed_batch([job]) for job in jobs)
        groups: dict[tuple[str, str], list] = defaultdict(list)
        for job, vector in zip(jobs, vectors, strict=True):
            groups[(job.workspace_id, job.context_id)].append((job.memory_id, vector))
        return sum(
            self.store.store_embeddings(ws, ctx, self.embedder.name, items)
            for (ws, ctx), items in groups.items()
        )

    def _fail(self, job: EmbeddingJob, exc: Exception) -> None:
        """Give up on one memory: ``failed``, with the reason in the log (keyword search still
        finds it; re-embedding the context tries again)."""
        if isinstance(exc, DeadlineExceeded):
            log.error(
                "embedding failed for memory %s: over its time budget of %g s (%d characters)",
                job.memory_id, self.item_budget.total_seconds(), len(job.text),
            )  # fmt: skip
        else:
            log.error(
                "embedding failed for memory %s: %s: %s",
                job.memory_id, type(exc).__name__, exc, exc_info=exc,
            )  # fmt: skip
        self.store.mark_embedding_failed(job.workspace_id, [job.memory_id])

    def claim(self, limit: int) -> list[EmbeddingJob]:
        """Lease up to ``limit`` pending memories to this worker for ``lease``."""
        now = self.clock()
        return self.store.claim_embeddings(self.embedder.name, limit, now, now + self.lease)

    def _release(self, jobs: Sequence[EmbeddingJob]) -> None:
        """Give a failed batch's leases back (what landed is no longer pending, so only the
        rest is released), so a transient error costs a retry, not a lease period."""
        by_workspace: dict[str, list[str]] = defaultdict(list)
        for job in jobs:
            by_workspace[job.workspace_id].append(job.memory_id)
        for workspace_id, memory_ids in by_workspace.items():
            try:
                self.store.release_embeddings(workspace_id, memory_ids)
            except Exception:  # the lease then just runs out, as after a crash
                log.exception("could not release embedding leases")

    def reset(self, workspace_id: str, context_id: str) -> int:
        """Drop every vector of a context and its model, so each of its live memories waits
        for one of this embedder's (``kioku reembed``, on a context the caller resolved);
        how many wait."""
        return self.store.reset_embeddings(workspace_id, context_id)

    def drain(self) -> int:
        """Embed everything pending now, in the calling thread (CLI, tests, benchmark).

        Ends when no claimable memory is left: one whose vector cannot land (its context
        switched model meanwhile) stays leased, so it is not retried in a tight loop."""
        total = 0
        while jobs := self.claim(_BATCH * 4):
            total += self.embed_jobs(jobs)
        return total

    # -- background

    def start(self) -> None:
        """Start the worker thread (idempotent)."""
        with self._lock:
            if self._thread is not None:
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="kioku-embedder", daemon=True)
            self._thread.start()
            self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the worker, and any inline embedding, after its current batch."""
        self._stop.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        self._wake.set()
        thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None

    def notify(self) -> None:
        """Tell the worker there is new work."""
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            jobs: list[EmbeddingJob] = []
            try:
                jobs = self.claim(_BATCH)
                if jobs:
                    self.embed_jobs(jobs)
                    continue
            except Exception:
                log.exception("embedding worker error; retrying shortly")
                self._release(jobs)
                self._stop.wait(1.0)
                continue
            self._wake.wait(5.0)
