from __future__ import annotations

import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.errors import InvalidInputError, NotFoundError, PayloadTooLargeError
from kioku.models import BatchCreate, MemoryCreate, MemoryUpdate, RecallFilters
from kioku.runtime import Runtime
from kioku.service.principal import Principal


def remember(runtime: Runtime, principal: Principal, summary: str, **kw: object):
    return runtime.memories.remember(principal, "default", MemoryCreate(summary=summary, **kw))  # type: ignore[arg-type]


def test_remember_stamps_provenance_from_the_channel(runtime: Runtime) -> None:
    ws = runtime.default_workspace_id
    for channel, expected in [("rest", "api"), ("cli", "manual"), ("import", "import")]:
        memory = remember(runtime, Principal(ws, channel=channel), f"via {channel}")  # type: ignore[arg-type]
        assert memory.source_type == expected
        assert memory.trust_tier == "trusted"


def test_memories_in_an_external_context_are_external(
    runtime: Runtime, principal: Principal
) -> None:
    from kioku.models import ContextCreate

    runtime.contexts.create_context(principal, ContextCreate(name="inbox", trust_tier="external"))
    memory = runtime.memories.remember(principal, "inbox", MemoryCreate(summary="from outside"))
    assert memory.trust_tier == "external"


def test_remember_embeds_inline_when_not_async(runtime: Runtime, principal: Principal) -> None:
    assert remember(runtime, principal, "hello").embedding_status == "ready"


def test_content_over_the_cap_is_413_on_content(runtime: Runtime, principal: Principal) -> None:
    with pytest.raises(PayloadTooLargeError) as info:
        remember(
            runtime, principal, "big", content="x" * (runtime.settings.limits.max_content_bytes + 1)
        )
    assert info.value.field == "content"


def test_batch_reports_each_bad_item_and_writes_the_rest(
    runtime: Runtime, principal: Principal
) -> None:
    items = [{"summary": "one"}, {"summary": ""}, {"summary": "three", "importance": 7}]
    result = runtime.memories.remember_batch(principal, "default", BatchCreate(items=items))
    assert (result.created, result.failed) == (1, 2)
    assert (
        result.results[1].error is not None
        and result.results[1].error["field"] == "items[1].summary"
    )
    assert (
        result.results[2].error is not None
        and result.results[2].error["field"] == "items[2].importance"
    )
    assert (
        runtime.store.count_memories(
            runtime.default_workspace_id, runtime.contexts.resolve(principal, "default").id
        )
        == 1
    )


def test_atomic_batch_with_one_bad_item_writes_nothing(
    runtime: Runtime, principal: Principal
) -> None:
    items = [{"summary": "one"}, {"summary": "two", "delivery_mode": "weekly"}]
    with pytest.raises(InvalidInputError) as info:
        runtime.memories.remember_batch(principal, "default", BatchCreate(items=items, atomic=True))
    assert info.value.field == "items[1].delivery_mode"
    assert runtime.memories.list_memories(principal, "default").items == []


def test_update_reembeds_only_when_text_changes(
    runtime: Runtime, principal: Principal, embedder: FakeEmbedder
) -> None:
    memory = remember(runtime, principal, "original")
    calls = embedder.calls
    runtime.memories.update_memory(
        principal, "default", memory.id, MemoryUpdate(importance=0.9, tags=["a"])
    )
    assert embedder.calls == calls
    updated = runtime.memories.update_memory(
        principal, "default", memory.id, MemoryUpdate(summary="changed")
    )
    assert embedder.calls == calls + 1
    assert updated.summary == "changed"


def test_update_can_pin_and_unpin(runtime: Runtime, principal: Principal) -> None:
    memory = remember(runtime, principal, "a rule")
    pinned = runtime.memories.update_memory(
        principal, "default", memory.id, MemoryUpdate(delivery_mode="always")
    )
    assert pinned.delivery_mode == "always"
    unpinned = runtime.memories.update_memory(
        principal, "default", memory.id, MemoryUpdate(delivery_mode="on_recall")
    )
    assert unpinned.delivery_mode == "on_recall"


