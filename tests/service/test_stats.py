"""``stats``: counts per lane, scoped to the caller's context."""

from __future__ import annotations

import pytest

from kioku.errors import NotFoundError
from kioku.models import ContextCreate, FeedbackCreate, MemoryCreate, StateSet
from kioku.runtime import Runtime
from kioku.service.principal import Principal
from tests.conftest import ManualClock


def test_stats_counts_every_lane(
    runtime: Runtime, principal: Principal, other_principal: Principal, clock: ManualClock
) -> None:
    def remember(summary: str, **kw: object):
        return runtime.memories.remember(principal, "default", MemoryCreate(summary=summary, **kw))  # type: ignore[arg-type]

    kept = remember("A plain fact")
    remember("A goal", delivery_mode="always")
    remember("A window", delivery_mode="on_trigger", trigger_from=clock.now)
    gone = remember("Forgotten")
    runtime.memories.forget(principal, "default", gone.id)
    runtime.feedback.feedback(principal, "default", FeedbackCreate(memory_id=kept.id, helpful=True))
    runtime.feedback.feedback(
        principal, "default", FeedbackCreate(memory_id=kept.id, helpful=False)
    )
    runtime.state.set_state(principal, "default", "a", StateSet(value=1, ttl_seconds=10))
    runtime.state.set_state(principal, "default", "b", StateSet(value=2, ttl_seconds=None))
    clock.advance(seconds=11)
    connector = Principal(workspace_id=principal.workspace_id, channel="connector")
    runtime.memories.remember(connector, "default", MemoryCreate(summary="From Slack"))

    stats = runtime.stats.stats(principal, "default")
    assert (stats.memories, stats.deleted, stats.superseded) == (4, 1, 0)
    assert (stats.pinned, stats.triggered, stats.external) == (1, 1, 1)
    assert stats.embeddings == {"ready": 4, "pending": 0, "failed": 0}
    assert stats.embedding_model == runtime.embedder.name  # type: ignore[union-attr]
    assert stats.state_keys == 1  # "a" expired
    assert stats.feedback == {"helpful": 1, "unhelpful": 1}
    assert stats.last_sleep is None

    runtime.contexts.create_context(principal, ContextCreate(name="empty"))
    empty = runtime.stats.stats(principal, "empty")
    assert (empty.memories, empty.state_keys, empty.feedback["helpful"]) == (0, 0, 0)
    with pytest.raises(NotFoundError):
        runtime.stats.stats(other_principal, stats.context_id)
