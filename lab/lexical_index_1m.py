"""The product's lexical index of a large scope (``storage/postgres/lexical_sidecar.py``)
measured at a million memories in one context (issue 21): its build, its answers against
exact BM25, its latency against the GIN leg, and what unsynced writes cost a search.

Usage: ``nice -n 10 .venv/bin/python lab/lexical_index_1m.py [--dir /work/pg1m-lex2]
[--data ../shared/data] [--questions 400] [--repeat 3]``

1. ``pg_lexical_tail``'s database (1M memories, one context; filled on first use) is opened
   with the product's store (migrations to head), and the workspace's index is built by the
   store's own background thread (``wait_ready``), timed.
2. The seeded LoCoMo questions (``pg_lexical_tail``'s sample) at limit 10 and limit 40 (the
   recall's leg depth): the index's answers against exact BM25's top 10 and top 40 (cached
   by ``pg_lexical_tail`` and ``lexical_sidecar_study``), then both legs interleaved
   question by question at limit 40, best of ``--repeat``.
3. Writes: 1,000 new memories committed and not yet synced (every search reads them from
   the database), then one sync, timed; they are purged at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pg_lexical_plans import _memory
from pg_lexical_tail import exact_search, open_filled, persistent_server

from kioku.benchmark.data import load_locomo
from kioku.benchmark.metrics import latency_summary
from kioku.search.tokenize import tokenize
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres.lexical_sidecar import MIN_MEMORIES
from kioku.storage.records import MemoryFilter

LIVE = MemoryFilter()


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def search(store: PostgresStore, ws: str, ctx: str, query: list[str], k: int, index: bool):
    """The lexical leg with the index on (the product's default) or off (the GIN leg)."""
    store.lexical_sidecar.min_memories = MIN_MEMORIES if index else 0
    return [hit.memory_id for hit in store.lexical_search(ws, [ctx], query, LIVE, k)]


def exact_cache(store, ws, ctx, queries, path: Path, k: int) -> list[list[str]]:
    cache: dict[str, list[str]] = json.loads(path.read_text()) if path.exists() else {}
    for query in queries:
        key = " ".join(query)
        if key not in cache:
            cache[key] = [hit.memory_id for hit in exact_search(store, ws, [ctx], query, k)]
    path.write_text(json.dumps(cache))
    return [cache[" ".join(query)] for query in queries]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, default=Path("/work/pg1m-lex2"))
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load at start: {os.getloadavg()}", flush=True)
    with persistent_server(args.dir) as server:
        store, ws, ctx = open_filled(server, args.count, args.data)
        try:
            measure(store, ws, ctx, args)
        finally:
            store.close()
    print(f"load at end: {os.getloadavg()}")


def measure(store: PostgresStore, ws: str, ctx: str, args: argparse.Namespace) -> None:
    rss = rss_mb()
    began = time.perf_counter()
    assert store.lexical_sidecar.wait_ready(ws, timeout=1800)
    index = store.lexical_sidecar.ready(ws)
    assert index is not None
    print(f"index built by the store: {index.size()} memories in "
          f"{time.perf_counter() - began:.1f} s, RSS {rss:.0f} -> {rss_mb():.0f} MiB, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    corpora = load_locomo(args.data / "locomo")
    questions = [q.text for corpus in corpora for q in corpus.questions]
    picked = np.random.default_rng(7).choice(len(questions), size=args.questions, replace=False)
    queries = [tokenize(questions[i]) for i in picked]
    top10 = exact_cache(store, ws, ctx, queries,
                        args.dir / f"exact-{args.count}-{args.questions}.json", 10)  # fmt: skip
    top40 = exact_cache(store, ws, ctx, queries,
                        args.dir / f"exact40-{args.count}-{args.questions}.json", 40)  # fmt: skip
    for query in queries[:10]:  # warm-up
        search(store, ws, ctx, query, 40, True)
        search(store, ws, ctx, query, 40, False)
    same10 = sum(
        search(store, ws, ctx, q, 10, True) == e for q, e in zip(queries, top10, strict=True)
    )
    slots10 = np.mean([len(set(search(store, ws, ctx, q, 10, True)) & set(e)) / max(len(e), 1)
                       for q, e in zip(queries, top10, strict=True)])  # fmt: skip
    same40 = sum(
        search(store, ws, ctx, q, 40, True) == e for q, e in zip(queries, top40, strict=True)
    )
    gin10 = sum(
        search(store, ws, ctx, q, 10, False) == e for q, e in zip(queries, top10, strict=True)
    )
    print(
        f"top 10 equal to exact BM25's: index {same10}/{len(queries)} (slots {slots10:.4f}), "
        f"GIN leg {gin10}/{len(queries)}; top 40: index {same40}/{len(queries)}",
        flush=True,
    )
    timed(store, ws, ctx, queries, args.repeat, "steady state")
    fresh = [_memory(ctx, f"note {uuid.uuid4().hex[:8]} " + " ".join(queries[i % 50]))
             for i in range(1000)]  # fmt: skip
    store.lexical_sidecar.close()  # no background sync: the writes stay unsynced
    store.insert_memories(ws, fresh)
    try:
        timed(store, ws, ctx, queries[:100], args.repeat, "1,000 unsynced writes")
        began = time.perf_counter()
        changed = index.sync(store.db)
        print(f"sync of {changed} writes: {(time.perf_counter() - began) * 1000:.0f} ms")
    finally:
        for row in fresh:
            store.purge_memory(ws, row.id)
        index.sync(store.db)


def timed(store, ws, ctx, queries, repeat: int, label: str) -> None:
    """Both legs at limit 40, interleaved per question, best of ``repeat``."""
    times: dict[bool, list[float]] = {True: [], False: []}
    loads = [os.getloadavg()[0]]
    for query in queries:
        for index in (True, False):
            best = float("inf")
            for _ in range(repeat):
                began = time.perf_counter()
                search(store, ws, ctx, query, 40, index)
                best = min(best, (time.perf_counter() - began) * 1000)
            times[index].append(best)
    loads.append(os.getloadavg()[0])
    for index, name in ((True, "index"), (False, "GIN leg")):
        s = latency_summary(times[index])
        print(
            f"{label}, {name}: p50/p95/p99 {s['p50']:.1f}/{s['p95']:.1f}/{s['p99']:.1f} ms "
            f"({len(times[index])} questions, load {loads[0]:.1f}-{loads[1]:.1f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
