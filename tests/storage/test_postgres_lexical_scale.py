"""The PostgreSQL lexical leg at scale: cached corpus statistics and the common-terms cutoff
(neither applies to small scopes, which score exactly as the contract suite says)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kioku.storage import open_store
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres import search as pg_search
from kioku.storage.postgres.search import candidate_terms
from kioku.storage.records import MemoryFilter
from tests.storage.conftest import empty_postgres_database
from tests.storage.test_contract import new_context, new_memory

LIVE = MemoryFilter()


@pytest.fixture
def pg(postgres_database: str) -> Iterator[PostgresStore]:
    empty_postgres_database(postgres_database)
    store = open_store(postgres_database)
    assert isinstance(store, PostgresStore)
    try:
        yield store
    finally:
        store.close()


def test_candidate_terms_all_while_within_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 100)
    dfs = {"rare": 3, "mid": 40, "common": 57}
    assert candidate_terms(["common", "mid", "rare"], dfs, 10) == ["common", "mid", "rare"]


def test_candidate_terms_rarest_first_above_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 100)
    dfs = {"rare": 3, "mid": 40, "common": 900, "commoner": 5000}
    terms = ["common", "commoner", "mid", "rare"]
    # rare alone covers fewer than limit=10 memories: mid joins; common would burst the budget.
    assert candidate_terms(terms, dfs, 10) == ["rare", "mid"]
    # A limit the rare terms cannot fill pulls in the next term whatever the budget.
    assert candidate_terms(terms, dfs, 50) == ["rare", "mid", "common"]
    # Only common terms: the rarest of them still selects.
    assert candidate_terms(["common", "commoner"], dfs, 10) == ["common"]


def _corpus(pg: PostgresStore) -> tuple[str, str, dict[str, str]]:
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c")
    texts = {
        "both": "zebra common common",
        "rare-only": "zebra",
        **{f"common-{i}": f"common filler{i}" for i in range(30)},
    }
    rows = {key: new_memory(ctx.id, key, tokens=text) for key, text in texts.items()}
    pg.insert_memories(ws, list(rows.values()))
    return ws, ctx.id, {row.id: key for key, row in rows.items()}


def test_cutoff_keeps_every_term_in_the_score(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, ctx, keys = _corpus(pg)
    exact = pg.lexical_search(ws, [ctx], ["zebra", "common"], LIVE, 40)
    assert len(exact) == 32  # every memory holding either term
    monkeypatch.setattr(pg_search, "CANDIDATE_BUDGET", 10)
    # zebra (df 2) selects; common (df 31) is over the budget, but still scores.
    cut = pg.lexical_search(ws, [ctx], ["zebra", "common"], LIVE, 2)
    assert sorted(keys[h.memory_id] for h in cut) == ["both", "rare-only"]
    exact_scores = {h.memory_id: h.score for h in exact}
    assert [h.memory_id for h in cut] == [
        h.memory_id
        for h in exact
        if h.memory_id in keys and keys[h.memory_id] in ("both", "rare-only")
    ]
    for hit in cut:
        assert hit.score == pytest.approx(exact_scores[hit.memory_id])
    zebra_only = {h.memory_id: h.score for h in pg.lexical_search(ws, [ctx], ["zebra"], LIVE, 2)}
    both = next(h for h in cut if keys[h.memory_id] == "both")
    assert both.score > zebra_only[both.memory_id]  # common's share is in it


def test_stats_are_cached_only_for_big_scopes(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, ctx, _ = _corpus(pg)
    before = pg.lexical_search(ws, [ctx], ["zebra"], LIVE, 5)
    extra = new_memory(ctx, "more", tokens="zebra zebra")
    pg.insert_memories(ws, [extra])
    # Small scope (32 memories < STATS_CACHE_MIN): the new memory's df counts at once.
    after = pg.lexical_search(ws, [ctx], ["zebra"], LIVE, 5)
    assert len(after) == 3 and after[-1].score != before[-1].score

    monkeypatch.setattr(pg_search, "STATS_CACHE_MIN", 10)
    cached = pg.lexical_search(ws, [ctx], ["zebra"], LIVE, 5)
    pg.insert_memories(ws, [new_memory(ctx, "again", tokens="zebra")])
    stale = pg.lexical_search(ws, [ctx], ["zebra"], LIVE, 5)
    # The new memory is found at once; N and df are the cached ones (same idf as before).
    assert len(stale) == 4
    scores = {h.memory_id: h.score for h in cached}
    assert all(scores[h.memory_id] == h.score for h in stale if h.memory_id in scores)
    monkeypatch.setattr(pg_search, "STATS_TTL_S", 0.0)
    fresh = pg.lexical_search(ws, [ctx], ["zebra"], LIVE, 5)
    assert {h.memory_id: h.score for h in fresh}[extra.id] != scores[extra.id]
