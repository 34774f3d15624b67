"""Newer fact first, through REST with the real bundled model, on SQLite and PostgreSQL: when
two memories of one context state one fact at different times, the newer ranks first, unless
the question asks about the past; a memory that conflicts with nothing never moves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kioku.embeddings.bundled import BundledEmbedder
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings
from tests.conftest import ManualClock, SyncASGIClient, backend_settings

pytestmark = pytest.mark.integration

API = "/api/v1/contexts/default"
BACKGROUND = [
    "Alice prefers green tea over coffee and brings her own cup.",
    "Nightly backups start at 03:00 JST and are kept for 35 days.",
    "The office Wi-Fi password for guests changes every month.",
    "CI runs on GitHub Actions; the merge queue needs the full matrix green.",
    "アリスの誕生日は3月14日です。",
    "経費精算は毎月25日締めで、領収書はfreeeにアップロードする。",
]


@pytest.fixture(scope="module")
def bundled() -> BundledEmbedder:
    return BundledEmbedder()


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    return backend_settings(request, tmp_path)


@pytest.fixture
def runtime(settings: Settings, bundled: BundledEmbedder, clock: ManualClock) -> Iterator[Runtime]:
    """New memories are stamped by the hand-moved clock, so facts can be months apart."""
    rt = open_runtime(settings, embedder=bundled, clock=clock)
    try:
        yield rt
    finally:
        rt.close()


def remember(client: SyncASGIClient, summary: str) -> str:
    answer = client.post(f"{API}/memories", json={"summary": summary})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def recall(client: SyncASGIClient, query: str) -> list[dict]:
    answer = client.post(f"{API}/recall", json={"query": query, "k": 5})
    assert answer.status_code == 200, answer.text
    return answer.json()["results"]


CONFLICTS = [
    (
        "The staging database listens on port 5433.",
        "Staging Postgres moved to port 6543 with the host migration.",
        "Which port does the staging database listen on?",
    ),
    (
        "検証環境のデータベースはポート5433で待ち受けている。",
        "ホスト移行に伴い、検証環境のDBのポートは6543に変更された。",
        "検証環境のデータベースの待ち受けポートは？",
    ),
]


def two_versions(client: SyncASGIClient, clock: ManualClock, old: str, new: str) -> tuple[str, str]:
    """The background, the old version, and 60 days later the new one."""
    for summary in BACKGROUND:
        remember(client, summary)
    older = remember(client, old)
    clock.advance(days=60)
    return older, remember(client, new)


@pytest.mark.parametrize(("old", "new", "question"), CONFLICTS, ids=["english", "japanese"])
def test_the_newer_of_two_conflicting_memories_ranks_first(
    client: SyncASGIClient, clock: ManualClock, old: str, new: str, question: str
) -> None:
    older, newer = two_versions(client, clock, old, new)
    assert [hit["id"] for hit in recall(client, question)][:2] == [newer, older]


@pytest.mark.parametrize(("old", "new", "question"), CONFLICTS, ids=["english", "japanese"])
def test_the_stage_moves_the_newer_version_past_the_older_one(
    client: SyncASGIClient, clock: ManualClock, old: str, new: str, question: str
) -> None:
    """With fusion's weights fixed, the older version wins the legs (its wording is closer to
    the question), so the newer-first stage has to act, and the breakdown says so. (Under the
    default ``leg_trust: sharpness`` this corpus already fuses the newer one first.)"""
    answer = client.patch(API, json={"search_config": {"leg_trust": "fixed"}})
    assert answer.status_code == 200, answer.text
    older, newer = two_versions(client, clock, old, new)
    results = recall(client, question)
    ranked = [hit["id"] for hit in results]
    assert ranked[:2] == [newer, older]
    # The stage says what it did: the newer moved up past the older, which moved down.
    moved = {hit["id"]: hit["score_breakdown"]["newer_first"] for hit in results}
    assert moved[newer] > 1 > moved[older]
    assert all(moved[hit] is None for hit in ranked[2:])
    top = results[0]
    breakdown = top["score_breakdown"]
    assert top["score"] == pytest.approx(
        breakdown["fused"] * breakdown["rerank"] * breakdown["newer_first"], rel=1e-4
    )


@pytest.mark.parametrize(
    ("old", "new", "question"),
    [
        (
            "The staging database listens on port 5433.",
            "Staging Postgres moved to port 6543 with the host migration.",
            "Which port did staging Postgres use before it moved to 6543?",
        ),
        (
            "検証環境のデータベースはポート5433で待ち受けている。",
            "ホスト移行に伴い、検証環境のDBのポートは6543に変更された。",
            "ホスト移行前は、検証環境のDBのポートは何番だった？",
        ),
    ],
    ids=["english", "japanese"],
)
def test_a_question_about_the_past_gets_the_older_memory_first(
    client: SyncASGIClient, clock: ManualClock, old: str, new: str, question: str
) -> None:
    older, newer = two_versions(client, clock, old, new)
    assert [hit["id"] for hit in recall(client, question)][:2] == [older, newer]


def test_a_memory_that_conflicts_with_nothing_is_not_moved_by_its_age(
    client: SyncASGIClient, clock: ManualClock
) -> None:
    older, _ = two_versions(
        client,
        clock,
        "The staging database listens on port 5433.",
        "Alice moved her standing desk to the window seat.",
    )
    results = recall(client, "Which port does the staging database listen on?")
    assert results[0]["id"] == older
    assert all(hit["score_breakdown"]["newer_first"] is None for hit in results)


def test_memories_written_together_are_not_versions_of_each_other(
    client: SyncASGIClient,
) -> None:
    """One batch (an import) carries no order of truth: its items keep the ranking's order."""
    for summary in BACKGROUND:
        remember(client, summary)
    items = [
        {"summary": "The staging database listens on port 5433."},
        {"summary": "Staging Postgres moved to port 6543 with the host migration."},
    ]
    answer = client.post(f"{API}/memories/batch", json={"items": items})
    assert answer.status_code == 200, answer.text
    results = recall(client, "Which port does the staging database listen on?")
    assert all(hit["score_breakdown"]["newer_first"] is None for hit in results)
