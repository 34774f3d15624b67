"""Thread scores through REST with the real bundled model, on SQLite and PostgreSQL, in
English and Japanese: a turn that answers a question from deep inside a conversation (no
neighbour of the turn that matches it) climbs above memories outside the conversation,
because each candidate moves part of the way up to its thread's best score; with
``search_config.thread_score_weight`` 0 more of them stay above it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.api import create_app
from kioku.embeddings.bundled import BundledEmbedder
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings
from tests.conftest import SyncASGIClient, backend_settings, portal_client

pytestmark = pytest.mark.integration

API = "/api/v1"

# (the conversation, memories outside it, the question, the answering turn)
CASES = {
    "en": (
        [
            "Maria: Tom, how was your weekend at Lake Tahoe?",
            "Tom: Great, the drive up took four hours.",
            "Maria: Was the traffic bad on the way?",
            "Tom: Only near Sacramento, then it cleared.",
            "Tom: On Saturday we rented kayaks and paddled across to Emerald Bay.",
            "Maria: That sounds lovely.",
        ],
        [
            "Lake Tahoe is busiest in July.",
            "Alice spent her weekend at a concert in Reno.",
            "Tom's weekend plans usually involve his brother Sam.",
            "The weekly sync moved to Wednesday.",
            "Bob leads the new billing project.",
            "Rain is forecast for the weekend, bring an umbrella.",
        ],
        "What did Tom do on his weekend at Lake Tahoe?",
        4,
    ),
    "ja": (
        [
            "田中: 佐藤さん、京都の週末はどうでしたか？",
            "佐藤: 楽しかったです。新幹線で二時間でした。",
            "田中: 混んでいましたか？",
            "佐藤: 駅は混んでいましたが、すぐに空きました。",
            "土曜日は嵐山で着物を借りて、竹林を散歩しました。",
            "田中: いいですね。",
        ],
        [
            "京都の紅葉は十一月が見頃だそうです。",
            "京都の週末はどこも観光客でいっぱいです。",
            "鈴木さんは週末に大阪のライブへ行きました。",
            "佐藤さんは京都の大学を卒業しました。",
            "佐藤さんの週末はいつも妹さんと一緒です。",
            "来週の会議は水曜日に変更になりました。",
            "新しいプロジェクトの担当は山田さんです。",
            "週末は雨の予報なので傘を忘れずに。",
        ],
        "佐藤さんは京都の週末に何をしましたか？",
        4,
    ),
}


OFF = {"thread_score_weight": 0}


@pytest.fixture(scope="module")
def bundled() -> BundledEmbedder:
    return BundledEmbedder()


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return backend_settings(request, tmp_path)


@pytest.fixture
def client(settings: Settings, bundled: BundledEmbedder) -> Iterator[SyncASGIClient]:
    runtime: Runtime = open_runtime(settings, embedder=bundled)
    try:
        with portal_client(create_app(runtime=runtime)) as sync_client:
            yield sync_client
    finally:
        runtime.close()


def write(client: SyncASGIClient, name: str, config: dict, language: str) -> tuple[str, set]:
    """The case in a new context with ``config``: (the answering turn's id, the ids of the
    memories outside the conversation)."""
    turns, others, _, answer = CASES[language]
    made = client.post(f"{API}/contexts", json={"name": name, "search_config": config})
    assert made.status_code == 201, made.text
    items = [{"summary": text, "thread": "weekend"} for text in turns]
    items += [{"summary": text} for text in others]
    written = client.post(
        f"{API}/contexts/{name}/memories/batch", json={"items": items, "wait": True}
    )
    assert written.status_code == 200, written.text
    ids = [result["memory_id"] for result in written.json()["results"]]
    return ids[answer], set(ids[len(turns) :])


def outside_above(
    client: SyncASGIClient, name: str, language: str, written: tuple[str, set]
) -> tuple[int, dict]:
    """(how many memories outside the conversation recall ranks above the answer, the
    answer's result)."""
    question = CASES[language][2]
    answer, outside = written
    found = client.post(f"{API}/contexts/{name}/recall", json={"query": question, "k": 20})
    assert found.status_code == 200, found.text
    ids = [result["id"] for result in found.json()["results"]]
    assert answer in ids
    at = ids.index(answer)
    return len(outside.intersection(ids[:at])), found.json()["results"][at]


@pytest.mark.parametrize("language", sorted(CASES))
def test_a_turn_deep_in_a_matching_thread_climbs_above_memories_outside_it(
    client: SyncASGIClient, language: str
) -> None:
    # Both contexts are written before either is asked: the workspace's lexical statistics
    # are the same for both, so the setting is the only difference.
    lifted = write(client, "by-default", {}, language)
    unlifted = write(client, "switched-off", OFF, language)
    above, hit = outside_above(client, "by-default", language, lifted)
    above_without, _ = outside_above(client, "switched-off", language, unlifted)
    assert above < above_without, "the answer passes a memory outside the conversation"
    assert hit["score_breakdown"]["thread"] > 0


def test_thread_score_weight_is_a_search_setting_with_bounds(client: SyncASGIClient) -> None:
    config = {"thread_score_weight": 0.5}
    made = client.post(f"{API}/contexts", json={"name": "t", "search_config": config})
    assert made.status_code == 201 and made.json()["search_config"] == config
    for bad in (-0.1, 1.5, "high"):
        config = {"thread_score_weight": bad}
        answer = client.post(f"{API}/contexts", json={"name": "u", "search_config": config})
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["field"] == "search_config.thread_score_weight"
