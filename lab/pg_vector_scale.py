"""The PostgreSQL vector leg at 1M memories: latency and recall@10 of the HNSW index against
exact search, with and without filters (issue 21).

Usage (from the checkout; the database built once by ``lab/pg_scale_db.py``)::

    .venv/bin/python lab/pg_scale_db.py start DIR
    nice -n 10 .venv/bin/python lab/pg_vector_scale.py DIR [--queries 200] \\
        [--ef 100 60 40] [--data ../shared/data] [--json out.json]

Asks Q real LoCoMo questions (seeded sample, embedded by the bundled model, as ``recall``
embeds them) of ``Store.vector_search`` (the leg as recall runs it: depth 40 for k = 10) in
the big context (``scale``) and under filters: trust tier (~80 % and ~20 % of it), tags (~10 %,
~1 %: labels set by pg_scale_db.py), and context lists (``scale`` + ``side``, ``side`` alone:
20,000 memories, 2 % of the table). Each question runs every ``hnsw.ef_search`` value in turn
(interleaved, so load hits them alike), after a warm-up pass. recall@10 = the share of the
exact top 10 (every vector of the scope scored in numpy, float32) found in the leg's first 10.
Whatever ``kioku`` is imported answers: run it with ``PYTHONPATH=<other checkout>/src`` to
measure another version of the leg on the same database.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from kioku.benchmark.data import load_locomo
from kioku.benchmark.meta import configured_embedder
from kioku.benchmark.metrics import latency_summary
from kioku.storage.postgres import PostgresStore, vector_leg
from kioku.storage.records import MemoryFilter

K = 10
DEPTH = 40
"""What ``recall`` asks the leg for at k = 10 (``max(k * fetch_factor, MIN_LEG_DEPTH)``)."""
WARMUP = 20


@dataclass
class Corpus:
    """Every live, embedded memory of the workspace, in numpy (the exact search's input)."""

    ids: np.ndarray
    vectors: np.ndarray
    context: np.ndarray
    mid: np.ndarray
    rare: np.ndarray
    trusted: np.ndarray


def _corpus(url: str, workspace_id: str) -> Corpus:
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.execute("SELECT set_config('kioku.workspace_id', %s, false)", (workspace_id,))
        with conn.cursor(binary=True) as cur:
            cur.execute(
                "SELECT id, context_id, tags ? 'mid', tags ? 'rare', trust_tier = 'trusted', "
                "embedding FROM memories WHERE workspace_id = %s AND deleted_at IS NULL "
                "AND superseded_by IS NULL AND embedding_status = 'ready'",
                (workspace_id,),
            )
            rows = cur.fetchall()
    vectors = np.stack([row[5].to_numpy() for row in rows]).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return Corpus(
        ids=np.array([row[0] for row in rows]),
        vectors=vectors,
        context=np.array([row[1] for row in rows]),
        mid=np.array([bool(row[2]) for row in rows]),
        rare=np.array([bool(row[3]) for row in rows]),
        trusted=np.array([bool(row[4]) for row in rows]),
    )


def _exact(corpus: Corpus, mask: np.ndarray, query: np.ndarray) -> set[str]:
    scores = corpus.vectors[mask] @ (query / np.linalg.norm(query))
    top = np.argpartition(-scores, K)[:K] if len(scores) > K else np.arange(len(scores))
    return set(corpus.ids[mask][top].tolist())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="the directory of lab/pg_scale_db.py")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef", type=int, nargs="+", default=[100, 60, 40])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    port = (args.dir / "port").read_text().strip()
    url = f"postgresql://postgres@127.0.0.1:{port}/kioku"
    load = {"start": os.getloadavg()}
    embedder = configured_embedder()
    assert embedder is not None
    corpora = load_locomo(args.data / "locomo")
    questions = [q.text for corpus in corpora for q in corpus.questions]
    picked = np.random.default_rng(21).permutation(len(questions))[: args.queries]
    queries = [np.asarray(embedder.embed_query(questions[int(i)]), np.float32) for i in picked]
    store = PostgresStore(url)
    with psycopg.connect(url) as conn:
        conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
        ws = conn.execute("SELECT id FROM workspaces ORDER BY created_at LIMIT 1").fetchone()
        assert ws is not None
        workspace_id = str(ws[0])
        found = dict(
            conn.execute(
                "SELECT name, id FROM contexts WHERE workspace_id = %s", (workspace_id,)
            ).fetchall()
        )
        index = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_memories_hnsw_384'"
        ).fetchone()
    scale, side = str(found["scale"]), str(found["side"])
    began = time.perf_counter()
    corpus = _corpus(url, workspace_id)
    print(f"{len(corpus.ids)} vectors loaded in {time.perf_counter() - began:.0f} s", flush=True)
    in_scale, in_side = corpus.context == scale, corpus.context == side
    cases: list[tuple[str, list[str], MemoryFilter, np.ndarray]] = [
        ("none (one context)", [scale], MemoryFilter(), in_scale),
        ("trust tier trusted", [scale], MemoryFilter(trust_tier="trusted"),
         in_scale & corpus.trusted),
        ("trust tier external", [scale], MemoryFilter(trust_tier="external"),
         in_scale & ~corpus.trusted),
        ("tag mid", [scale], MemoryFilter(tags_any=["mid"]), in_scale & corpus.mid),
        ("tags mid + rare", [scale], MemoryFilter(tags_all=["mid", "rare"]),
         in_scale & corpus.rare),
        ("two contexts", [scale, side], MemoryFilter(), in_scale | in_side),
        ("the small context alone", [side], MemoryFilter(), in_side),
    ]  # fmt: skip
    for query in queries[:WARMUP]:  # caches: the index and the heap pages it leads to
        store.vector_search(workspace_id, [scale], query, MemoryFilter(), DEPTH)
    default_ef = vector_leg.EF_SEARCH
    results: list[dict[str, object]] = []
    print(f"index: {index[0] if index else None}")
    print("| filter | rows in scope | ef_search | recall@10 | p50 ms | p95 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|")
    for label, scope, flt, mask in cases:
        times: dict[int, list[float]] = {ef: [] for ef in args.ef}
        recalls: dict[int, list[float]] = {ef: [] for ef in args.ef}
        for query in queries:
            exact = _exact(corpus, mask, query)
            for ef in args.ef:
                vector_leg.EF_SEARCH = ef
                t0 = time.perf_counter()
                hits = store.vector_search(workspace_id, scope, query, flt, DEPTH)
                times[ef].append((time.perf_counter() - t0) * 1000)
                recalls[ef].append(len(exact & {h.memory_id for h in hits[:K]}) / len(exact))
        vector_leg.EF_SEARCH = default_ef
        for ef in args.ef:
            lat = latency_summary(times[ef])
            recall = statistics.mean(recalls[ef])
            results.append({"filter": label, "rows": int(mask.sum()), "ef_search": ef,
                            "recall_at_10": round(recall, 3), **lat})  # fmt: skip
            print(
                f"| {label} | {int(mask.sum())} | {ef} | {recall:.3f} | {lat['p50']:.1f} | "
                f"{lat['p95']:.1f} | {lat['p99']:.1f} |",
                flush=True,
            )
    store.close()
    load["end"] = os.getloadavg()
    print(f"load average at start {load['start']}, at end {load['end']}")
    if args.json:
        args.json.write_text(
            json.dumps({"index": index[0] if index else None, "load": load,
                        "queries": len(queries), "results": results}, indent=2) + "\n"
        )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
