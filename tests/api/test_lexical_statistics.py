"""BM25's statistics on PostgreSQL follow every write at once (migration 0013), through REST.

The oracle: after remember, remember_batch, an edit and a forget in one context, each
memory's lexical score in a recall there equals the score the same text gets in a context
written afresh with exactly the live memories. Before the statistics tables, a scope of
``STATS_CACHE_MIN`` memories or more (20,000) kept N, avgdl and the dfs for a minute, so
scores lagged writes; the old threshold is lowered here (``raising=False``: the constant is
gone now) so that the old code shows it at test size.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kioku.settings import Settings
from kioku.storage.postgres import search as pg_search
from tests.conftest import SyncASGIClient, make_settings
from tests.postgres import empty_postgres_database

CONTEXTS = "/api/v1/contexts"
QUERY = "zebra orchard lantern"


@pytest.fixture
def settings(postgres_database: str, tmp_path: Path) -> Settings:
    empty_postgres_database(postgres_database)
    return make_settings(tmp_path, database_url=postgres_database)


def _lexical_scores(client: SyncASGIClient, context: str) -> dict[str, float]:
    answer = client.post(f"{CONTEXTS}/{context}/recall", json={"query": QUERY, "k": 50})
    assert answer.status_code == 200, answer.text
    return {
        hit["summary"]: hit["score_breakdown"]["lexical"]
        for hit in answer.json()["results"]
        if hit["score_breakdown"]["lexical"] is not None
    }


def _remember(client: SyncASGIClient, context: str, summary: str, content: str) -> str:
    answer = client.post(
        f"{CONTEXTS}/{context}/memories", json={"summary": summary, "content": content}
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def test_scores_follow_remember_batch_edit_and_forget_at_once(
    client: SyncASGIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_search, "STATS_CACHE_MIN", 1, raising=False)
    for name in ("live", "fresh"):
        assert client.post(CONTEXTS, json={"name": name}).status_code == 201
    ids = [
        _remember(client, "live", f"note {i}", f"zebra number {i} walks past the orchard")
        for i in range(4)
    ]
    before = _lexical_scores(client, "live")
    assert len(before) == 4
    batch = client.post(
        f"{CONTEXTS}/live/memories/batch",
        json={
            "items": [
                {"summary": f"batch {i}", "content": f"a lantern and a zebra, item {i}"}
                for i in range(5)
            ]
        },
    )
    assert batch.status_code == 200, batch.text
    edited = client.patch(
        f"{CONTEXTS}/live/memories/{ids[0]}", json={"content": "only an orchard lantern now"}
    )
    assert edited.status_code == 200, edited.text
    assert client.delete(f"{CONTEXTS}/live/memories/{ids[1]}").status_code == 204
    after = _lexical_scores(client, "live")

    # The same live texts, written afresh in their own context: its statistics were never
    # anything but these memories'.
    listed = client.get(f"{CONTEXTS}/live/memories?limit=100").json()["items"]
    assert len(listed) == 8
    rewritten = client.post(
        f"{CONTEXTS}/fresh/memories/batch",
        json={"items": [{"summary": m["summary"], "content": m["content"]} for m in listed]},
    )
    assert rewritten.status_code == 200, rewritten.text
    expected = _lexical_scores(client, "fresh")
    assert set(after) == set(expected) and len(after) == 8
    for summary, score in expected.items():
        assert after[summary] == pytest.approx(score, abs=1e-6), summary
    # ... and the writes did move the scores (N, avgdl and the dfs all changed).
    assert after["note 2"] != before["note 2"]
