"""What KiokuStore writes in kioku and how it reads kioku back: contexts, memories, provenance,
the trust filter, keys that raced, memories that are not the store's, many contexts at once."""

from __future__ import annotations

import json

import pytest

from kioku import Client
from kioku.integrations.langgraph import KiokuStore
from kioku.integrations.langgraph._values import key_tag


def test_a_namespace_is_a_trusted_context_and_an_item_a_memory(
    store: KiokuStore, sdk: Client
) -> None:
    store.put(("users", "alice", "memories"), "food", {"text": "Alice likes green tea", "n": 3})
    context = sdk.get_context("lg-users-alice-memories")
    assert context.trust_tier == "trusted" and context.sleep_mode == "edges_only"
    assert context.description == 'LangGraph store namespace: ["users", "alice", "memories"]'
    [memory] = sdk.list_memories(context.id).items
    assert (memory.source_type, memory.trust_tier, memory.type) == ("api", "trusted", "langgraph")
    assert memory.delivery_mode == "on_recall" and memory.tags == [key_tag("food")]
    assert memory.summary == '{"n": 3, "text": "Alice likes green tea"}'  # "$": the whole value
    envelope = json.loads(memory.content)
    assert envelope == {
        "langgraph_store": 1,
        "namespace": ["users", "alice", "memories"],
        "key": "food",
        "value": {"text": "Alice likes green tea", "n": 3},
    }


def test_an_update_keeps_the_memory_and_a_delete_forgets_it(store: KiokuStore, sdk: Client) -> None:
    store.put(("docs",), "k", {"text": "one"})
    [before] = sdk.list_memories("lg-docs").items
    store.put(("docs",), "k", {"text": "two"}, index=["text"])
    [after] = sdk.list_memories("lg-docs").items
    assert after.id == before.id and after.summary == "two"
    store.delete(("docs",), "k")
    assert sdk.list_memories("lg-docs").items == []
    gone = sdk.get_memory("lg-docs", before.id, include_deleted=True)
    assert gone.deleted_at is not None  # forget is a soft delete


def test_index_fields_make_the_summary_and_long_text_goes_whole_into_the_content(
    store: KiokuStore, sdk: Client
) -> None:
    long = "word " * 300
    store.put(("docs",), "long", {"title": "Short title", "body": long}, index=["body"])
    store.put(("docs",), "off", {"title": "Not indexed"}, index=False)
    store.put(("docs",), "none", {"title": "No such field"}, index=["missing"])
    by_key = {
        json.loads(m.content.split("\n")[0])["key"]: m for m in sdk.list_memories("lg-docs").items
    }
    assert len(by_key["long"].summary) == 500 and by_key["long"].summary.endswith("…")
    assert by_key["long"].content.split("\n", 1)[1] == long.strip()  # searchable, to its end
    assert (by_key["off"].type, by_key["off"].summary) == (
        "langgraph-noindex",
        "langgraph item: off",
    )
    assert by_key["none"].type == "langgraph-noindex"


def test_the_store_default_index_fields(app: object, sdk: Client) -> None:
    store = KiokuStore(sdk, index_fields=["text"])
    store.put(("docs",), "k", {"text": "only this", "other": "not this"})
    [memory] = sdk.list_memories("lg-docs").items
    assert memory.summary == "only this"


def test_reads_take_the_trusted_tier_only_unless_asked(store: KiokuStore, sdk: Client) -> None:
    store.put(("inbox",), "mail", {"text": "quarterly numbers attached"})
    store.put(("notes",), "note", {"text": "quarterly planning notes"})
    sdk.update_context("lg-inbox", trust_tier="external")  # e.g. made external by an admin
    assert store.get(("inbox",), "mail") is None
    assert {i.key for i in store.search(())} == {"note"}
    assert {i.key for i in store.search((), query="quarterly")} == {"note"}
    assert store.list_namespaces() == [("notes",)]
    every = KiokuStore(sdk, trust_tier=None)
    item = every.get(("inbox",), "mail")
    assert item is not None and item.value == {"text": "quarterly numbers attached"}
    assert {i.key for i in every.search((), query="quarterly")} == {"mail", "note"}
    assert every.list_namespaces() == [("inbox",), ("notes",)]
    external = KiokuStore(sdk, trust_tier="external")
    assert {i.key for i in external.search(())} == {"mail"}


