"""KiokuStore held to LangGraph's own documented store behaviour (the docstrings of
``langgraph.store.base``: ``BaseStore``, ``Item``, ``SearchItem``, ``GetOp``, ``PutOp``,
``SearchOp``, ``ListNamespacesOp``), on the real ``langgraph`` package and a real kioku app,
SQLite and PostgreSQL, through the sync and the async API."""

from __future__ import annotations

from datetime import datetime

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from kioku.integrations.langgraph import KiokuStore
from tests.conftest import ManualClock

# ------------------------------------------------------------ put / get / delete


def test_put_then_get_returns_the_item_with_its_fields(store: KiokuStore) -> None:
    value = {"text": "Will likes AI", "nested": {"can": "contain", "any": [1, 2.5, True, None]}}
    store.put(("documents", "user123"), "report1", value)
    item = store.get(("documents", "user123"), "report1")
    assert isinstance(item, Item) and not isinstance(item, SearchItem)
    assert item.value == value
    assert (item.key, item.namespace) == ("report1", ("documents", "user123"))
    assert isinstance(item.created_at, datetime) and item.created_at.tzinfo is not None
    assert item.updated_at == item.created_at
    assert item.dict()["namespace"] == ["documents", "user123"]


def test_get_of_a_missing_key_or_namespace_is_none(store: KiokuStore) -> None:
    store.put(("users", "profiles"), "user123", {"name": "Ann"})
    assert store.get(("users", "profiles"), "user456") is None
    assert store.get(("users", "nobody"), "user123") is None
    assert store.get(("users",), "user123") is None  # a parent namespace is another namespace
    assert store.get((), "user123") is None  # nothing can be put in the empty namespace...
    store.delete((), "user123")  # ...so there is nothing to delete there either


def test_put_of_an_existing_key_updates_it(store: KiokuStore, clock: ManualClock) -> None:
    store.put(("docs",), "report", {"memory": "Will likes ai", "version": 1})
    first = store.get(("docs",), "report")
    clock.advance(minutes=5)
    store.put(("docs",), "report", {"memory": "Will likes LangGraph", "version": 2})
    second = store.get(("docs",), "report")
    assert first is not None and second is not None
    assert second.value == {"memory": "Will likes LangGraph", "version": 2}
    assert second.created_at == first.created_at  # "Timestamp of item creation"
    assert second.updated_at > first.updated_at  # "Timestamp of last update"
    assert [i.key for i in store.search(("docs",))] == ["report"]  # one item, not two


def test_the_same_key_in_two_namespaces_is_two_items(store: KiokuStore) -> None:
    store.put(("users", "alice"), "prefs", {"theme": "dark"})
    store.put(("users", "bob"), "prefs", {"theme": "light"})
    alice, bob = store.get(("users", "alice"), "prefs"), store.get(("users", "bob"), "prefs")
    assert alice is not None and bob is not None
    assert (alice.value, bob.value) == ({"theme": "dark"}, {"theme": "light"})


def test_delete_removes_the_item_and_deleting_a_missing_one_is_fine(store: KiokuStore) -> None:
    store.put(("docs",), "a", {"text": "first"})
    store.put(("docs",), "b", {"text": "second"})
    store.delete(("docs",), "a")
    assert store.get(("docs",), "a") is None
    assert [i.key for i in store.search(("docs",))] == ["b"]
    store.delete(("docs",), "a")  # again
    store.delete(("nowhere",), "x")  # a namespace that never held anything
    # A PutOp whose value is None "signals that the item should be deleted".
    assert store.batch([PutOp(("docs",), "b", None)]) == [None]
    assert store.get(("docs",), "b") is None


def test_a_deleted_key_can_be_put_again(store: KiokuStore) -> None:
    store.put(("docs",), "a", {"text": "old"})
    store.delete(("docs",), "a")
    store.put(("docs",), "a", {"text": "new"})
    item = store.get(("docs",), "a")
    assert item is not None and item.value == {"text": "new"}


@pytest.mark.parametrize(
    "namespace",
    [(), ("a.b",), ("docs", ""), ("langgraph", "x"), ("ok", "nul\x00")],
    ids=["empty", "period", "empty-label", "langgraph-root", "nul"],
)
def test_put_refuses_invalid_namespaces(store: KiokuStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "key", {"v": 1})
    with pytest.raises(InvalidNamespaceError):  # ops handed to batch directly, too
        store.batch([PutOp(namespace, "key", {"v": 1})])


