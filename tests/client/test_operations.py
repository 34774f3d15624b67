"""Every SDK operation, through Client and AsyncClient alike, against the real app in-process."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kioku import Client, ConflictError, NotFoundError
from kioku.models import MemoryCreate, RecallFilters, TagFilter
from tests.conftest import ManualClock


def test_health_says_what_the_server_runs_on(kioku: Client) -> None:
    health = kioku.health()
    assert health.status == "ok" and health.database == "sqlite"


def test_contexts_lifecycle(kioku: Client) -> None:
    created = kioku.create_context("research", description="papers", sleep_mode="off")
    assert (created.name, created.description, created.sleep_mode) == ("research", "papers", "off")
    assert [c.name for c in kioku.list_contexts().items] == ["default", "research"]
    assert kioku.get_context("research").id == kioku.get_context(created.id).id == created.id
    updated = kioku.update_context("research", description="preprints")
    assert (updated.name, updated.description) == ("research", "preprints")  # name not sent
    kioku.remember("research", "a finding")
    stats = kioku.stats("research")
    assert (stats.name, stats.memories, stats.state_keys) == ("research", 1, 0)
    kioku.delete_context("research")
    with pytest.raises(NotFoundError):
        kioku.get_context("research")


def test_remember_sends_every_field_and_the_server_stamps_provenance(kioku: Client) -> None:
    memory = kioku.remember(
        "default",
        "Deploys happen on Fridays",
        content="After the 3 pm freeze.",
        type="decision",
        tags=["ops", "deploy"],
        importance=0.9,
        delivery_mode="always",
        source_uri="https://wiki.example/deploys",
        wait=True,
    )
    assert (memory.type, memory.tags, memory.importance) == ("decision", ["ops", "deploy"], 0.9)
    assert memory.content == "After the 3 pm freeze." and memory.delivery_mode == "always"
    assert memory.source_type == "api" and memory.trust_tier == "trusted"
    assert memory.embedding_status == "ready"
    fetched = kioku.get_memory("default", memory.id)
    assert fetched.summary == memory.summary and fetched.access_count == 1


def test_batch_takes_dicts_and_models_and_reports_per_item(kioku: Client) -> None:
    items = [{"summary": "first"}, MemoryCreate(summary="second", tags=["b"]), {"summary": ""}]
    result = kioku.remember_batch("default", items, wait=True)
    assert (result.created, result.failed) == (2, 1)
    assert result.results[2].error is not None
    assert result.results[2].error["field"] == "items[2].summary"


def test_list_memories_filters_and_pages(kioku: Client) -> None:
    for summary, type in [("a", "note"), ("b", "decision"), ("c", "decision")]:
        kioku.remember("default", summary, type=type, tags=[type])
    decisions = kioku.list_memories("default", filters={"type": "decision"})
    assert [m.summary for m in decisions.items] == ["c", "b"]
    tagged = kioku.list_memories("default", filters=RecallFilters(tags=TagFilter(any=["note"])))
    assert [m.summary for m in tagged.items] == ["a"]
    first = kioku.list_memories("default", limit=2)
    assert len(first.items) == 2 and first.next_cursor
    rest = kioku.list_memories("default", cursor=first.next_cursor, limit=2)
    assert [m.summary for m in rest.items] == ["a"] and rest.next_cursor is None


def test_update_memory_sends_only_what_was_given(kioku: Client, clock: ManualClock) -> None:
    memory = kioku.remember("default", "standup", source_uri="https://cal.example/1")
    moved = kioku.update_memory(
        "default",
        memory.id,
        delivery_mode="on_trigger",
        trigger_from=clock.now + timedelta(hours=1),
        source_uri=None,  # explicit None: cleared, unlike a field not given
    )
    assert moved.summary == "standup" and moved.delivery_mode == "on_trigger"
    assert moved.trigger_from == clock.now + timedelta(hours=1) and moved.source_uri is None
    assert kioku.update_memory("default", memory.id, importance=0.8).trigger_from is not None


def test_forget_then_purge(kioku: Client) -> None:
    memory = kioku.remember("default", "short-lived")
    kioku.forget("default", memory.id)
    with pytest.raises(NotFoundError):
        kioku.get_memory("default", memory.id)
    assert kioku.get_memory("default", memory.id, include_deleted=True).deleted_at is not None
    kioku.purge("default", memory.id)
    with pytest.raises(NotFoundError):
        kioku.get_memory("default", memory.id, include_deleted=True)


def test_recall_finds_with_filters(kioku: Client) -> None:
    wifi = kioku.remember("default", "The office wifi password rotates monthly", tags=["it"])
    kioku.remember("default", "Lunch is at noon", tags=["food"])
    result = kioku.recall("default", "wifi password", k=1, filters={"tags": ["it"]})
    assert [hit.id for hit in result.results] == [wifi.id]
    assert result.results[0].score_breakdown.fused > 0 and result.confidence != "none"
    trusted = kioku.recall("default", "wifi", filters=RecallFilters(trust_tier="trusted"))
    assert trusted.results[0].id == wifi.id


def test_recall_with_min_confidence_returns_nothing_rather_than_noise(kioku: Client) -> None:
    kioku.remember("default", "The office wifi password rotates monthly")
    kioku.remember("default", "Lunch is at noon")
    weak = kioku.recall("default", "password of the beach house", min_confidence="moderate")
    assert weak.results == [] and weak.withheld == 2 and weak.confidence in {"low", "none"}
    sure = kioku.recall("default", "office wifi password", min_confidence="moderate")
    assert sure.results and sure.withheld == 0


def test_pinned_and_upcoming(kioku: Client, clock: ManualClock) -> None:
    kioku.remember("default", "Answer briefly", delivery_mode="always", importance=1.0)
    kioku.remember("default", "ordinary")
    freeze = kioku.remember(
        "default",
        "release freeze",
        delivery_mode="on_trigger",
        trigger_from=clock.now + timedelta(days=2),
        trigger_until=clock.now + timedelta(days=3),
    )
    pinned = kioku.load_pinned("default", filters={"trust_tier": "trusted"})
    assert [(i.lane, i.summary) for i in pinned.items] == [("pinned", "Answer briefly")]
    assert kioku.load_pinned("default", cap=1).cap == 1
    window = kioku.upcoming("default", start=clock.now, end=clock.now + timedelta(days=7))
    assert [m.id for m in window.items] == [freeze.id] and window.window_from == clock.now
    assert kioku.upcoming("default", end=clock.now + timedelta(days=1)).items == []


def test_feedback_and_its_log(kioku: Client) -> None:
    memory = kioku.remember("default", "Deploys happen on Fridays")
    event = kioku.feedback("default", memory.id, True, query="when?", note="spot on")
    assert (event.helpful, event.query, event.note, event.channel) == (
        True,
        "when?",
        "spot on",
        "rest",
    )
    kioku.feedback("default", memory.id, False)
    log = kioku.list_feedback("default", memory_id=memory.id, limit=1)
    assert [e.helpful for e in log.items] == [False] and log.next_cursor
    assert [e.helpful for e in kioku.list_feedback("default", cursor=log.next_cursor).items] == [
        True
    ]


def test_state_lane_round_trips_any_key(kioku: Client) -> None:
    key = "ticket 42?#%20 進捗"  # path-unsafe characters must survive the URL
    state = kioku.set_state("default", key, {"step": 2, "done": None})
    assert state.key == key and state.value == {"step": 2, "done": None}
    assert kioku.get_state("default", key).value == {"step": 2, "done": None}
    kioku.set_state("default", "b", [1, 2])
    page = kioku.list_state("default", limit=1)
    assert [s.key for s in page.items] == ["b"] and page.next_cursor
    assert [s.key for s in kioku.list_state("default", cursor=page.next_cursor).items] == [key]
    kioku.delete_state("default", key)
    with pytest.raises(NotFoundError):
        kioku.get_state("default", key)


def test_set_state_ttl_default_explicit_and_forever(kioku: Client, clock: ManualClock) -> None:
    assert kioku.set_state("default", "absent", 1).expires_in_seconds == 86400
    assert kioku.set_state("default", "minute", 1, ttl_seconds=60).expires_in_seconds == 60
    forever = kioku.set_state("default", "forever", 1, ttl_seconds=None)
    assert forever.expires_at is None and forever.expires_in_seconds is None
    clock.advance(seconds=86401)
    assert [s.key for s in kioku.list_state("default").items] == ["forever"]
    with pytest.raises(NotFoundError):
        kioku.get_state("default", "absent")


def test_forget_by_query_previews_then_forgets_exactly_the_preview(kioku: Client) -> None:
    rumour = kioku.remember("default", "Rumour: the office moves in June", tags=["gossip"])
    kept = kioku.remember("default", "The office lease runs until 2028")
    preview = kioku.forget_by_query("default", "office moves", filters={"tags": ["gossip"]})
    assert preview.status == "preview" and [m.id for m in preview.matches] == [rumour.id]
    assert preview.confirmation is not None
    kioku.remember("default", "Rumour: the office moves to Osaka", tags=["gossip"])
    with pytest.raises(ConflictError):  # one more match since the preview: nothing goes
        kioku.forget_by_query(
            "default", "office moves", filters={"tags": ["gossip"]},
            confirmation=preview.confirmation,
        )  # fmt: skip
    again = kioku.forget_by_query("default", "office moves", filters={"tags": ["gossip"]})
    done = kioku.forget_by_query(
        "default", "office moves", filters={"tags": ["gossip"]}, confirmation=again.confirmation
    )
    assert done.status == "forgotten" and len(done.forgotten_ids) == 2
    assert [m.id for m in kioku.list_memories("default").items] == [kept.id]
    filtered = kioku.forget_by_query("default", filters=RecallFilters(type="note"), k=1)
    assert filtered.count == 1 and filtered.matches[0].score is None