def test_a_key_written_twice_by_racing_writers_heals(store: KiokuStore, sdk: Client) -> None:
    store.put(("race",), "k", {"v": "first"})
    [first] = sdk.list_memories("lg-race").items
    # A second writer that did not see the first (both looked the key up before writing).
    sdk.remember(
        "lg-race",
        first.summary,
        content=first.content.replace('"first"', '"second"'),
        type="langgraph",
        tags=[key_tag("k")],
    )
    item = store.get(("race",), "k")
    assert item is not None and item.value == {"v": "second"}  # the one created last
    assert [i.value for i in store.search(("race",))] == [{"v": "second"}]
    store.put(("race",), "k", {"v": "third"})
    [left] = sdk.list_memories("lg-race").items
    assert json.loads(left.content)["value"] == {"v": "third"}
    store.delete(("race",), "k")
    assert sdk.list_memories("lg-race").items == []


def test_memories_that_are_not_the_stores_are_ignored(store: KiokuStore, sdk: Client) -> None:
    store.put(("mixed",), "k", {"text": "the store's budget item"})
    sdk.remember("lg-mixed", "a note about the budget written by hand")
    sdk.remember("lg-mixed", "looks like the store's", type="langgraph", content="not json")
    forged = json.dumps({"langgraph_store": 1, "namespace": ["mixed"], "key": "x", "value": {}})
    sdk.remember("lg-mixed", "wrong tag", type="langgraph", content=forged, tags=["other"])
    assert [i.key for i in store.search(("mixed",))] == ["k"]
    assert [i.key for i in store.search(("mixed",), query="budget")] == ["k"]
    assert store.get(("mixed",), "x") is None
    sdk.create_context("lg-_61")  # not a name the store would make ("a" is spelled "lg-a")
    sdk.remember("lg-_61", "a memory in it")
    sdk.remember("default", "the default context is not a namespace")
    assert store.list_namespaces() == [("mixed",)]


def test_a_context_deleted_behind_the_stores_back_is_made_again(
    store: KiokuStore, sdk: Client
) -> None:
    store.put(("gone",), "k", {"v": 1})
    sdk.delete_context("lg-gone")
    assert store.get(("gone",), "k") is None
    store.put(("gone",), "k", {"v": 2})
    item = store.get(("gone",), "k")
    assert item is not None and item.value == {"v": 2}


def test_a_long_namespace_round_trips_through_a_hashed_context(
    store: KiokuStore, sdk: Client
) -> None:
    namespace = ("tenants", "Ünïcödé " * 10, "memories")
    store.put(namespace, "k", {"text": "deeply namespaced"})
    item = store.get(namespace, "k")
    assert item is not None and item.namespace == namespace
    assert store.list_namespaces() == [namespace]
    assert [i.namespace for i in store.search(("tenants",))] == [namespace]
    assert any(c.name.startswith("lg--") for c in sdk.list_contexts().items)


def test_a_query_over_more_contexts_than_one_recall_takes(store: KiokuStore, sdk: Client) -> None:
    for i in range(53):  # recall takes its context and 50 more: this needs two
        store.put(("many", f"n{i:02d}"), "k", {"text": f"filler entry number {i}"})
    store.put(("many", "n52"), "target", {"text": "the aurora borealis was visible tonight"})
    results = store.search(("many",), query="aurora borealis", limit=3)
    assert results[0].key == "target" and results[0].namespace == ("many", "n52")
    every = store.search(("many",), query="filler entry number", limit=100)
    assert len({item.namespace for item in every}) == 53


def test_a_store_with_another_prefix_keeps_to_its_own_contexts(sdk: Client) -> None:
    first, second = KiokuStore(sdk), KiokuStore(sdk, context_prefix="agent2")
    first.put(("docs",), "k", {"v": 1})
    second.put(("docs",), "k", {"v": 2})
    one, two = first.get(("docs",), "k"), second.get(("docs",), "k")
    assert one is not None and two is not None and (one.value, two.value) == ({"v": 1}, {"v": 2})
    assert sdk.get_context("agent2-docs").name == "agent2-docs"
    with pytest.raises(ValueError, match="context_prefix"):
        KiokuStore(sdk, context_prefix="has-dash")


def test_a_value_that_is_not_json_is_refused(store: KiokuStore) -> None:
    with pytest.raises(TypeError):
        store.put(("docs",), "k", {"when": object()})


def test_with_min_confidence_a_query_search_finds_nothing_rather_than_noise(sdk: Client) -> None:
    """Issue 32: ``KiokuStore(min_confidence=...)`` passes it to recall, so an agent's memory
    search comes back empty when recall is less sure than that."""
    strict = KiokuStore(sdk, min_confidence="moderate")
    strict.put(("docs",), "tea", {"text": "Alice drinks green tea every morning"})
    strict.put(("docs",), "lunch", {"text": "Lunch is at noon"})
    found = strict.search(("docs",), query="Alice drinks green tea")
    assert found and found[0].key == "tea"
    assert strict.search(("docs",), query="rules of the beach house") == []
    assert KiokuStore(sdk).search(("docs",), query="rules of the beach house")  # the nearest
