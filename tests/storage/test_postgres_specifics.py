"""PostgreSQL-only behaviour: BM25 over kioku's tokens, verbatim lexemes, per-context vector
dimensions, URL forms, and the atomic paths under real concurrency."""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from kioku.storage import open_store
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres.codec import encode_tokens
from kioku.storage.postgres.connection import ALL_WORKSPACES
from kioku.storage.postgres.search import K1, B, idf
from kioku.storage.records import MemoryFilter, OAuthGrant
from kioku.storage.urls import libpq_url, sqlalchemy_url
from tests.storage.test_contract import T0, new_context, new_memory, vec

LIVE = MemoryFilter()


def _generation(store: PostgresStore, ctx_id: str) -> int:
    with store.db.transaction(ALL_WORKSPACES) as conn:
        row = conn.execute("SELECT vector_generation FROM contexts WHERE id = %s", (ctx_id,))
        found = row.fetchone()
    assert found is not None
    return found["vector_generation"]


def test_url_forms() -> None:
    assert libpq_url("postgresql+psycopg://u@h/db") == "postgresql://u@h/db"
    assert libpq_url("postgres://u@h/db") == "postgresql://u@h/db"
    assert sqlalchemy_url("postgresql://u:p@h:5/db") == "postgresql+psycopg://u:p@h:5/db"
    with pytest.raises(ValueError):
        libpq_url("mysql://h/db")


def test_sqlalchemy_url_form_opens_the_store(postgres_database: str) -> None:
    store = open_store(sqlalchemy_url(postgres_database))
    try:
        assert store.url == libpq_url(postgres_database)
        store.ensure_workspace("w")
    finally:
        store.close()


def test_bm25_scores_match_the_formula(pg: PostgresStore) -> None:
    ws = pg.ensure_workspace("w").id
    ctx = new_context(pg, ws, "c")
    docs = ["apple apple banana", "apple cherry cherry cherry", "durian", "banana banana"]
    rows = [new_memory(ctx.id, "s", tokens=tokens) for tokens in docs]
    pg.insert_memories(ws, rows)
    hits = {h.memory_id: h.score for h in pg.lexical_search(ws, [ctx.id], ["apple"], LIVE, 10)}
    avgdl = sum(len(d.split()) for d in docs) / len(docs)

    def bm25(tf: int, dl: int) -> float:
        return idf(4, 2) * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))

    assert hits[rows[0].id] == pytest.approx(bm25(2, 3))
    assert hits[rows[1].id] == pytest.approx(bm25(1, 4))
    assert idf(4, 2) == pytest.approx(math.log(1 + 2.5 / 2.5))


def test_rarer_term_scores_higher_and_longer_doc_lower(pg: PostgresStore) -> None:
    ws = pg.ensure_workspace("w").id
    ctx = new_context(pg, ws, "c")
    common = [new_memory(ctx.id, "s", tokens="common filler") for _ in range(8)]
    rare = new_memory(ctx.id, "s", tokens="rare filler")
    short = new_memory(ctx.id, "s", tokens="common rare")
    long = new_memory(ctx.id, "s", tokens="common rare " + "pad " * 30)
    pg.insert_memories(ws, [*common, rare, short, long])
    hits = pg.lexical_search(ws, [ctx.id], ["common", "rare"], LIVE, 20)
    score = {h.memory_id: h.score for h in hits}
    assert score[rare.id] > score[common[0].id]  # same length, rarer term
    assert score[short.id] > score[long.id]  # same terms, longer document
    assert hits[0].memory_id == short.id


def test_statistics_are_scoped_to_the_tenant_and_contexts(pg: PostgresStore) -> None:
    ws, other_ws = pg.ensure_workspace("w").id, pg.ensure_workspace("x").id
    ctx, noisy = new_context(pg, ws, "c"), new_context(pg, other_ws, "c")
    row = new_memory(ctx.id, "s", tokens="word other")
    pg.insert_memories(ws, [row, new_memory(ctx.id, "s", tokens="other")])
    before = pg.lexical_search(ws, [ctx.id], ["word"], LIVE, 5)[0].score
    pg.insert_memories(other_ws, [new_memory(noisy.id, "s", tokens="word") for _ in range(50)])
    assert pg.lexical_search(ws, [ctx.id], ["word"], LIVE, 5)[0].score == before


