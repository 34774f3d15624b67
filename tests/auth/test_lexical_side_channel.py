"""Workspace B probing workspace A through its own BM25 scores, over REST with real keys.

BM25 weighs a term by how rare it is (idf: N and df). Were those counted over the whole
SQLite file, B could store a memory holding a rare word, recall it, and watch the score drop
when A stores that word: A's content would leak through B's own results. So B's recall must
be bit-identical, scores and order, whatever A stores, purges or deletes.
"""

from __future__ import annotations

from typing import Any

from kioku.search.tokenize import tokenize
from kioku.storage.records import MemoryFilter
from kioku.storage.sqlite.lexical import lexical_table, lexical_tables
from tests.auth.conftest import Tenants

API = "/api/v1"
PROBE = "zephyrine lantern harbour"
B_MEMORIES = [
    "zephyrine is the codename of our lantern release",
    "the harbour lantern was repaired on monday",
    "lantern lantern lantern in the harbour",
    "quarterly budget review for the harbour office",
    "notes about the zephyrine rollout",
    "unrelated memory about coffee beans",
]


def remember(t: Tenants, who: str, context_id: str, summaries: list[str], **extra: Any) -> None:
    for start in range(0, len(summaries), 100):
        items = [{"summary": s, **extra} for s in summaries[start : start + 100]]
        answer = t.client.post(
            f"{API}/contexts/{context_id}/memories/batch",
            json={"items": items, "atomic": True},
            headers=t.as_(who),
        )
        assert answer.status_code == 200, answer.text


def b_recall(t: Tenants, query: str = PROBE) -> dict[str, Any]:
    """Everything B's recall shows that depends on ranking: ids, order, every score."""
    answer = t.client.post(
        f"{API}/contexts/{t.ids['b_ctx']}/recall",
        json={"query": query, "k": 10},
        headers=t.as_("B:owner"),
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    hits = [
        (hit["id"], hit["score"], hit["score_breakdown"]) for hit in body["results"]
    ]  # floats from JSON: Python's repr round-trips them exactly
    return {"hits": hits, "confidence": body["confidence"], "legs": body["legs"]}


def b_lexical(t: Tenants, query: str = PROBE) -> list[tuple[str, float]]:
    """B's lexical leg straight from the store: the raw BM25 scores."""
    hits = t.runtime.store.lexical_search(
        t.b_owner.workspace_id, [t.ids["b_ctx"]], tokenize(query), MemoryFilter(), 10
    )
    return [(hit.memory_id, hit.score) for hit in hits]


def test_b_scores_are_bit_identical_whatever_a_stores_or_purges(tenants: Tenants) -> None:
    t = tenants
    remember(t, "B:owner", t.ids["b_ctx"], B_MEMORIES)
    before, lexical_before = b_recall(t), b_lexical(t)
    assert len(before["hits"]) >= 4 and "lexical" in before["legs"]
    assert all(hit[2]["lexical"] is not None for hit in before["hits"][:3])

    # A floods its own context with the probe's words (the rare one above all), in memories
    # of every length, through its own keys.
    flood = [
        f"zephyrine {'lantern ' * (i % 4)}harbour report number {i} {'padding ' * (i % 7)}"
        for i in range(300)
    ]
    remember(t, "A:owner", t.ids["ctx"], flood, source_uri="probe://flood")
    assert b_recall(t) == before
    assert b_lexical(t) == lexical_before

    # A erases part of it by source, then the whole context: B sees no step either.
    answer = t.client.post(
        f"{API}/purge",
        json={"source_uri_prefix": "probe://"},
        headers=t.as_("A:owner"),
    )
    assert answer.status_code == 200 and answer.json()["memories"] == 300, answer.text
    assert b_recall(t) == before and b_lexical(t) == lexical_before
    remember(t, "A:owner", t.ids["ctx"], flood[:50])
    answer = t.client.post(f"{API}/contexts/{t.ids['ctx']}/purge", headers=t.as_("A:owner"))
    assert answer.status_code == 200, answer.text
    assert b_recall(t) == before and b_lexical(t) == lexical_before


def test_a_deleting_its_workspace_leaves_b_search_intact(tenants: Tenants) -> None:
    t = tenants
    remember(t, "B:owner", t.ids["b_ctx"], B_MEMORIES)
    remember(t, "A:owner", t.ids["ctx"], [f"zephyrine lantern {i}" for i in range(120)])
    before, lexical_before = b_recall(t), b_lexical(t)

    # There is no workspace deletion operation: A deletes its context over REST, then the
    # operator deletes the workspace row (everything of A goes by cascade).
    answer = t.client.delete(f"{API}/contexts/{t.ids['ctx']}", headers=t.as_("A:owner"))
    assert answer.status_code == 204, answer.text
    assert b_recall(t) == before and b_lexical(t) == lexical_before
    a_table = lexical_table(t.a_owner.workspace_id)
    db = t.runtime.store.db  # type: ignore[attr-defined]
    with db.write() as conn:
        conn.execute("DELETE FROM workspaces WHERE id = ?", (t.a_owner.workspace_id,))
    assert b_recall(t) == before and b_lexical(t) == lexical_before
    with db.write() as conn:
        # The cascade emptied A's index (its deletions were drained at commit); drop it.
        assert conn.execute(f"SELECT count(*) FROM {a_table}").fetchone()[0] == 0
        conn.execute(f"DROP TABLE {a_table}")
        assert lexical_tables(conn) == [lexical_table(t.b_owner.workspace_id)]
    assert b_recall(t) == before and b_lexical(t) == lexical_before

    # B's index still takes writes and finds them.
    remember(t, "B:owner", t.ids["b_ctx"], ["a fresh zephyrine memory"])
    after = b_recall(t)
    assert len(after["hits"]) == len(before["hits"]) + 1
    assert "a fresh zephyrine memory" in {
        m["summary"]
        for m in t.client.get(
            f"{API}/contexts/{t.ids['b_ctx']}/memories", headers=t.as_("B:owner")
        ).json()["items"]
    }
