"""A per-replica tantivy index as the lexical leg's candidate generator, measured at a million
memories (issue 21). Measurement only: tantivy is not a kioku dependency.

Usage: ``nice -n 10 .venv/bin/python lab/lexical_sidecar_study.py [--dir /work/pg1m-lex2]
[--data ../shared/data] [--index /tmp/sidecar-index] [--questions 400] [--repeat 3]``
(with ``tantivy==0.27.0`` installed in the venv by hand).

1. The memories of the 1M database (``pg_lexical_tail``'s) are exported from PostgreSQL (a
   server-side cursor; each memory's lexemes repeated tf times, so tantivy's terms are
   kioku's tokens) to a file, then indexed by tantivy (whitespace tokenizer, term
   frequencies without positions; a ``row`` fast field points into the list of ids).
2. For the seeded LoCoMo questions (``pg_lexical_tail``'s sample, tokens deduplicated, an OR of
   term queries): tantivy's top-N latency and candidate recall (the share of exact BM25's
   top 10, cached by ``pg_lexical_tail``, inside tantivy's top N); then the proposed leg,
   tantivy's top N re-scored exactly by PostgreSQL (kioku's BM25 for those ids, the scope's
   statistics from ``lexical_stats``) to the top 40, interleaved with today's
   ``lexical_search`` question by question (best of ``--repeat``).
3. Freshness: 1,000 documents added, committed, searcher reloaded; the same deleted by id.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tantivy  # type: ignore[import-not-found]  # a measurement-only install
from pg_lexical_tail import (
    WORKSPACE,
    exact_search,
    open_filled,
    persistent_server,
    today_search,
)

from kioku.benchmark.data import load_locomo
from kioku.benchmark.metrics import latency_summary
from kioku.search.tokenize import tokenize
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres.codec import lexeme
from kioku.storage.postgres.filters import filter_sql
from kioku.storage.postgres.lexical_scoring import EXACT_SCORE, K1, B, top_scored
from kioku.storage.postgres.lexical_stats import lexical_corpus
from kioku.storage.postgres.search import LEXICAL_SETTINGS, idf
from kioku.storage.records import MemoryFilter

K = 10
LIMIT = 40
DEPTHS = (40, 100, 200, 400)
RESCORED = (40, 100, 200, 400)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def export(store: PostgresStore, ws: str, ctx: str, path: Path) -> int:
    """Each live memory of the scope as ``id<TAB>lexemes repeated tf times``."""
    count = 0
    with store.db.transaction(ws) as conn, path.open("w") as out:
        cursor = conn.cursor(name="sidecar_export")
        cursor.itersize = 5000
        cursor.execute(
            "SELECT m.id, (SELECT string_agg(repeat(u.lexeme || ' ', "
            "greatest(cardinality(u.positions), 1)), '') FROM unnest(m.lexical_tokens) u) AS t "
            "FROM memories m WHERE m.workspace_id = %s AND m.context_id = %s "
            "AND m.deleted_at IS NULL",
            (ws, ctx),
        )
        for row in cursor:
            out.write(f"{row['id']}\t{(row['t'] or '').strip()}\n")
            count += 1
    return count


def schema() -> Any:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
    builder.add_text_field("id", tokenizer_name="raw", index_option="basic")
    builder.add_unsigned_field("row", fast=True)
    return builder.build()


def document(body: str, memory_id: str, row: int) -> Any:
    doc = tantivy.Document(body=body, id=memory_id)
    doc.add_unsigned("row", row)
    return doc


def build(path: Path, index_dir: Path, threads: int, heap: int) -> list[str]:
    """The index of the exported file; the ids, by ``row``."""
    index_dir.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(schema(), path=str(index_dir), reuse=False)
    writer = index.writer(heap_size=heap, num_threads=threads)
    ids: list[str] = []
    with path.open() as lines:
        for line in lines:
            memory_id, _, body = line.rstrip("\n").partition("\t")
            writer.add_document(document(body, memory_id, len(ids)))
            ids.append(memory_id)
    writer.commit()
    writer.wait_merging_threads()
    return ids


def size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


class Sidecar:
    """The opened index: top-N memory ids for a query's terms."""

    def __init__(self, index: Any, ids: list[str]) -> None:
        self.index, self.ids = index, ids
        self.schema = index.schema
        self.searcher = index.searcher()

    def top(self, terms: Sequence[str], n: int) -> list[str]:
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, "body", term))
             for term in terms]
        )  # fmt: skip
        hits = self.searcher.search(query, n, count=False).hits
        rows = self.searcher.fast_field_values("row", [address for _, address in hits])
        return [self.ids[int(row)] for row in rows]