def test_update_to_on_trigger_needs_a_window(runtime: Runtime, principal: Principal) -> None:
    memory = remember(runtime, principal, "deadline")
    with pytest.raises(InvalidInputError) as info:
        runtime.memories.update_memory(
            principal, "default", memory.id, MemoryUpdate(delivery_mode="on_trigger")
        )
    assert info.value.field == "trigger_from"


def test_update_refuses_null_for_required_fields(runtime: Runtime, principal: Principal) -> None:
    memory = remember(runtime, principal, "a")
    with pytest.raises(InvalidInputError) as info:
        runtime.memories.update_memory(principal, "default", memory.id, MemoryUpdate(summary=None))
    assert info.value.field == "summary"


def test_forget_hides_and_purge_erases(runtime: Runtime, principal: Principal) -> None:
    memory = remember(runtime, principal, "temporary")
    runtime.memories.forget(principal, "default", memory.id)
    with pytest.raises(NotFoundError):
        runtime.memories.get_memory(principal, "default", memory.id)
    kept = runtime.memories.get_memory(principal, "default", memory.id, include_deleted=True)
    assert kept.deleted_at is not None
    runtime.memories.purge(principal, "default", memory.id)
    with pytest.raises(NotFoundError):
        runtime.memories.get_memory(principal, "default", memory.id, include_deleted=True)


def test_get_counts_an_access(runtime: Runtime, principal: Principal) -> None:
    memory = remember(runtime, principal, "a")
    runtime.memories.get_memory(principal, "default", memory.id)
    assert runtime.memories.get_memory(principal, "default", memory.id).access_count == 2


def test_a_memory_is_only_found_through_its_own_context(
    runtime: Runtime, principal: Principal
) -> None:
    from kioku.models import ContextCreate

    runtime.contexts.create_context(principal, ContextCreate(name="other"))
    memory = remember(runtime, principal, "a")
    with pytest.raises(NotFoundError):
        runtime.memories.get_memory(principal, "other", memory.id)


def test_another_workspace_gets_404_for_everything(
    runtime: Runtime, principal: Principal, other_principal: Principal
) -> None:
    memory = remember(runtime, principal, "secret")
    context_id = memory.context_id
    attempts = [
        lambda: runtime.contexts.get_context(other_principal, context_id),
        lambda: runtime.contexts.get_context(other_principal, "default"),  # its own has no default
        lambda: runtime.memories.get_memory(other_principal, context_id, memory.id),
        lambda: runtime.memories.forget(other_principal, context_id, memory.id),
        lambda: runtime.memories.purge(other_principal, context_id, memory.id),
        lambda: runtime.memories.update_memory(
            other_principal, context_id, memory.id, MemoryUpdate(summary="x")
        ),
        lambda: runtime.memories.list_memories(other_principal, context_id),
        lambda: runtime.memories.remember(
            other_principal, context_id, MemoryCreate(summary="plant")
        ),
    ]
    for attempt in attempts:
        with pytest.raises(NotFoundError):
            attempt()
    assert runtime.memories.get_memory(principal, "default", memory.id).summary == "secret"


def test_list_pages_through_everything_once(runtime: Runtime, principal: Principal) -> None:
    items = [{"summary": f"m{i}"} for i in range(23)]
    runtime.memories.remember_batch(principal, "default", BatchCreate(items=items))
    seen: list[str] = []
    cursor = None
    while True:
        page = runtime.memories.list_memories(principal, "default", cursor=cursor, limit=10)
        seen += [m.summary for m in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == [f"m{i}" for i in reversed(range(23))]


def test_list_filters_and_rejects_bad_cursor(runtime: Runtime, principal: Principal) -> None:
    remember(runtime, principal, "a", type="decision")
    remember(runtime, principal, "b")
    page = runtime.memories.list_memories(principal, "default", RecallFilters(type="decision"))
    assert [m.summary for m in page.items] == ["a"]
    with pytest.raises(InvalidInputError) as info:
        runtime.memories.list_memories(principal, "default", cursor="not-a-cursor")
    assert info.value.field == "cursor"
