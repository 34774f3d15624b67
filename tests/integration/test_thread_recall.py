"""Thread neighbours in recall, with the real bundled model, through REST: a question whose
answer spans two adjacent turns of a conversation finds both when the conversation is
declared as a thread, and misses the second when the same turns are written without one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kioku.api import create_app
from kioku.runtime import Runtime
from tests.conftest import SyncASGIClient, portal_client

API = "/api/v1"

# (turns of one conversation, other memories, question, indexes of the two answer turns, k)
CASES = {
    "ja": (
        [
            "田中: 佐藤さん、週末はどこかへ出かけましたか？",
            "佐藤: はい、京都へ行ってきました。",
            "佐藤: 妹も一緒で、新幹線の日帰りでした。",
            "田中: いいですね、楽しそう。",
        ],
        [
            "鈴木さんは週末に大阪のライブへ行きました。",
            "京都の紅葉は十一月が見頃だそうです。",
            "来週の会議は水曜日に変更になりました。",
            "新しいプロジェクトの担当は山田さんです。",
            "週末は雨の予報なので傘を忘れずに。",
            "佐藤さんの誕生日は五月です。",
        ],
        "佐藤さんは週末に京都へ誰と行きましたか？",
        (1, 2),
        4,
    ),
    "en": (
        [
            "Maria: Tom, did you do anything fun last weekend?",
            "Tom: I drove up to Lake Tahoe.",
            "Tom: My brother Sam came too, we camped two nights.",
            "Maria: Sounds lovely.",
        ],
        [
            "Alice went to a concert in Reno last weekend.",
            "Lake Tahoe is busiest in July.",
            "The weekly sync moved to Wednesday.",
            "Tom's birthday is in May.",
            "Rain is forecast for the weekend, bring an umbrella.",
            "Bob leads the new billing project.",
        ],
        "Who did Tom go to Lake Tahoe with last weekend?",
        (1, 2),
        5,
    ),
}


@pytest.fixture
def client(real_runtime: Runtime) -> Iterator[SyncASGIClient]:
    with portal_client(create_app(runtime=real_runtime)) as sync_client:
        yield sync_client


def recall_ids(
    client: SyncASGIClient, context: str, turns: list[str], others: list[str], query: str, k: int
) -> tuple[list[str], list[str]]:
    """Write the conversation (as a thread when ``context`` says so) and the other memories;
    return (ids of the turns, ids recall returns for ``query``)."""
    assert client.post(f"{API}/contexts", json={"name": context}).status_code == 201
    threaded = context.endswith("-thread")
    items = [{"summary": t, **({"thread": "trip"} if threaded else {})} for t in turns]
    items += [{"summary": text} for text in others]
    response = client.post(
        f"{API}/contexts/{context}/memories/batch", json={"items": items, "wait": True}
    )
    assert response.status_code == 200, response.text
    ids = [r["memory_id"] for r in response.json()["results"]]
    found = client.post(f"{API}/contexts/{context}/recall", json={"query": query, "k": k})
    assert found.status_code == 200, found.text
    return ids[: len(turns)], [hit["id"] for hit in found.json()["results"]]


@pytest.mark.parametrize("language", sorted(CASES))
def test_an_answer_over_two_adjacent_turns_is_found_whole(
    client: SyncASGIClient, language: str
) -> None:
    turns, others, query, (first, second), k = CASES[language]
    ids, found = recall_ids(client, f"{language}-thread", turns, others, query, k)
    assert ids[first] in found and ids[second] in found, "both halves of the answer"
    plain_ids, plain = recall_ids(client, f"{language}-plain", turns, others, query, k)
    assert plain_ids[first] in plain and plain_ids[second] not in plain, "only with the thread"
