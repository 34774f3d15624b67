"""The graph learns only from results the ranking stood behind, through REST with the real
bundled model: a recall's filler results (one leg found them, far below the top) are never
linked to its answer, results that stood (half the top score, or both legs' top 3) are, and
``include_related`` hangs neighbours off standing results only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.embeddings.bundled import BundledEmbedder
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings
from tests.conftest import ManualClock, SyncASGIClient, make_settings

pytestmark = pytest.mark.integration

API = "/api/v1/contexts/default"
TOPICS = {
    "english": {
        "answer": "The staging database listens on port 5433, not 5432.",
        "also": "To reach the staging database port 5433 you need the VPN.",
        "nearby": "The staging environment is redeployed every evening.",
        "unrelated": [
            "Alice prefers green tea over coffee.",
            "The autumn offsite is in Kyoto.",
            "Refunds over 50,000 yen need the finance lead's approval.",
        ],
        "question": "Which port does the staging database listen on?",
    },
    "japanese": {
        "answer": "検証環境のデータベースはポート5433で待ち受けている。",
        "also": "検証環境のデータベースのポート5433に接続するにはVPNが必要。",
        "nearby": "検証環境は毎晩デプロイし直される。",
        "unrelated": [
            "アリスはコーヒーより緑茶が好き。",
            "秋の社員旅行は京都に行く。",
            "5万円を超える返金には経理責任者の承認が必要。",
        ],
        "question": "検証環境のデータベースのポートは何番？",
    },
}


@pytest.fixture(scope="module")
def bundled() -> BundledEmbedder:
    return BundledEmbedder()


@pytest.fixture
def runtime(tmp_path: Path, bundled: BundledEmbedder, clock: ManualClock) -> Iterator[Runtime]:
    settings: Settings = make_settings(tmp_path)
    rt = open_runtime(settings, embedder=bundled, clock=clock)
    try:
        yield rt
    finally:
        rt.close()


def remember(client: SyncASGIClient, summary: str, **extra: object) -> str:
    answer = client.post(f"{API}/memories", json={"summary": summary, **extra})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def recall(client: SyncASGIClient, query: str, **extra: object) -> dict:
    answer = client.post(f"{API}/recall", json={"query": query, **extra})
    assert answer.status_code == 200, answer.text
    return answer.json()


def explore(client: SyncASGIClient, memory_id: str) -> set[str]:
    answer = client.get(f"{API}/memories/{memory_id}/explore")
    assert answer.status_code == 200, answer.text
    return {n["id"] for n in answer.json()["neighbours"]}


@pytest.mark.parametrize("language", ["english", "japanese"])
def test_filler_results_of_a_recall_are_not_linked_to_its_answer(
    client: SyncASGIClient, language: str
) -> None:
    topic = TOPICS[language]
    answer = remember(client, topic["answer"])
    unrelated = [remember(client, summary) for summary in topic["unrelated"]]
    for _ in range(3):
        result = recall(client, topic["question"], k=3)
        ids = [hit["id"] for hit in result["results"]]
        assert ids[0] == answer and len(ids) == 3  # the top 3 hold two unrelated fillers
    assert explore(client, answer) == set()
    for memory_id in unrelated:
        assert explore(client, memory_id) == set()


@pytest.mark.parametrize("language", ["english", "japanese"])
def test_results_that_stood_behind_the_answer_are_linked(
    client: SyncASGIClient, language: str
) -> None:
    """docs/graph.md: a result stands at half the top score or more, or when both legs rank
    it in their top 3. "nearby" scores under half the top, yet both legs rank it third (it
    shares "staging" with the question), so all three are linked; the unrelated are not."""
    topic = TOPICS[language]
    answer = remember(client, topic["answer"])
    also = remember(client, topic["also"])
    nearby = remember(client, topic["nearby"])  # the third result, under half the top score
    unrelated = [remember(client, summary) for summary in topic["unrelated"]]
    hits = recall(client, topic["question"], k=3)["results"]
    assert [hit["id"] for hit in hits] == [answer, also, nearby]
    assert hits[2]["score"] < 0.5 * hits[0]["score"]
    third = hits[2]["score_breakdown"]
    assert (third["lexical_rank"], third["vector_rank"]) == (3, 3)
    assert explore(client, answer) == {also, nearby}
    assert explore(client, also) == {answer, nearby}
    assert explore(client, nearby) == {answer, also}
    assert all(explore(client, memory_id) == set() for memory_id in unrelated)


def test_related_memories_hang_off_results_that_stood_only(client: SyncASGIClient) -> None:
    """A filler result's own neighbours are not offered as related to the question."""
    answer = remember(client, "The staging database listens on port 5433, not 5432.")
    tea = remember(client, "Alice prefers green tea over coffee.")
    cup = remember(client, "Alice brings her own cup to the office.", linked_memory_ids=[tea])
    result = recall(client, "Which port does the staging database listen on?", k=2,
                    include_related=True)  # fmt: skip
    ids = [hit["id"] for hit in result["results"]]
    assert ids[0] == answer and ids[1] in {tea, cup}  # one filler in the top 2
    assert result["related"] == []