def rescore(store: PostgresStore, ws: str, ctx: str, terms: list[str], ids: list[str],
            limit: int) -> list[tuple[str, float]]:  # fmt: skip
    """kioku's exact BM25 for ``ids`` (the scope's statistics), the top ``limit``."""
    where, params = filter_sql(ws, [ctx], MemoryFilter())
    with store.db.transaction(ws, settings=LEXICAL_SETTINGS) as conn:
        corpus = lexical_corpus(conn, ws, [ctx], terms)
        n = max(corpus.n, 1)
        weights = [idf(n, min(max(corpus.dfs[t], 1), n)) for t in terms]
        rows = conn.execute(
            "WITH w AS (SELECT %s::text[] AS terms, %s::float8[] AS idf) "
            f"SELECT m.id, {EXACT_SCORE} AS score FROM memories m, w "
            f"WHERE {where} AND m.id = ANY(%s::text[])",
            (terms, weights, K1 + 1, K1, B, B, corpus.avgdl or 1.0, *params, ids),
        ).fetchall()
    return top_scored({row["id"]: float(row["score"] or 0.0) for row in rows}, limit)


def proposed(sidecar: Sidecar, store: PostgresStore, ws: str, ctx: str, n: int):
    def run(terms: list[str]) -> list[str]:
        return [i for i, _ in rescore(store, ws, ctx, terms, sidecar.top(terms, n), LIMIT)]

    return run