def test_reads_refuse_labels_with_a_period(store: KiokuStore) -> None:
    store.put(("foo", "bar"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        store.get(("foo.bar",), "k")
    with pytest.raises(InvalidNamespaceError):  # "foo.bar" must not address ("foo", "bar")
        store.batch([GetOp(("foo.bar",), "k")])
    with pytest.raises(InvalidNamespaceError):
        store.search(("foo.bar",))
    with pytest.raises(InvalidNamespaceError):
        store.list_namespaces(prefix=("foo.bar",))


def test_ttl_is_not_supported_and_says_so(store: KiokuStore) -> None:
    assert store.supports_ttl is False
    with pytest.raises(NotImplementedError):
        store.put(("docs",), "k", {"v": 1}, ttl=5)
    with pytest.raises(NotImplementedError):
        store.batch([PutOp(("docs",), "k", {"v": 1}, ttl=5.0)])
    store.put(("docs",), "k", {"v": 1}, ttl=None)  # "set ttl=None"
    assert store.get(("docs",), "k", refresh_ttl=False) is not None


def test_values_round_trip_as_json(store: KiokuStore) -> None:
    value = {
        "unicode": "東京都 café 🚀",
        "newlines": "line one\nline two\r\n",
        "numbers": [0, -1, 3.25, 1e21],
        "flags": [True, False, None],
        "deep": {"a": {"b": {"c": ["d", {"e": "f"}]}}},
        "empty": {},
        "quote": 'he said "hi" \\o/',
    }
    store.put(("docs",), "json", value)
    item = store.get(("docs",), "json")
    assert item is not None and item.value == value


def test_keys_are_any_string(store: KiokuStore) -> None:
    keys = ["UPPER", "with space", "slash/and?query#frag", "日本語のキー", " padded ", "x" * 300]
    for i, key in enumerate(keys):
        store.put(("keys",), key, {"i": i})
    for i, key in enumerate(keys):
        item = store.get(("keys",), key)
        assert item is not None and (item.key, item.value) == (key, {"i": i})
    assert store.get(("keys",), "padded") is None  # not the same key as " padded "


# ------------------------------------------------------------ search: scope, filter, paging


def fill_scopes(store: KiokuStore) -> None:
    store.put(("docs",), "root", {"text": "at the root"})
    store.put(("docs", "user1"), "a", {"text": "user one's doc"})
    store.put(("docs", "user1", "drafts"), "b", {"text": "a draft"})
    store.put(("docsx",), "c", {"text": "a sibling whose name starts the same"})
    store.put(("other", "docs"), "d", {"text": "docs deeper down"})


def test_search_scope_is_the_namespace_prefix(store: KiokuStore) -> None:
    fill_scopes(store)

    def keys(prefix: tuple[str, ...]) -> set[str]:
        return {item.key for item in store.search(prefix)}

    assert keys(("docs",)) == {"root", "a", "b"}
    assert keys(("docs", "user1")) == {"a", "b"}
    assert keys(("docs", "user1", "drafts")) == {"b"}
    assert keys(()) == {"root", "a", "b", "c", "d"}  # "Search entire store"
    assert keys(("nothing",)) == set()
    results = store.search(("docs", "user1"))
    assert all(isinstance(item, SearchItem) and item.score is None for item in results)
    assert {item.namespace for item in results} == {("docs", "user1"), ("docs", "user1", "drafts")}


def test_search_filter_exact_and_operators(store: KiokuStore) -> None:
    rows = [
        ("r1", {"type": "report", "status": "active", "score": 5.0, "color": "red"}),
        ("r2", {"type": "report", "status": "draft", "score": 3.0, "color": "red"}),
        ("a1", {"type": "article", "status": "active", "score": 4.99, "color": "blue"}),
        ("a2", {"type": "article", "status": "active", "score": 1, "meta": {"lang": "en"}}),
    ]
    for key, value in rows:
        store.put(("documents",), key, value)

    def keys(flt: dict[str, object]) -> set[str]:
        return {item.key for item in store.search(("documents",), filter=flt)}

    assert keys({"type": "report", "status": "active"}) == {"r1"}
    assert keys({"score": {"$gt": 4.99}}) == {"r1"}
    assert keys({"score": {"$gte": 4.99}}) == {"r1", "a1"}
    assert keys({"score": {"$lt": 3.0}}) == {"a2"}
    assert keys({"score": {"$lte": 3.0}}) == {"r2", "a2"}
    assert keys({"status": {"$ne": "active"}}) == {"r2"}
    assert keys({"status": {"$eq": "draft"}}) == {"r2"}
    assert keys({"score": {"$gte": 3.0}, "color": "red"}) == {"r1", "r2"}
    assert keys({"meta": {"lang": "en"}}) == {"a2"}
    assert keys({"color": {"$gt": 1}}) == set()  # not a number: no match, no error
    assert keys({"missing": "x"}) == set()
    with pytest.raises(ValueError, match="operator"):
        store.search(("documents",), filter={"score": {"$regex": "x"}})


def test_search_limit_and_offset_page_through_every_match(store: KiokuStore) -> None:
    for i in range(25):
        store.put(("pages",), f"k{i:02d}", {"i": i, "even": i % 2 == 0})
    assert len(store.search(("pages",))) == 10  # the default limit
    pages = [store.search(("pages",), limit=7, offset=offset) for offset in range(0, 28, 7)]
    assert [len(page) for page in pages] == [7, 7, 7, 4, 0][: len(pages)]
    keys = [item.key for page in pages for item in page]
    assert sorted(keys) == [f"k{i:02d}" for i in range(25)]  # no overlap, nothing missed
    # offset counts matching items: the filter applies before the page is cut.
    evens = [store.search(("pages",), filter={"even": True}, limit=5, offset=o) for o in (0, 5, 10)]
    even_keys = [item.key for page in evens for item in page]
    assert sorted(even_keys) == [f"k{i:02d}" for i in range(0, 25, 2)]
    assert store.search(("pages",), limit=0) == []


def test_search_without_a_query_lists_newest_first(store: KiokuStore) -> None:
    for key, namespace in [("first", "x"), ("second", "y"), ("third", "x"), ("fourth", "y")]:
        store.put(("order", namespace), key, {"k": key})
    store.put(("order", "x"), "first", {"k": "first, updated"})  # an update keeps its place
    newest_first = ["fourth", "third", "second", "first"]  # across namespaces too
    assert [item.key for item in store.search(("order",))] == newest_first
    assert [item.key for item in store.search(("order",), limit=2, offset=1)] == newest_first[1:3]


# ------------------------------------------------------------ search with a query


def fill_topics(store: KiokuStore) -> None:
    store.put(("docs",), "python", {"text": "Python tutorial: list comprehensions and generators"})
    store.put(("docs",), "ts", {"text": "TypeScript guide to interfaces and generics"})
    store.put(("docs",), "tea", {"text": "Brewing green tea at seventy degrees"})
    store.put(("docs", "deep"), "tea2", {"text": "Matcha is powdered green tea from Uji"})
    store.put(("elsewhere",), "tea3", {"text": "Oolong tea is partly oxidised"})


def test_search_with_a_query_ranks_the_relevant_items_first(store: KiokuStore) -> None:
    fill_topics(store)
    results = store.search(("docs",), query="python tutorial generators")
    assert results[0].key == "python"
    assert all(isinstance(r, SearchItem) and isinstance(r.score, float) for r in results)
    assert [r.score for r in results] == sorted((r.score or 0.0 for r in results), reverse=True)
    tea = store.search(("docs",), query="green tea", limit=2)
    assert {r.key for r in tea} == {"tea", "tea2"}  # both levels under the prefix...
    assert "tea3" not in {r.key for r in store.search(("docs",), query="tea", limit=10)}  # ...only


def test_search_with_a_query_honours_filter_limit_and_offset(store: KiokuStore) -> None:
    for i in range(6):
        store.put(("notes",), f"n{i}", {"text": f"meeting notes about budget {i}", "n": i})
    ranked = [r.key for r in store.search(("notes",), query="budget meeting", limit=6)]
    assert sorted(ranked) == [f"n{i}" for i in range(6)]
    second = store.search(("notes",), query="budget meeting", limit=2, offset=2)
    assert [r.key for r in second] == ranked[2:4]
    small = store.search(("notes",), query="budget meeting", filter={"n": {"$lt": 3}}, limit=10)
    assert {r.key for r in small} == {"n0", "n1", "n2"}


def test_index_fields_decide_what_a_query_finds(store: KiokuStore) -> None:
    store.put(("docs",), "plain", {"memory": "Will likes ai"})  # store default: the whole value
    store.put(("docs",), "hidden", {"memory": "Will likes ai"}, index=False)
    store.put(
        ("docs",),
        "picked",
        {"title": "Quarterly zebra census", "body": "counting stripes", "authors": [{"name": "X"}]},
        index=["title", "authors[0].name"],
    )
    hits = {r.key for r in store.search(("docs",), query="Will likes ai")}
    assert "plain" in hits and "hidden" not in hits  # index=False: no vector, not a query hit
    assert store.search(("docs",), query="zebra census")[0].key == "picked"
    # Not indexed is still stored and listed ("accessible through get() and search()").
    hidden = store.get(("docs",), "hidden")
    assert hidden is not None and hidden.value == {"memory": "Will likes ai"}
    assert "hidden" in {item.key for item in store.search(("docs",))}


# ------------------------------------------------------------ list_namespaces


DOCSTRING_NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
]


def test_list_namespaces_docstring_example(store: KiokuStore) -> None:
    for namespace in DOCSTRING_NAMESPACES:
        store.put(namespace, "k", {"v": 1})
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces() == sorted(DOCSTRING_NAMESPACES)
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("d", "*")) == [
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
    ]
    assert store.list_namespaces(max_depth=1) == [("a",)]
    assert store.list_namespaces(limit=2, offset=1) == sorted(DOCSTRING_NAMESPACES)[1:3]
    assert store.list_namespaces(prefix=("z",)) == []


