"""KiokuStore beside LangGraph's own InMemoryStore (the reference), and inside a real graph.

One scenario runs against both stores; what LangGraph documents as observable (values, keys,
namespaces, which items a prefix, a filter or a page holds, batch results) must come out the
same. Ordering without a query is not documented (InMemoryStore: insertion order; kioku: newest
first), so listings compare as sets. Then a compiled StateGraph reads and writes long-term
memory through ``runtime.store`` on kioku, with ``invoke`` and ``ainvoke``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

import numpy as np
from anyio.from_thread import start_blocking_portal
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from kioku import AsyncClient, Client
from kioku.embeddings.fake import FakeEmbedder
from kioku.integrations.langgraph import KiokuStore


def scenario(store: BaseStore) -> dict[str, Any]:
    """Everything a caller can observe, timestamps and scores aside."""
    seen: dict[str, Any] = {}
    rows = {
        ("users", "alice", "memories"): {
            "m1": {"text": "Alice drinks green tea", "kind": "pref", "n": 1},
            "m2": {"text": "Alice lives in Kyoto", "kind": "fact", "n": 2},
            "m3": {"text": "Alice plays the cello", "kind": "hobby", "n": 3},
        },
        ("users", "bob", "memories"): {
            "m1": {"text": "Bob drinks espresso", "kind": "pref", "n": 4},
        },
        ("users", "bob", "settings"): {"theme": {"text": "dark mode", "kind": "ui", "n": 5}},
        ("teams", "core"): {"charter": {"text": "Ship weekly", "kind": "fact", "n": 6}},
    }
    for namespace, items in rows.items():
        for key, value in items.items():
            store.put(namespace, key, value)
    store.put(
        ("users", "alice", "memories"),
        "m2",
        {"text": "Alice moved to Osaka", "kind": "fact", "n": 7},
    )
    store.delete(("users", "alice", "memories"), "m3")

    def strip(item: Any) -> Any:
        return None if item is None else (item.namespace, item.key, item.value)

    def keyset(prefix: tuple[str, ...], **kwargs: Any) -> set[tuple[tuple[str, ...], str]]:
        return {(i.namespace, i.key) for i in store.search(prefix, limit=100, **kwargs)}

    for name, prefix in [("all", ()), ("users", ("users",)), ("bob", ("users", "bob"))]:
        seen[f"search {name}"] = keyset(prefix)
    for name, flt in [
        ("kind", {"kind": "pref"}),
        ("gt", {"n": {"$gt": 3}}),
        ("ne", {"kind": {"$ne": "fact"}}),
        ("both", {"kind": "fact", "n": {"$lte": 6}}),
    ]:
        seen[f"filter {name}"] = keyset((), filter=flt)
    pages = [store.search((), limit=2, offset=offset) for offset in range(0, 8, 2)]
    seen["page sizes"] = [len(page) for page in pages]
    seen["pages cover"] = sorted((i.namespace, i.key) for page in pages for i in page)
    # Namespaces first: an InMemoryStore also lists a namespace it was only asked to read
    # (or that was emptied); kioku, like PostgresStore, lists those that hold items.
    seen["namespaces"] = store.list_namespaces()
    seen["namespaces users depth 2"] = store.list_namespaces(prefix=("users",), max_depth=2)
    seen["namespaces suffix"] = store.list_namespaces(suffix=("memories",))
    seen["namespaces wildcard"] = store.list_namespaces(prefix=("users", "*", "settings"))
    seen["get"] = [
        strip(store.get(ns, key))
        for ns, key in [
            (("users", "alice", "memories"), "m1"),
            (("users", "alice", "memories"), "m2"),
            (("users", "alice", "memories"), "m3"),
            (("users", "bob", "memories"), "m1"),
            (("users",), "m1"),
        ]
    ]

    batch = store.batch(
        [
            PutOp(("teams", "core"), "charter", {"text": "Ship daily", "kind": "fact", "n": 8}),
            GetOp(("teams", "core"), "charter"),
            PutOp(("teams", "core"), "charter", {"text": "Ship hourly", "kind": "fact", "n": 9}),
            SearchOp(("teams",), filter={"kind": "fact"}),
            ListNamespacesOp(max_depth=1),
        ]
    )
    get_result, search_result = batch[1], batch[3]
    seen["batch"] = [
        batch[0],
        strip(get_result),
        batch[2],
        [strip(i) for i in search_result] if isinstance(search_result, list) else search_result,
        batch[4],
    ]
    seen["after batch"] = strip(store.get(("teams", "core"), "charter"))
    return seen


def test_kioku_store_observes_like_langgraphs_in_memory_store(sdk: Client) -> None:
    reference = scenario(InMemoryStore())
    assert reference["get"][2] is None and reference["batch"][1][2]["text"] == "Ship weekly"
    assert scenario(KiokuStore(sdk)) == reference


def fake_embed(texts: Sequence[str]) -> list[list[float]]:
    return np.asarray(FakeEmbedder().embed_documents(texts)).tolist()


def test_a_query_finds_what_the_reference_finds_first(sdk: Client) -> None:
    docs = {
        "python": {"text": "Python tutorial: list comprehensions and generators"},
        "ts": {"text": "TypeScript guide to interfaces and generics"},
        "tea": {"text": "Brewing green tea at seventy degrees"},
    }
    reference = InMemoryStore(index={"dims": 64, "embed": fake_embed, "fields": ["text"]})
    kioku = KiokuStore(sdk, index_fields=["text"])
    for store in (reference, kioku):
        for key, value in docs.items():
            store.put(("docs",), key, value)
    for query in ["python generators", "green tea", "typescript interfaces"]:
        expected = reference.search(("docs",), query=query, limit=1)[0].key
        assert kioku.search(("docs",), query=query, limit=1)[0].key == expected, query


# ------------------------------------------------------------ inside a real graph


class State(TypedDict):
    user: str
    said: str
    recalled: NotRequired[list[str]]


def remember(state: State, runtime: Runtime) -> dict[str, Any]:
    assert runtime.store is not None
    runtime.store.put(
        ("users", state["user"], "memories"), str(uuid.uuid4()), {"text": state["said"]}
    )
    return {}


def recall(state: State, runtime: Runtime) -> dict[str, Any]:
    assert runtime.store is not None
    hits = runtime.store.search(("users", state["user"], "memories"), query="tea", limit=3)
    return {"recalled": [hit.value["text"] for hit in hits]}


async def aremember(state: State, runtime: Runtime) -> dict[str, Any]:
    assert runtime.store is not None
    namespace = ("users", state["user"], "memories")
    await runtime.store.aput(namespace, str(uuid.uuid4()), {"text": state["said"]})
    return {}


async def arecall(state: State, runtime: Runtime) -> dict[str, Any]:
    assert runtime.store is not None
    hits = await runtime.store.asearch(("users", state["user"], "memories"), query="tea", limit=3)
    return {"recalled": [hit.value["text"] for hit in hits]}


def build(nodes: tuple[Any, Any]) -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("remember", nodes[0])
    builder.add_node("recall", nodes[1])
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder


def test_a_graph_remembers_across_runs_with_invoke(sdk: Client) -> None:
    graph = build((remember, recall)).compile(store=KiokuStore(sdk))
    graph.invoke({"user": "alice", "said": "I drink green tea every morning"})
    out = graph.invoke({"user": "alice", "said": "I moved to Osaka"})
    assert out["recalled"][0] == "I drink green tea every morning"
    other = graph.invoke({"user": "bob", "said": "coffee please"})
    assert "I drink green tea every morning" not in other["recalled"]  # bob's namespace only


def test_a_graph_remembers_across_runs_with_ainvoke(app: Any, sdk: Client) -> None:
    with start_blocking_portal() as portal:
        client = AsyncClient(app=app)
        graph = build((aremember, arecall)).compile(store=KiokuStore(async_client=client))

        async def turn(said: str) -> dict[str, Any]:
            return await graph.ainvoke(State(user="carol", said=said))

        try:
            portal.call(turn, "Sencha tea, no sugar")
            out = portal.call(turn, "Meeting at noon")
        finally:
            portal.call(client.aclose)
    assert out["recalled"][0] == "Sencha tea, no sugar"
    assert [c.name for c in sdk.list_contexts().items if c.name.startswith("lg-")] == [
        "lg-users-carol-memories"
    ]


def test_abatch_with_only_a_blocking_client_runs_it_in_a_thread(sdk: Client) -> None:
    store = KiokuStore(sdk)
    with start_blocking_portal() as portal:
        portal.call(store.aput, ("docs",), "k", {"v": 1})
        item = portal.call(store.aget, ("docs",), "k")
    assert item is not None and item.value == {"v": 1}
