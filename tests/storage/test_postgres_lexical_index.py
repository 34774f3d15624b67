"""The lexical leg's tantivy index of a large scope (``storage/postgres/lexical_sidecar.py``)
on a real PostgreSQL: the same answers as the GIN leg, every write searchable the moment it
commits, deletions (soft and outright) never answered, and the GIN leg wherever the index
cannot answer. The tests lower the scope size from which it answers to 1."""

from __future__ import annotations

import importlib.util
import random
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from kioku.api.metrics import _LexicalIndexCollector
from kioku.service.health import HealthService
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres import lexical_sidecar as sidecar_module
from kioku.storage.postgres import search as pg_search
from kioku.storage.postgres.lexical_sidecar import LexicalSidecar, ScopedQuery
from kioku.storage.records import MemoryChanges, MemoryFilter
from tests.storage.test_contract import T0, new_context, new_memory

LIVE = MemoryFilter()
WORDS = [f"w{i}" for i in range(400)] + ["東京", "会議", "long" * 200]
NEVER_SYNCS = 3600.0


def _zipf_text(rng: random.Random) -> str:
    """A memory of 3-20 words drawn with Zipf-like frequencies (common words repeat)."""
    weights = [1.0 / (rank + 1) for rank in range(len(WORDS))]
    return " ".join(rng.choices(WORDS, weights=weights, k=rng.randint(3, 20)))


@pytest.fixture
def indexed(pg: PostgresStore) -> Iterator[PostgresStore]:
    """``pg`` whose lexical index answers from one memory on, never syncing by itself."""
    pg.lexical_sidecar.close()
    pg.lexical_sidecar = LexicalSidecar(pg.db, 1, interval=NEVER_SYNCS)
    yield pg


def _corpus(pg: PostgresStore) -> tuple[str, str, str]:
    ws = pg.ensure_workspace("alpha").id
    first, second = new_context(pg, ws, "first").id, new_context(pg, ws, "second").id
    rng = random.Random(7)
    rows = [new_memory(first if i % 3 else second, f"m{i}", tokens=_zipf_text(rng))
            for i in range(1500)]  # fmt: skip
    pg.insert_memories(ws, rows)
    return ws, first, second


def _gin(pg: PostgresStore, ws: str, contexts: list[str], terms: list[str], flt: MemoryFilter,
         limit: int) -> list[tuple[str, float]]:  # fmt: skip
    """The GIN leg's answer (the index turned off for this call)."""
    sidecar, pg.lexical_sidecar = pg.lexical_sidecar, LexicalSidecar(pg.db, 0)
    try:
        return [(h.memory_id, h.score) for h in pg.lexical_search(ws, contexts, terms, flt, limit)]
    finally:
        pg.lexical_sidecar = sidecar


def _index_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the GIN leg's scoring fail: an answer then came from the index."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the GIN leg answered")

    monkeypatch.setattr(pg_search, "LexicalScoring", refuse)