def test_list_namespaces_op_with_match_conditions(store: KiokuStore) -> None:
    for namespace in [("docs", "v1"), ("docs", "draft"), ("cache", "x", "v1")]:
        store.put(namespace, "k", {"v": 1})
    op = ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("v1",)),), limit=50)
    [found] = store.batch([op])
    assert found == [("cache", "x", "v1"), ("docs", "v1")]


def test_list_namespaces_lists_only_namespaces_that_hold_items(store: KiokuStore) -> None:
    store.put(("kept",), "k", {"v": 1})
    store.put(("emptied",), "k", {"v": 1})
    store.delete(("emptied",), "k")
    store.get(("only", "read"), "k")
    assert store.list_namespaces() == [("kept",)]


# ------------------------------------------------------------ batch


def test_batch_returns_one_result_per_op_in_order(store: KiokuStore) -> None:
    store.put(("b",), "existing", {"v": "old"})
    results = store.batch(
        [
            PutOp(("b",), "new", {"v": "new"}),
            GetOp(("b",), "existing"),
            SearchOp(("b",)),
            ListNamespacesOp(),
            GetOp(("b",), "missing"),
        ]
    )
    assert len(results) == 5
    assert results[0] is None
    got = results[1]
    assert isinstance(got, Item) and got.value == {"v": "old"}
    listed = results[2]
    assert isinstance(listed, list)
    assert [(i.key, i.value) for i in listed if isinstance(i, SearchItem)] == [
        ("existing", {"v": "old"})
    ]
    assert len(listed) == 1
    assert results[3] == [("b",)]
    assert results[4] is None
    new = store.get(("b",), "new")  # the put applied after the batch's reads
    assert new is not None and new.value == {"v": "new"}


def test_batch_puts_to_one_key_last_one_wins(store: KiokuStore) -> None:
    store.batch(
        [
            PutOp(("b",), "k", {"v": 1}),
            PutOp(("b",), "k", {"v": 2}),
            PutOp(("b",), "gone", {"v": 1}),
            PutOp(("b",), "gone", None),
        ]
    )
    item = store.get(("b",), "k")
    assert item is not None and item.value == {"v": 2}
    assert store.get(("b",), "gone") is None
    assert [i.key for i in store.search(("b",))] == ["k"]
