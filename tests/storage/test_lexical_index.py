"""The lexical leg's tantivy index of a large scope (``storage/shared/lexical_sidecar.py``) on
both backends, a real SQLite file and a real PostgreSQL: the same answers as the database's
own leg (FTS5, GIN), every write searchable the moment it commits (from this process or
another), deletions (soft and outright) never answered, and the database's leg wherever the
index cannot answer. The tests lower the scope size from which it answers to 1."""

from __future__ import annotations

import importlib.util
import random
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from kioku.api.metrics import _LexicalIndexCollector
from kioku.service.health import HealthService
from kioku.storage import open_store
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres import lexical_sidecar as pg_sidecar
from kioku.storage.postgres import search as pg_search
from kioku.storage.records import MemoryChanges, MemoryFilter
from kioku.storage.shared import lexical_sidecar as shared_sidecar
from kioku.storage.shared.lexical_index import WorkspaceIndex
from kioku.storage.sqlite import SQLiteStore
from kioku.storage.sqlite import lexical_sidecar as sqlite_sidecar
from kioku.storage.sqlite import vectors as sqlite_vectors
from kioku.storage.sqlite.bm25 import rescore
from kioku.storage.sqlite.filters import filter_sql
from kioku.storage.sqlite.lexical import lexical_table
from tests.storage.test_contract import T0, new_context, new_memory

Indexed = SQLiteStore | PostgresStore

LIVE = MemoryFilter()
WORDS = [f"w{i}" for i in range(400)] + ["東京", "会議", "long" * 200]
NEVER_SYNCS = 3600.0


def _zipf_text(rng: random.Random) -> str:
    """A memory of 3-20 words drawn with Zipf-like frequencies (common words repeat)."""
    weights = [1.0 / (rank + 1) for rank in range(len(WORDS))]
    return " ".join(rng.choices(WORDS, weights=weights, k=rng.randint(3, 20)))


def _sidecar(store: Indexed, min_memories: int, interval: float = NEVER_SYNCS):
    """A new sidecar of ``store``'s own kind."""
    if isinstance(store, SQLiteStore):
        return sqlite_sidecar.LexicalSidecar(store.db, min_memories, interval)
    return pg_sidecar.LexicalSidecar(store.db, min_memories, interval)


def _swap_sidecar(store: Indexed, min_memories: int, interval: float = NEVER_SYNCS) -> None:
    store.lexical_sidecar.close()
    store.lexical_sidecar = _sidecar(store, min_memories, interval)  # type: ignore[assignment]


@pytest.fixture
def indexed(store: Indexed) -> Iterator[Indexed]:
    """``store`` whose lexical index answers from one memory on, never syncing by itself."""
    _swap_sidecar(store, 1)
    yield store


def _corpus(pg: Indexed) -> tuple[str, str, str]:
    ws = pg.ensure_workspace("alpha").id
    first, second = new_context(pg, ws, "first").id, new_context(pg, ws, "second").id
    rng = random.Random(7)
    rows = [new_memory(first if i % 3 else second, f"m{i}", tokens=_zipf_text(rng))
            for i in range(1500)]  # fmt: skip
    pg.insert_memories(ws, rows)
    return ws, first, second


def _gin(pg: Indexed, ws: str, contexts: list[str], terms: list[str], flt: MemoryFilter,
         limit: int) -> list[tuple[str, float]]:  # fmt: skip
    """The database's own leg's answer (GIN, FTS5; the index turned off for this call)."""
    sidecar, pg.lexical_sidecar = pg.lexical_sidecar, _sidecar(pg, 0)  # type: ignore[assignment]
    try:
        return [(h.memory_id, h.score) for h in pg.lexical_search(ws, contexts, terms, flt, limit)]
    finally:
        pg.lexical_sidecar = sidecar  # type: ignore[assignment]