def test_the_index_answers_as_the_gin_leg(
    indexed: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, first, second = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    rng = random.Random(11)
    queries = [rng.sample(WORDS, rng.randint(1, 4)) for _ in range(40)]
    queries += [["w0", "w1"], ["東京", "会議"], ["long" * 200, "w5"], ["absent"]]
    expected = {
        (i, tuple(scope)): _gin(indexed, ws, scope, terms, LIVE, 10)
        for i, terms in enumerate(queries)
        for scope in ([first], [first, second])
    }
    _index_only(monkeypatch)
    for (i, scope), gin in expected.items():
        hits = indexed.lexical_search(ws, list(scope), queries[i], LIVE, 10)
        found = [(h.memory_id, h.score) for h in hits]
        assert [memory_id for memory_id, _ in found] == [memory_id for memory_id, _ in gin]
        assert [score for _, score in found] == pytest.approx([score for _, score in gin])
    assert any(expected.values())
    assert expected[(len(queries) - 1, (first,))] == []  # a word no memory holds


def test_a_write_is_found_before_any_sync(
    indexed: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, first, _ = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    _index_only(monkeypatch)
    new = new_memory(first, "fresh", tokens="quokka w0")
    indexed.insert_memories(ws, [new])
    assert [h.memory_id for h in indexed.lexical_search(ws, [first], ["quokka"], LIVE, 10)] == [
        new.id
    ]
    indexed.update_memory(ws, new.id, MemoryChanges(lexical_tokens="wombat w0"), T0)
    assert indexed.lexical_search(ws, [first], ["quokka"], LIVE, 10) == []
    assert [h.memory_id for h in indexed.lexical_search(ws, [first], ["wombat"], LIVE, 10)] == [
        new.id
    ]
    assert indexed.soft_delete_memory(ws, new.id, T0)
    assert indexed.lexical_search(ws, [first], ["wombat"], LIVE, 10) == []


def test_another_replicas_write_is_found_at_once(
    indexed: PostgresStore, postgres_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stores on one database stand for two replicas: each keeps its own index, and a
    write through one is answered by the other's index before either syncs."""
    ws, first, _ = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    other = PostgresStore(postgres_database, lexical_index_min=1)
    try:
        new = new_memory(first, "elsewhere", tokens="bilby w0")
        other.insert_memories(ws, [new])
        _index_only(monkeypatch)
        found = indexed.lexical_search(ws, [first], ["bilby"], LIVE, 10)
        assert [h.memory_id for h in found] == [new.id]
        assert other.soft_delete_memory(ws, new.id, T0)
        assert indexed.lexical_search(ws, [first], ["bilby"], LIVE, 10) == []
    finally:
        other.close()


def test_a_sync_moves_the_horizon_and_indexes_the_change(indexed: PostgresStore) -> None:
    ws, first, _ = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    index = indexed.lexical_sidecar.ready(ws)
    assert index is not None and index.view is not None
    before, horizon = index.size(), index.view.horizon
    assert before == 1500
    new = new_memory(first, "fresh", tokens="quokka")
    indexed.insert_memories(ws, [new])
    view = index.view
    assert index.top(view, ["quokka"], [first], 10) == []  # not in the index yet
    assert index.sync(indexed.db) == 1
    view = index.view
    assert view.horizon > horizon
    assert index.top(view, ["quokka"], [first], 10) == [new.id]
    assert index.size() == before + 1
    assert index.sync(indexed.db) == 0  # nothing changed since
    assert indexed.soft_delete_memory(ws, new.id, T0)
    assert index.sync(indexed.db) == 1
    assert index.top(index.view, ["quokka"], [first], 10) == []
    assert index.size() == before


def test_a_memory_deleted_outright_is_never_answered_and_leaves_the_index(
    indexed: PostgresStore,
) -> None:
    ws, first, _ = _corpus(indexed)
    gone = new_memory(first, "gone", tokens="platypus")
    indexed.insert_memories(ws, [gone])
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    index = indexed.lexical_sidecar.ready(ws)
    assert index is not None and index.view is not None
    assert index.top(index.view, ["platypus"], [first], 10) == [gone.id]
    assert indexed.purge_memory(ws, gone.id)
    assert indexed.lexical_search(ws, [first], ["platypus"], LIVE, 10) == []
    index.sync(indexed.db)  # the search reported it gone
    assert index.top(index.view, ["platypus"], [first], 10) == []
    # An id reported gone but written again before the sync stays (the sync re-reads it).
    back = new_memory(first, "back", tokens="wallaby")
    indexed.insert_memories(ws, [back])
    index.sync(indexed.db)
    index.forget([back.id])
    index.sync(indexed.db)
    assert index.top(index.view, ["wallaby"], [first], 10) == [back.id]


def test_another_workspace_is_never_proposed(indexed: PostgresStore) -> None:
    ws, first, _ = _corpus(indexed)
    other = indexed.ensure_workspace("beta").id
    theirs = new_context(indexed, other, "first").id
    foreign = new_memory(theirs, "foreign", tokens="w0 w0 w0 secret")
    indexed.insert_memories(other, [foreign])
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    found = indexed.lexical_search(ws, [first], ["w0", "secret"], LIVE, 40)
    assert found and foreign.id not in {h.memory_id for h in found}
    # The other workspace's context named in this workspace's search finds nothing.
    assert indexed.lexical_search(ws, [theirs], ["secret"], LIVE, 10) == []


def test_a_narrowing_filter_goes_to_the_gin_leg(indexed: PostgresStore) -> None:
    ws, first, _ = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    narrowing = MemoryFilter(tags_any=["x"])
    assert not indexed.lexical_sidecar.applies(10**6, narrowing)
    assert not indexed.lexical_sidecar.applies(10**6, MemoryFilter(include_deleted=True))
    assert indexed.lexical_sidecar.applies(1, LIVE)
    assert not LexicalSidecar(indexed.db, 0).applies(10**6, LIVE)
    found = [(h.memory_id, h.score)
             for h in indexed.lexical_search(ws, [first], ["w3", "w9"], narrowing, 10)]  # fmt: skip
    assert found == _gin(indexed, ws, [first], ["w3", "w9"], narrowing, 10)


def test_the_index_holds_the_trust_tier_and_sees_it_change(
    indexed: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, first, second = _corpus(indexed)
    outside = [new_memory(second, f"x{i}", tokens="w1 w2 w3", trust_tier="external")
               for i in range(30)]  # fmt: skip
    indexed.insert_memories(ws, outside)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    trusted, external = MemoryFilter(trust_tier="trusted"), MemoryFilter(trust_tier="external")
    assert indexed.lexical_sidecar.applies(10**6, trusted)
    scope = [first, second]
    expected = [
        _gin(indexed, ws, scope, ["w1", "w2", "w3"], flt, 10) for flt in (trusted, external)
    ]
    assert {memory_id for memory_id, _ in expected[1]} <= {row.id for row in outside}
    _index_only(monkeypatch)
    for flt, gin in zip((trusted, external), expected, strict=True):
        hits = indexed.lexical_search(ws, scope, ["w1", "w2", "w3"], flt, 10)
        assert [h.memory_id for h in hits] == [memory_id for memory_id, _ in gin]
        assert [h.score for h in hits] == pytest.approx([score for _, score in gin])
    # The context turns external: its memories' tier changes, searchable before any sync.
    indexed.update_context(ws, first, {"trust_tier": "external"}, T0)
    hits = indexed.lexical_search(ws, [first], ["w1"], trusted, 10)
    assert hits == []
    assert len(indexed.lexical_search(ws, [first], ["w1"], external, 10)) == 10


def test_too_many_changes_since_the_horizon_go_to_the_gin_leg(
    indexed: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, first, _ = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    monkeypatch.setattr(sidecar_module, "FRESH_MAX", 2)
    fresh = [new_memory(first, f"n{i}", tokens=f"numbat w{i}") for i in range(3)]
    indexed.insert_memories(ws, fresh)
    index = indexed.lexical_sidecar.ready(ws)
    assert index is not None
    with indexed.db.transaction(ws) as conn:
        query = ScopedQuery([first], ["numbat"], [1.0], 10.0, "TRUE", [], 10)
        assert indexed.lexical_sidecar.search(conn, index, query) is None
    found = indexed.lexical_search(ws, [first], ["numbat"], LIVE, 10)
    assert sorted(h.memory_id for h in found) == sorted(row.id for row in fresh)


def test_the_background_thread_builds_and_syncs(pg: PostgresStore) -> None:
    pg.lexical_sidecar.close()
    pg.lexical_sidecar = LexicalSidecar(pg.db, 1, interval=0.05)
    ws, first, _ = _corpus(pg)
    assert pg.lexical_search(ws, [first], ["w1"], LIVE, 5)  # the GIN leg, queueing the build
    assert pg.lexical_sidecar.wait_ready(ws, timeout=60)
    index = pg.lexical_sidecar.ready(ws)
    assert index is not None and index.view is not None
    horizon = index.view.horizon
    pg.insert_memories(ws, [new_memory(first, "late", tokens="echidna")])
    for _ in range(200):
        if index.view.horizon > horizon and index.top(index.view, ["echidna"], [first], 5):
            break
        time.sleep(0.05)
    assert len(index.top(index.view, ["echidna"], [first], 5)) == 1


def test_lexical_xid_names_the_last_change_of_the_searchable_text(pg: PostgresStore) -> None:
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "c").id
    row = new_memory(ctx, "m", tokens="alpha beta")
    pg.insert_memories(ws, [row])

    def xid() -> int:
        with pg.db.transaction(ws) as conn:
            found = conn.execute(
                "SELECT lexical_xid::text AS x FROM memories WHERE workspace_id = %s AND id = %s",
                (ws, row.id),
            ).fetchone()
        assert found is not None and found["x"] is not None
        return int(found["x"])

    inserted = xid()
    pg.record_access(ws, row.id, T0)
    pg.update_memory(ws, row.id, MemoryChanges(values={"importance": 0.9}), T0)
    assert xid() == inserted  # nothing the index holds changed
    pg.update_memory(ws, row.id, MemoryChanges(lexical_tokens="gamma"), T0)
    edited = xid()
    assert edited > inserted
    assert pg.soft_delete_memory(ws, row.id, T0)
    assert xid() > edited


def test_metrics_report_the_indexes_and_who_answered(indexed: PostgresStore) -> None:
    ws, first, _ = _corpus(indexed)
    health = HealthService(indexed)
    collector = _LexicalIndexCollector(lambda: SimpleNamespace(health=health))  # type: ignore[arg-type, return-value]

    def scraped() -> dict[tuple[str, tuple[str, ...]], float]:
        return {(sample.name, tuple(sample.labels.values())): sample.value
                for metric in collector.collect() for sample in metric.samples}  # fmt: skip

    assert scraped()[("kioku_lexical_index_workspaces", ())] == 0
    indexed.lexical_search(ws, [first], ["w1"], LIVE, 5)  # queues the build: the GIN leg answers
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    indexed.lexical_search(ws, [first], ["w1"], LIVE, 5)
    indexed.lexical_search(ws, [first], ["w1"], MemoryFilter(tags_any=["x"]), 5)  # not counted
    values = scraped()
    assert values[("kioku_lexical_index_workspaces", ())] == 1
    assert values[("kioku_lexical_index_memories", ())] == 1500
    assert values[("kioku_lexical_index_searches_total", ("index",))] == 1
    assert values[("kioku_lexical_index_searches_total", ("database",))] == 1
    assert 0 <= values[("kioku_lexical_index_sync_age_seconds", ())] < 60


def test_an_index_of_mostly_dead_rows_is_rebuilt(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg.lexical_sidecar.close()
    pg.lexical_sidecar = LexicalSidecar(pg.db, 1, interval=0.05)
    ws, first, _ = _corpus(pg)
    assert pg.lexical_sidecar.wait_ready(ws, timeout=60)
    built = pg.lexical_sidecar.ready(ws)
    row = new_memory(first, "edited", tokens="dingo")
    pg.insert_memories(ws, [row])
    pg.update_memory(ws, row.id, MemoryChanges(lexical_tokens="kookaburra"), T0)
    monkeypatch.setattr(sidecar_module, "REBUILD_SLACK", -(10**9))  # every index is bloated
    for _ in range(400):
        if pg.lexical_sidecar.ready(ws) is not built:
            break
        time.sleep(0.05)
    rebuilt = pg.lexical_sidecar.ready(ws)
    assert rebuilt is not None and rebuilt is not built and rebuilt.view is not None
    assert rebuilt.top(rebuilt.view, ["kookaburra"], [first], 5) == [row.id]
    assert rebuilt.top(rebuilt.view, ["dingo"], [first], 5) == []
    assert len(rebuilt.ids) == rebuilt.size() == 1501


def test_without_tantivy_the_gin_leg_answers(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tantivy" else real(name, *a)
    )
    sidecar = LexicalSidecar(pg.db, 1)
    assert sidecar.min_memories == 0 and not sidecar.applies(10**6, LIVE)
    assert "tantivy package is missing" in caplog.text
    assert LexicalSidecar(pg.db, 0).min_memories == 0