def test_tokens_are_kept_verbatim(pg: PostgresStore) -> None:
    """Japanese, stems, case, punctuation and quote characters: each token is one lexeme,
    matched exactly (no parser, no lower-casing, no stemming of its own)."""
    ws = pg.ensure_workspace("w").id
    ctx = new_context(pg, ws, "c")
    tokens = ["東京", "天気", "走る", "run", "Running", "c++", "o'neil", "back\\slash", "e-mail"]
    row = new_memory(ctx.id, "s", tokens=" ".join(tokens))
    pg.insert_memories(ws, [row])
    for token in tokens:
        assert [h.memory_id for h in pg.lexical_search(ws, [ctx.id], [token], LIVE, 5)] == [
            row.id
        ], token
    for absent in ["東", "京都", "running", "runn", "c", "mail", "e"]:
        assert pg.lexical_search(ws, [ctx.id], [absent], LIVE, 5) == [], absent
    with pg.db.transaction(ALL_WORKSPACES) as conn:
        stored = conn.execute(
            "SELECT tsvector_to_array(lexical_tokens) AS lexemes, lexical_length FROM memories"
        ).fetchone()
    assert stored is not None
    assert sorted(stored["lexemes"]) == sorted(tokens)
    assert stored["lexical_length"] == len(tokens)


def test_token_counts_survive_the_tsvector_cap() -> None:
    literal, length = encode_tokens("a " * 300 + "b")
    assert length == 301 and literal.count(",") == 255  # 256 positions for "a", 1 for "b"


def test_vector_search_with_different_dimensions_per_context(pg: PostgresStore) -> None:
    ws = pg.ensure_workspace("w").id
    small, large = new_context(pg, ws, "small"), new_context(pg, ws, "large")
    a, b = new_memory(small.id, "a"), new_memory(large.id, "b")
    pg.insert_memories(ws, [a, b])
    assert pg.store_embeddings(ws, small.id, "m2", [(a.id, vec(1, 0))]) == 1
    assert pg.store_embeddings(ws, large.id, "m3", [(b.id, vec(0, 1, 0))]) == 1
    both = [small.id, large.id]
    assert [h.memory_id for h in pg.vector_search(ws, both, vec(1, 0), LIVE, 5)] == [a.id]
    hits = pg.vector_search(ws, both, vec(0, 1, 0), LIVE, 5)
    assert [h.memory_id for h in hits] == [b.id] and hits[0].score == pytest.approx(1.0)
    context = pg.get_context(ws, large.id)
    assert context is not None and (context.embedding_model, context.embedding_dim) == ("m3", 3)


def test_vector_generation_bumps_when_searchable_vectors_change(pg: PostgresStore) -> None:
    ws = pg.ensure_workspace("w").id
    ctx = new_context(pg, ws, "c")
    row = new_memory(ctx.id, "a")
    pg.insert_memories(ws, [row])
    assert _generation(pg, ctx.id) == 0
    pg.store_embeddings(ws, ctx.id, "m", [(row.id, vec(1, 0))])
    assert _generation(pg, ctx.id) == 1
    pg.soft_delete_memory(ws, row.id, T0)
    assert _generation(pg, ctx.id) == 2
    pg.purge_memory(ws, row.id)  # already out of the index: no bump
    assert _generation(pg, ctx.id) == 2
    assert pg.reset_embeddings(ws, ctx.id) == 0
    assert _generation(pg, ctx.id) == 3