def _exact(store: Indexed, ws: str, contexts: list[str], terms: list[str], flt: MemoryFilter,
           limit: int) -> list[tuple[str, float]]:  # fmt: skip
    """Exact BM25's top ``limit``: PostgreSQL's GIN leg is exact; SQLite's FTS5 leg re-scores
    only FTS5's best few, so every row holding a term is scored here (``bm25.rescore``)."""
    if isinstance(store, PostgresStore):
        return _gin(store, ws, contexts, terms, flt, limit)
    conn, table = store.db.connection(), lexical_table(ws)
    match = " OR ".join(f'"{term}"' for term in terms)
    seqs = [row[0] for row in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?",
                                           (match,))]  # fmt: skip
    where, params = filter_sql(ws, contexts, flt)
    ids = dict(conn.execute(f"SELECT m.seq, m.id FROM memories m WHERE {where}", params).fetchall())
    scores = rescore(conn, table, seqs, terms, store.term_counts)
    hits = sorted((-score, ids[seq]) for seq, score in scores.items() if seq in ids and score > 0)
    return [(memory_id, -negative) for negative, memory_id in hits[:limit]]


def _key(store: Indexed, memory_id: str) -> str:
    """The index's key of a memory: its id on PostgreSQL, its ``seq`` on SQLite."""
    if isinstance(store, SQLiteStore):
        found = (
            store.db.connection()
            .execute("SELECT seq FROM memories WHERE id = ?", (memory_id,))
            .fetchone()
        )
        assert found is not None
        return str(found[0])
    return memory_id


def _top(store: Indexed, index: WorkspaceIndex, terms: list[str], context: str) -> list[str]:
    """The memory ids the index proposes (keys mapped back to ids)."""
    assert index.view is not None
    keys = index.top(index.view, terms, [context], 10)
    if isinstance(store, PostgresStore):
        return keys
    conn = store.db.connection()
    return [conn.execute("SELECT id FROM memories WHERE seq = ?", (int(key),)).fetchone()[0]
            for key in keys]  # fmt: skip


def _index_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the database's own leg fail (GIN's scoring, FTS5's ranking): an answer then came
    from the index."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the database's own leg answered")

    monkeypatch.setattr(pg_search, "LexicalScoring", refuse)
    monkeypatch.setattr(sqlite_vectors, "rank_rows", refuse)


