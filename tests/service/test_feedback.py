"""The feedback lane: append-only, server-stamped, never recalled, a bounded nudge."""

from __future__ import annotations

import sqlite3

import pytest

from kioku.errors import NotFoundError
from kioku.models import ContextCreate, FeedbackCreate, MemoryCreate, RecallRequest
from kioku.runtime import Runtime
from kioku.search.rerank import MAX_SHIFT
from kioku.service.principal import Principal


def remember(runtime: Runtime, principal: Principal, summary: str, context: str = "default"):
    return runtime.memories.remember(principal, context, MemoryCreate(summary=summary))


def vote(runtime: Runtime, principal: Principal, memory_id: str, helpful: bool, **kw: object):
    data = FeedbackCreate(memory_id=memory_id, helpful=helpful, **kw)  # type: ignore[arg-type]
    return runtime.feedback.feedback(principal, "default", data)


def test_feedback_is_stamped_by_the_server(runtime: Runtime, principal: Principal, clock) -> None:
    memory = remember(runtime, principal, "Refunds take five business days")
    event = vote(runtime, principal, memory.id, True, query="how long do refunds take?")
    assert event.feedback_id and event.memory_id == memory.id
    assert event.actor == "local:rest" and event.channel == "rest"
    assert event.created_at == clock.now
    assert event.query == "how long do refunds take?"


def test_contradictory_events_are_both_kept_newest_first(
    runtime: Runtime, principal: Principal, clock
) -> None:
    memory = remember(runtime, principal, "Refunds take five business days")
    yes = vote(runtime, principal, memory.id, True)
    clock.advance(seconds=1)
    no = vote(runtime, principal, memory.id, False, note="outdated since April")
    page = runtime.feedback.list_feedback(principal, "default", memory_id=memory.id)
    assert [e.feedback_id for e in page.items] == [no.feedback_id, yes.feedback_id]


def test_the_memory_must_be_live_and_in_that_context(
    runtime: Runtime, principal: Principal, other_principal: Principal
) -> None:
    runtime.contexts.create_context(principal, ContextCreate(name="elsewhere"))
    here = remember(runtime, principal, "Refunds take five business days")
    there = remember(runtime, principal, "The office opens at nine", context="elsewhere")
    forgotten = remember(runtime, principal, "An old rule")
    runtime.memories.forget(principal, "default", forgotten.id)
    for memory_id in (there.id, forgotten.id, "not-an-id", "00000000-0000-0000-0000-000000000000"):
        with pytest.raises(NotFoundError) as err:
            vote(runtime, principal, memory_id, True)
        assert err.value.field == "memory_id"
    context_id = runtime.contexts.resolve(principal, "default").id
    with pytest.raises(NotFoundError):
        runtime.feedback.feedback(
            other_principal, context_id, FeedbackCreate(memory_id=here.id, helpful=False)
        )
    with pytest.raises(NotFoundError):
        runtime.feedback.list_feedback(other_principal, context_id)
    assert runtime.feedback.list_feedback(principal, "default").items == []


def test_the_database_refuses_to_edit_or_delete_an_event(
    runtime: Runtime, principal: Principal
) -> None:
    memory = remember(runtime, principal, "Refunds take five business days")
    vote(runtime, principal, memory.id, True)
    conn = runtime.store.db.connection()  # type: ignore[attr-defined]
    for statement in (
        "UPDATE retrieval_feedback SET helpful = 0",
        "DELETE FROM retrieval_feedback",
    ):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute(statement)
    assert conn.execute("SELECT count(*) FROM retrieval_feedback").fetchone()[0] == 1


def test_purging_the_memory_or_deleting_the_context_erases_its_feedback(
    runtime: Runtime, principal: Principal
) -> None:
    runtime.contexts.create_context(principal, ContextCreate(name="scratch"))
    purged = remember(runtime, principal, "Refunds take five business days")
    kept = remember(runtime, principal, "The office opens at nine")
    in_scratch = remember(runtime, principal, "Scratch note", context="scratch")
    vote(runtime, principal, purged.id, True)
    vote(runtime, principal, kept.id, False)
    runtime.feedback.feedback(
        principal, "scratch", FeedbackCreate(memory_id=in_scratch.id, helpful=True)
    )
    runtime.memories.purge(principal, "default", purged.id)
    runtime.contexts.delete_context(principal, "scratch")
    conn = runtime.store.db.connection()  # type: ignore[attr-defined]
    remaining = conn.execute("SELECT memory_id FROM retrieval_feedback").fetchall()
    assert [row[0] for row in remaining] == [kept.id]


def test_helpful_feedback_lifts_a_near_tie_and_never_more_than_the_bound(
    runtime: Runtime, principal: Principal
) -> None:
    first = remember(runtime, principal, "Quarterly alpha report draft")
    second = remember(runtime, principal, "Quarterly alpha report draft")
    request = RecallRequest(query="alpha report draft", k=2)
    before = runtime.recall.recall(principal, "default", request).results
    loser = before[1].id
    for _ in range(10):
        vote(runtime, principal, loser, True)
    after = runtime.recall.recall(principal, "default", request).results
    assert after[0].id == loser
    assert {first.id, second.id} == {hit.id for hit in after}
    for hit in after:
        assert 1 - MAX_SHIFT <= hit.score_breakdown.rerank <= 1 + MAX_SHIFT