def test_concurrent_takes_of_one_grant_succeed_once(pg: PostgresStore) -> None:
    pg.insert_oauth_client("client", {}, T0)
    secret = "a" * 64
    pg.insert_oauth_grants(
        [
            OAuthGrant(
                secret_hash=secret,
                kind="consent",
                client_id="client",
                workspace_id=None,
                key_id=None,
                scopes=[],
                params={},
                family="f",
                expires_at=T0,
                created_at=T0,
            )
        ]
    )
    barrier = threading.Barrier(8)

    def take(_: int) -> bool:
        barrier.wait()
        grant = pg.take_oauth_grant(secret, "consent", T0)
        return grant is not None and grant.revoked_at is None

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(take, range(8)))
    assert results.count(True) == 1


def test_concurrent_set_state_keeps_one_row(pg: PostgresStore) -> None:
    ws = pg.ensure_workspace("w").id
    ctx = new_context(pg, ws, "c")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: pg.set_state(ws, ctx.id, "k", str(i), None, T0), range(40)))
    assert len(pg.list_state(ws, ctx.id, T0, None, 10)) == 1


def test_overlong_tokens_and_huge_documents_are_stored(pg: PostgresStore) -> None:
    """PostgreSQL caps a lexeme under 2 KB and a tsvector at 1 MB; FTS5 caps neither."""
    ws = pg.ensure_workspace("w").id
    ctx = new_context(pg, ws, "c")
    long_token = "a" * 5000
    huge = " ".join(f"w{i:07d}" for i in range(130_000))  # ~1.2 MB of distinct tokens
    rows = [
        new_memory(ctx.id, "long", tokens=f"{long_token} short"),
        new_memory(ctx.id, "huge", tokens=huge),
    ]
    pg.insert_memories(ws, rows)
    assert [h.memory_id for h in pg.lexical_search(ws, [ctx.id], [long_token], LIVE, 5)] == [
        rows[0].id
    ]
    assert pg.lexical_search(ws, [ctx.id], ["a" * 4999], LIVE, 5) == []
    assert [h.memory_id for h in pg.lexical_search(ws, [ctx.id], ["w0000001"], LIVE, 5)] == [
        rows[1].id
    ]


def test_reads_together_share_one_connection_and_nest_inside_a_session(
    pg: PostgresStore,
) -> None:
    ws, other = pg.ensure_workspace("w").id, pg.ensure_workspace("other").id

    def backend_pid() -> int:
        with pg.db.transaction(ws) as conn:
            row = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
        assert row is not None
        return row["pid"]

    with pg.reads_together(ws):
        first, second = backend_pid(), backend_pid()
        assert first == second  # one transaction: both reads on its connection
        with pg.reads_together(ws):  # nested: joins, and must not end the outer block
            assert backend_pid() == first
        assert backend_pid() == first
        with pytest.raises(RuntimeError), pg.reads_together(other):  # one workspace a block
            pass


def test_pool_statistics_reach_the_metrics_through_the_health_service(pg: PostgresStore) -> None:
    """``/metrics``' pool series read ``pool_statistics`` (the health service's), never the
    pool itself: its figures are the pool's own."""
    from types import SimpleNamespace

    from kioku.api.metrics import _PoolCollector
    from kioku.service.health import HealthService

    pg.ensure_workspace("w")  # one borrow at least
    stats = pg.pool_statistics()
    assert (stats.max, stats.waiting) == (10, 0)  # open_store's default pool size
    assert 1 <= stats.size <= stats.max and stats.wait_seconds >= 0
    health = HealthService(pg)
    collector = _PoolCollector(lambda: SimpleNamespace(health=health))  # type: ignore[arg-type, return-value]
    scraped = {sample.name: sample.value for m in collector.collect() for sample in m.samples}
    assert scraped.keys() == {
        "kioku_db_pool_size", "kioku_db_pool_max", "kioku_db_pool_waiting",
        "kioku_db_pool_requests_queued_total", "kioku_db_pool_wait_seconds_total",
    }  # fmt: skip
    assert scraped["kioku_db_pool_max"] == 10