def test_the_index_answers_as_the_databases_own_leg(
    indexed: Indexed, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, first, second = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    rng = random.Random(11)
    queries = [rng.sample(WORDS, rng.randint(1, 4)) for _ in range(40)]
    queries += [["w0", "w1"], ["東京", "会議"], ["long" * 200, "w5"], ["absent"]]
    expected = {
        (i, tuple(scope)): _exact(indexed, ws, scope, terms, LIVE, 10)
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
    indexed: Indexed, monkeypatch: pytest.MonkeyPatch
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


def test_another_processs_write_is_found_at_once(
    indexed: Indexed, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stores on one database stand for two processes (replicas): each keeps its own
    index, and a write through one is answered by the other's index before either syncs."""
    ws, first, _ = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    other = open_store(indexed.url, lexical_index_min=1)
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


def test_a_sync_moves_the_horizon_and_indexes_the_change(indexed: Indexed) -> None:
    ws, first, _ = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    index = indexed.lexical_sidecar.ready(ws)
    assert index is not None and index.view is not None
    before, horizon = index.size(), index.view.horizon
    assert before == 1500
    new = new_memory(first, "fresh", tokens="quokka")
    indexed.insert_memories(ws, [new])
    view = index.view
    assert _top(indexed, index, ["quokka"], first) == []  # not in the index yet
    assert index.sync() == 1
    view = index.view
    assert view.horizon > horizon
    assert _top(indexed, index, ["quokka"], first) == [new.id]
    assert index.size() == before + 1
    assert index.sync() == 0  # nothing changed since
    assert indexed.soft_delete_memory(ws, new.id, T0)
    assert index.sync() == 1
    assert _top(indexed, index, ["quokka"], first) == []
    assert index.size() == before


def test_a_memory_deleted_outright_is_never_answered_and_leaves_the_index(
    indexed: Indexed,
) -> None:
    ws, first, _ = _corpus(indexed)
    gone = new_memory(first, "gone", tokens="platypus")
    indexed.insert_memories(ws, [gone])
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    index = indexed.lexical_sidecar.ready(ws)
    assert index is not None and index.view is not None
    assert _top(indexed, index, ["platypus"], first) == [gone.id]
    assert indexed.purge_memory(ws, gone.id)
    assert indexed.lexical_search(ws, [first], ["platypus"], LIVE, 10) == []
    index.sync()  # the search reported it gone
    assert _top(indexed, index, ["platypus"], first) == []
    # A key reported gone but written again before the sync stays (the sync re-reads it).
    back = new_memory(first, "back", tokens="wallaby")
    indexed.insert_memories(ws, [back])
    index.sync()
    index.forget([_key(indexed, back.id)])
    index.sync()
    assert _top(indexed, index, ["wallaby"], first) == [back.id]


def test_another_workspace_is_never_proposed(indexed: Indexed) -> None:
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


def test_a_narrowing_filter_goes_to_the_databases_own_leg(indexed: Indexed) -> None:
    ws, first, _ = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    narrowing = MemoryFilter(tags_any=["x"])
    assert not indexed.lexical_sidecar.applies(10**6, narrowing)
    assert not indexed.lexical_sidecar.applies(10**6, MemoryFilter(include_deleted=True))
    assert indexed.lexical_sidecar.applies(1, LIVE)
    assert not _sidecar(indexed, 0).applies(10**6, LIVE)
    found = [(h.memory_id, h.score)
             for h in indexed.lexical_search(ws, [first], ["w3", "w9"], narrowing, 10)]  # fmt: skip
    assert found == _gin(indexed, ws, [first], ["w3", "w9"], narrowing, 10)


def test_the_index_holds_the_trust_tier_and_sees_it_change(
    indexed: Indexed, monkeypatch: pytest.MonkeyPatch
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
        _exact(indexed, ws, scope, ["w1", "w2", "w3"], flt, 10) for flt in (trusted, external)
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


def test_too_many_changes_since_the_horizon_go_to_the_database(
    indexed: Indexed, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, first, _ = _corpus(indexed)
    assert indexed.lexical_sidecar.wait_ready(ws, timeout=60)
    monkeypatch.setattr(pg_sidecar, "FRESH_MAX", 2)
    monkeypatch.setattr(sqlite_sidecar, "FRESH_MAX", 2)
    fresh = [new_memory(first, f"n{i}", tokens=f"numbat w{i}") for i in range(3)]
    indexed.insert_memories(ws, fresh)
    answered = dict(indexed.lexical_sidecar.answered)
    found = indexed.lexical_search(ws, [first], ["numbat"], LIVE, 10)
    assert sorted(h.memory_id for h in found) == sorted(row.id for row in fresh)
    assert indexed.lexical_sidecar.answered == {**answered, "database": answered["database"] + 1}
    indexed.lexical_search(ws, [first], ["numbat"], LIVE, 10)
    assert indexed.lexical_sidecar.answered["index"] == answered["index"]  # still the database
    index = indexed.lexical_sidecar.ready(ws)
    assert index is not None
    index.sync()  # caught up: the index answers again
    _index_only(monkeypatch)
    found = indexed.lexical_search(ws, [first], ["numbat"], LIVE, 10)
    assert sorted(h.memory_id for h in found) == sorted(row.id for row in fresh)


def test_the_background_thread_builds_and_syncs(store: Indexed) -> None:
    pg = store
    _swap_sidecar(pg, 1, interval=0.05)
    ws, first, _ = _corpus(pg)
    assert pg.lexical_search(ws, [first], ["w1"], LIVE, 5)  # the database's leg, queueing the build
    assert pg.lexical_sidecar.wait_ready(ws, timeout=60)
    index = pg.lexical_sidecar.ready(ws)
    assert index is not None and index.view is not None
    horizon = index.view.horizon
    pg.insert_memories(ws, [new_memory(first, "late", tokens="echidna")])
    for _ in range(200):
        if index.view.horizon > horizon and _top(pg, index, ["echidna"], first):
            break
        time.sleep(0.05)
    assert len(_top(pg, index, ["echidna"], first)) == 1


def _stamp(store: Indexed, ws: str, memory_id: str) -> int:
    """The memory's change stamp: PostgreSQL's ``lexical_xid``, SQLite's ``lexical_change``."""
    if isinstance(store, SQLiteStore):
        found = (
            store.db.connection()
            .execute(
                "SELECT lexical_change FROM memories WHERE workspace_id = ? AND id = ?",
                (ws, memory_id),
            )
            .fetchone()
        )
        assert found is not None and found[0] is not None
        return int(found[0])
    with store.db.transaction(ws) as conn:
        found = conn.execute(
            "SELECT lexical_xid::text AS x FROM memories WHERE workspace_id = %s AND id = %s",
            (ws, memory_id),
        ).fetchone()
    assert found is not None and found["x"] is not None
    return int(found["x"])


def test_the_stamp_names_the_last_change_of_what_the_index_holds(store: Indexed) -> None:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "c").id
    row = new_memory(ctx, "m", tokens="alpha beta")
    store.insert_memories(ws, [row])
    inserted = _stamp(store, ws, row.id)
    store.record_access(ws, row.id, T0)
    store.update_memory(ws, row.id, MemoryChanges(values={"importance": 0.9}), T0)
    assert _stamp(store, ws, row.id) == inserted  # nothing the index holds changed
    store.update_memory(ws, row.id, MemoryChanges(lexical_tokens="gamma"), T0)
    edited = _stamp(store, ws, row.id)
    assert edited > inserted
    store.update_context(ws, ctx, {"trust_tier": "external"}, T0)
    tiered = _stamp(store, ws, row.id)
    assert tiered > edited
    assert store.soft_delete_memory(ws, row.id, T0)
    assert _stamp(store, ws, row.id) > tiered


def test_metrics_report_the_indexes_and_who_answered(indexed: Indexed) -> None:
    ws, first, _ = _corpus(indexed)
    health = HealthService(indexed)
    collector = _LexicalIndexCollector(lambda: SimpleNamespace(health=health))  # type: ignore[arg-type, return-value]

    def scraped() -> dict[tuple[str, tuple[str, ...]], float]:
        return {(sample.name, tuple(sample.labels.values())): sample.value
                for metric in collector.collect() for sample in metric.samples}  # fmt: skip

    assert scraped()[("kioku_lexical_index_workspaces", ())] == 0
    indexed.lexical_search(ws, [first], ["w1"], LIVE, 5)  # queues the build: the database answers
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
    store: Indexed, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg = store
    _swap_sidecar(pg, 1, interval=0.05)
    ws, first, _ = _corpus(pg)
    assert pg.lexical_sidecar.wait_ready(ws, timeout=60)
    built = pg.lexical_sidecar.ready(ws)
    row = new_memory(first, "edited", tokens="dingo")
    pg.insert_memories(ws, [row])
    pg.update_memory(ws, row.id, MemoryChanges(lexical_tokens="kookaburra"), T0)
    monkeypatch.setattr(shared_sidecar, "REBUILD_SLACK", -(10**9))  # every index is bloated
    for _ in range(400):
        if pg.lexical_sidecar.ready(ws) is not built:
            break
        time.sleep(0.05)
    rebuilt = pg.lexical_sidecar.ready(ws)
    assert rebuilt is not None and rebuilt is not built and rebuilt.view is not None
    assert _top(pg, rebuilt, ["kookaburra"], first) == [row.id]
    assert _top(pg, rebuilt, ["dingo"], first) == []
    assert len(rebuilt.ids) == rebuilt.size() == 1501


def test_without_tantivy_the_database_answers(
    store: Indexed, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tantivy" else real(name, *a)
    )
    sidecar = _sidecar(store, 1)
    assert sidecar.min_memories == 0 and not sidecar.applies(10**6, LIVE)
    assert "tantivy package is missing" in caplog.text
    assert _sidecar(store, 0).min_memories == 0
