"""Threads through REST: ``thread``/``position`` on remember and remember_batch (stored,
shown, appended when no position is sent), the 422s that name the field, the search config
switch, and recall bringing a hit's thread neighbour along. The real model's version of the
last one is tests/integration/test_thread_recall.py."""

from __future__ import annotations

import pytest

from tests.conftest import SyncASGIClient

API = "/api/v1"
MEMORIES = f"{API}/contexts/default/memories"


def batch(client: SyncASGIClient, items: list[dict], context: str = "default", **kw: object):
    response = client.post(f"{API}/contexts/{context}/memories/batch", json={"items": items, **kw})
    assert response.status_code == 200, response.text
    return response.json()


def test_remember_stores_and_shows_thread_and_position(client: SyncASGIClient) -> None:
    created = client.post(
        MEMORIES, json={"summary": "最初の発言", "thread": "会議-1", "position": 7}
    )
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["thread"], body["position"]) == ("会議-1", 7)
    fetched = client.get(f"{MEMORIES}/{body['id']}").json()
    assert (fetched["thread"], fetched["position"]) == ("会議-1", 7)
    plain = client.post(MEMORIES, json={"summary": "no thread"}).json()
    assert (plain["thread"], plain["position"]) == (None, None)


def test_a_batch_without_positions_appends_to_its_thread_in_order(client: SyncASGIClient) -> None:
    first = batch(client, [{"summary": f"turn {i}", "thread": "chat"} for i in range(3)])
    more = [{"summary": "turn 3", "thread": "chat"}, {"summary": "other", "thread": "x"}]
    second = batch(client, more)
    single = client.post(MEMORIES, json={"summary": "turn 4", "thread": "chat"}).json()
    ids = [r["memory_id"] for r in first["results"] + second["results"]]
    places = [
        (m["thread"], m["position"]) for m in (client.get(f"{MEMORIES}/{i}").json() for i in ids)
    ]
    assert places == [("chat", 0), ("chat", 1), ("chat", 2), ("chat", 3), ("x", 0)]
    assert single["position"] == 4
    # An explicit position moves the tail: the next one goes after it.
    batch(client, [{"summary": "jump", "thread": "chat", "position": 10}])
    assert (
        client.post(MEMORIES, json={"summary": "next", "thread": "chat"}).json()["position"] == 11
    )


BAD = [
    ({"summary": "x", "position": 3}, "position"),
    ({"summary": "x", "thread": ""}, "thread"),
    ({"summary": "x", "thread": "t" * 301}, "thread"),
    ({"summary": "x", "thread": 12}, "thread"),
    ({"summary": "x", "thread": "t", "position": -1}, "position"),
    ({"summary": "x", "thread": "t", "position": "3"}, "position"),
    ({"summary": "x", "thread": "t", "position": 1.5}, "position"),
    ({"summary": "x", "thread": "t", "position": 2**53}, "position"),
]


@pytest.mark.parametrize(("body", "field"), BAD)
def test_a_bad_thread_or_position_is_a_422_naming_it(
    client: SyncASGIClient, body: dict, field: str
) -> None:
    response = client.post(MEMORIES, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] == field
    items = [{"summary": "fine", "thread": "t"}, body]
    response = client.post(f"{MEMORIES}/batch", json={"items": items, "atomic": True})
    assert response.status_code == 422 and response.json()["error"]["field"] == f"items[1].{field}"
    partial = batch(client, items)
    assert partial["results"][1]["error"]["field"] == f"items[1].{field}"
    assert partial["created"] == 1


def test_thread_weight_is_a_search_setting_with_bounds(client: SyncASGIClient) -> None:
    made = client.post(f"{API}/contexts", json={"name": "t", "search_config": {"thread_weight": 0}})
    assert made.status_code == 201 and made.json()["search_config"] == {"thread_weight": 0.0}
    bad = client.post(f"{API}/contexts", json={"name": "u", "search_config": {"thread_weight": 2}})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "search_config.thread_weight"


# A question and its answer: the answer shares no word with the question that is asked later.
TURNS = [
    "Ken: which restaurant did Aiko pick for the anniversary dinner?",
    "Aiko: Sakura Tei, the little place by the river.",
]
OTHERS = [f"Ken: the {thing} was fine" for thing in ("weather", "train", "meeting", "film")]


@pytest.mark.parametrize("weight", [0.2, 0.0])
def test_recall_brings_the_thread_neighbour_of_a_hit_along(
    client: SyncASGIClient, weight: float
) -> None:
    config = {"thread_weight": weight}
    if weight == 0:  # threads off altogether: the thread-score share as well
        config["thread_score_weight"] = 0
    assert client.post(f"{API}/contexts", json={"name": "c", "search_config": config}).is_success
    items = [{"summary": t, "thread": "dinner"} for t in TURNS]
    items += [{"summary": t, "thread": f"s{i}"} for i, t in enumerate(OTHERS)]
    ids = [r["memory_id"] for r in batch(client, items, "c", wait=True)["results"]]
    query = {"query": "anniversary dinner restaurant", "k": 2}
    found = client.post(f"{API}/contexts/c/recall", json=query).json()["results"]
    assert found[0]["id"] == ids[0]
    answer = next((hit for hit in found if hit["id"] == ids[1]), None)
    if weight == 0:  # threads switched off: nothing brings the answer up
        assert answer is None
    else:
        assert answer is not None and answer["score_breakdown"]["thread"] > 0