def share(found: Sequence[str], exact: Sequence[str]) -> float:
    return len(set(found) & set(exact)) / len(exact) if exact else 1.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, default=Path("/work/pg1m-lex2"))
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--index", type=Path, default=Path("/tmp/sidecar-index"))
    parser.add_argument("--export", type=Path, default=Path("/tmp/sidecar-export.tsv"))
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--heap", type=int, default=200_000_000)
    parser.add_argument("--exact40", type=int, default=0, help="questions with exact top 40")
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
    assert store.ensure_workspace(WORKSPACE).id == ws
    print(f"RSS at start: {rss_mb():.0f} MiB", flush=True)
    began = time.perf_counter()
    exported = export(store, ws, ctx, args.export)
    print(f"export: {exported} memories in {time.perf_counter() - began:.1f} s "
          f"({args.export.stat().st_size / 2**20:.0f} MiB), load {os.getloadavg()[0]:.1f}",
          flush=True)  # fmt: skip
    began = time.perf_counter()
    ids = build(args.export, args.index, args.threads, args.heap)
    print(f"build: {time.perf_counter() - began:.1f} s ({args.threads} thread(s), heap "
          f"{args.heap / 1e6:.0f} MB), index {size_mb(args.index):.0f} MiB on disk, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    before = rss_mb()
    index = tantivy.Index.open(str(args.index))
    sidecar = Sidecar(index, ids)
    print(f"RSS: {before:.0f} MiB before opening (ids list included), {rss_mb():.0f} MiB after; "
          f"{sidecar.searcher.num_segments} segment(s), {sidecar.searcher.num_docs} docs",
          flush=True)  # fmt: skip

    corpora = load_locomo(args.data / "locomo")
    questions = [(c, q.text) for c, corpus in enumerate(corpora) for q in corpus.questions]
    picked = np.random.default_rng(7).choice(len(questions), size=args.questions, replace=False)
    queries = [tokenize(questions[i][1]) for i in picked]
    cache = json.loads((args.dir / f"exact-{args.count}-{args.questions}.json").read_text())
    exacts = [cache[" ".join(query)] for query in queries]
    terms_of = [sorted({lexeme(t) for t in query if t}) for query in queries]

    # Tantivy alone: latency (best of R) and candidate recall per depth.
    for terms in terms_of[:20]:
        sidecar.top(terms, max(DEPTHS))
    load0 = os.getloadavg()[0]
    times: dict[int, list[float]] = {n: [] for n in DEPTHS}
    recall: dict[int, list[float]] = {n: [] for n in DEPTHS}
    own: list[float] = []  # tantivy's own top 10 against exact BM25's
    for terms, exact in zip(terms_of, exacts, strict=True):
        for n in DEPTHS:
            fastest, found = float("inf"), []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                found = sidecar.top(terms, n)
                fastest = min(fastest, (time.perf_counter() - t0) * 1000)
            times[n].append(fastest)
            recall[n].append(share(found, exact))
            if n == DEPTHS[0]:
                own.append(share(found[:K], exact))
    print(f"tantivy alone, load {load0:.1f} -> {os.getloadavg()[0]:.1f}; RSS {rss_mb():.0f} MiB")
    print("| tantivy top N | p50 ms | p95 ms | p99 ms | exact top-10 inside top N |")
    print("|---|---|---|---|---|")
    for n in DEPTHS:
        lat = latency_summary(times[n])
        print(f"| {n} | {lat['p50']:.2f} | {lat['p95']:.2f} | {lat['p99']:.2f} "
              f"| {statistics.mean(recall[n]):.3f} |")  # fmt: skip
    print(f"tantivy's own top 10 = exact top-10 slots: {statistics.mean(own):.3f}")
    if args.exact40:
        recall40(store, ws, ctx, sidecar, queries[: args.exact40], terms_of, args)

    # The proposed leg against today's, interleaved.
    def today(terms: list[str], query: list[str]) -> list[str]:
        return [hit.memory_id for hit in today_search(store, ws, [ctx], query, LIMIT)]

    variants: dict[str, Any] = {"today (lexical_search, limit 40)": today}
    for n in RESCORED:
        run = proposed(sidecar, store, ws, ctx, n)
        variants[f"tantivy top {n} + PG exact re-score"] = lambda t, q, run=run: run(t)
    for terms, query in zip(terms_of[:10], queries[:10], strict=True):
        for run in variants.values():
            run(terms, query)
    lat_of: dict[str, list[float]] = {name: [] for name in variants}
    top10: dict[str, list[float]] = {name: [] for name in variants}
    loads = [os.getloadavg()[0]]
    for i, (terms, query, exact) in enumerate(zip(terms_of, queries, exacts, strict=True)):
        order = list(variants.items()) if i % 2 == 0 else list(variants.items())[::-1]
        best: dict[str, float] = {}
        got: dict[str, list[str]] = {}
        for _ in range(args.repeat):
            for name, run in order:
                t0 = time.perf_counter()
                got[name] = run(terms, query)[:K]
                elapsed = (time.perf_counter() - t0) * 1000
                best[name] = min(best.get(name, elapsed), elapsed)
        for name in variants:
            lat_of[name].append(best[name])
            top10[name].append(share(got[name], exact))
        if i % 50 == 49:
            loads.append(os.getloadavg()[0])
    print(f"load (1-min) during the legs: {min(loads):.1f}-{max(loads):.1f}")
    print("| lexical leg (limit 40) | p50 ms | p95 ms | p99 ms | exact top-10 slots |")
    print("|---|---|---|---|---|")
    for name in variants:
        lat = latency_summary(lat_of[name])
        print(f"| {name} | {lat['p50']:.1f} | {lat['p95']:.1f} | {lat['p99']:.1f} "
              f"| {statistics.mean(top10[name]):.3f} |")  # fmt: skip

    freshness(index, args.export, len(ids))


def recall40(store: PostgresStore, ws: str, ctx: str, sidecar: Sidecar,
             queries: list[list[str]], terms_of: list[list[str]],
             args: argparse.Namespace) -> None:  # fmt: skip
    """Exact BM25's top 40 (cached) inside tantivy's top N, and the re-scored leg's top 40
    against it, for the first questions."""
    path = args.dir / f"exact40-{args.count}-{len(queries)}.json"
    cache: dict[str, list[str]] = json.loads(path.read_text()) if path.exists() else {}
    began = time.perf_counter()
    for query in queries:
        key = " ".join(query)
        if key not in cache:
            cache[key] = [h.memory_id for h in exact_search(store, ws, [ctx], query, LIMIT)]
    path.write_text(json.dumps(cache))
    print(f"exact top 40 for {len(queries)} questions ready ({time.perf_counter() - began:.0f} s)")
    for n in DEPTHS:
        inside, leg = [], []
        for query, terms in zip(queries, terms_of, strict=False):
            exact = cache[" ".join(query)]
            found = sidecar.top(terms, n)
            inside.append(share(found, exact))
            leg.append(share([i for i, _ in rescore(store, ws, ctx, terms, found, LIMIT)], exact))
        print(f"top {n}: exact top-40 inside tantivy's top N {statistics.mean(inside):.3f}; "
              f"re-scored leg's top 40 = exact top 40 {statistics.mean(leg):.3f}")  # fmt: skip


def freshness(index: Any, export_path: Path, rows: int) -> None:
    """1,000 documents (copies of exported bodies, new ids) added, committed, reloaded; then
    deleted by id, committed, reloaded."""
    with export_path.open() as lines:
        bodies = [next(lines).rstrip("\n").partition("\t")[2] for _ in range(1000)]
    writer = index.writer(heap_size=50_000_000, num_threads=1)
    new_ids = [f"fresh-{i}" for i in range(len(bodies))]
    t0 = time.perf_counter()
    for i, body in enumerate(bodies):
        writer.add_document(document(body, new_ids[i], rows + i))
    t1 = time.perf_counter()
    writer.commit()
    t2 = time.perf_counter()
    index.reload()
    t3 = time.perf_counter()
    docs = index.searcher().num_docs
    print(
        f"freshness: 1,000 adds {1000 * (t1 - t0):.0f} ms, commit {1000 * (t2 - t1):.0f} ms, "
        f"reload {1000 * (t3 - t2):.0f} ms ({docs} docs), load {os.getloadavg()[0]:.1f}"
    )
    t0 = time.perf_counter()
    for memory_id in new_ids:
        writer.delete_documents_by_term("id", memory_id)
    t1 = time.perf_counter()
    writer.commit()
    t2 = time.perf_counter()
    index.reload()
    t3 = time.perf_counter()
    docs = index.searcher().num_docs
    print(
        f"freshness: 1,000 deletes by id {1000 * (t1 - t0):.0f} ms, commit "
        f"{1000 * (t2 - t1):.0f} ms, reload {1000 * (t3 - t2):.0f} ms ({docs} docs)"
    )
    t0 = time.perf_counter()
    writer.add_document(document(bodies[0], "single", rows))
    writer.commit()
    index.reload()
    print(f"freshness: one add + commit + reload {1000 * (time.perf_counter() - t0):.0f} ms")
    writer.wait_merging_threads()


if __name__ == "__main__":
    sys.exit(main())
