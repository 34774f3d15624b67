"""What makes a benchmark run's quality figures repeatable: the store it ranks over is written
the same way on every run, whatever the machine's speed or load.

Two things a store holds come from the run rather than from the data:

- **creation times.** ``remember_batch`` stamps a batch from the clock, so on a loaded machine
  the same batches land seconds apart instead of milliseconds. Ranking reads those gaps: the
  newer-fact-first stage only pairs memories written at least ``versions.MIN_GAP`` (1 s)
  apart, and the re-ranker's recency nudge is measured between candidates. Measured: the same
  LoCoMo conversation written with a 1.5 s pause before each batch ranks 28 of 150 questions
  differently (docs/benchmarks.md, *Repeatable quality figures*).
- **memory ids.** Random uuid4s, and some equal scores are ordered by id (a leg's cut at its
  depth, thread neighbours that no leg found), so which of several equally scored memories
  make the top k changed from run to run even on an idle machine.

So the harness writes its corpora at ``IMPORT_TIME``, a clock that stands still (``Stamps``
then gives the memories consecutive microseconds in the order written: one import, as a fast
machine writes it), and names memories with ``seeded_ids``. Timing figures are unaffected: the
work done is the same.

A third way load could reach a ranking is a store that is not settled when the questions
start: the embedding drain runs in the harness's own thread (no background worker), but a
memory over its wall-clock budget (``service/embedding.py``) is marked ``failed`` and would
then be missing from the vector leg. ``require_settled`` refuses to measure on such a store.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from kioku.runtime import Runtime
from kioku.service.principal import Principal

IMPORT_TIME = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)
"""When, for the store, every benchmark memory was written."""
SEED = 0


def import_clock() -> datetime:
    """The benchmark runtime's clock: always ``IMPORT_TIME``."""
    return IMPORT_TIME


def seeded_ids(seed: int = SEED) -> Callable[[], str]:
    """Memory ids that look like uuid4s but come from a seeded generator: the n-th memory a
    run writes gets the same id on every run."""
    rng = random.Random(seed)

    def new_id() -> str:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    return new_id


def name_memories_reproducibly(runtime: Runtime, seed: int = SEED) -> Runtime:
    """``runtime`` with its memory ids drawn from ``seeded_ids(seed)``."""
    runtime.memories.new_id = seeded_ids(seed)
    return runtime


class UnsettledStore(RuntimeError):
    """Some memory has no vector after the drain: figures measured now would depend on load."""


def require_settled(runtime: Runtime, principal: Principal, contexts: Sequence[str]) -> None:
    """Raise ``UnsettledStore`` unless every memory of ``contexts`` has its vector (nothing
    ``pending`` or ``failed``); without an embedder there is nothing to wait for."""
    if runtime.embedding is None:
        return
    for context in contexts:
        counts = runtime.stats.stats(principal, context).embeddings
        unsettled = {status: n for status, n in counts.items() if status != "ready" and n}
        if unsettled:
            raise UnsettledStore(
                f"context {context!r} is not fully embedded after the drain ({unsettled}): "
                "its figures would depend on the machine's load"
            )
