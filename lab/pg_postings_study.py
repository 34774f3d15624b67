"""Impact-ordered BM25 postings on PostgreSQL at a million memories: a measurement (issue 21).

Usage (from the worktree, the persistent 1M database of ``pg_lexical_tail.py``)::

    nice -n 10 .venv/bin/python lab/pg_postings_study.py build   [--dir /work/pg1m-lex2]
    nice -n 10 .venv/bin/python lab/pg_postings_study.py measure [--dir ...] [--limit 40]
        [--repeat 3] [--questions 400] [--seed-depth C] [--data ../shared/data]
    nice -n 10 .venv/bin/python lab/pg_postings_study.py oracle  [--dir ...] [--limit 40]
    nice -n 10 .venv/bin/python lab/pg_postings_study.py write-cost [--dir ...]
        [--memories 200000]
    nice -n 10 .venv/bin/python lab/pg_postings_study.py drop    [--dir ...]

``build`` adds a table ``lexical_postings_study`` to ``kioku_1m`` (one row per (memory,
lexeme) of the memories the default filter passes, live and not superseded: workspace_id,
context_id, lexeme, tf, dl, memory_id) and its btree (workspace_id, context_id, lexeme, tf,
dl, memory_id): each (term, tf) is a stream of postings in ascending length, i.e. best BM25
share first whatever avgdl is (``lab/lexical_impact.py``: no order key computed with a
nominal avgdl, whose order another avgdl breaks when tf differs), and an index-only range
scan reads a stream's best postings. It prints the time, the table and index sizes and the
rows per memory. ``drop`` removes it.

``measure`` asks the 400 seeded LoCoMo questions of ``pg_lexical_tail.py`` of today's
``lexical_search`` and of ``postings_search`` below, interleaved question by question
(``--repeat R``: each asked R times round-robin, the least time kept), and prints p50/p95/p99
of both, the share of exact BM25's top-10 slots each fills with the same memories and the
number of questions whose top 10 is identical, in order (exact BM25 from the cache
``DIR/exact-1000000-400.json``), the postings read per question (median, p95), the memory
rows scored exactly, the candidates, and the round trips.

``oracle`` runs ``postings_search`` twice per question, the second time with theta set to
the true k-th score: the postings read and rows scored that a perfect seed would leave
(counts, not timed).

``postings_search`` (exact BM25, ties by id, for any filter; three or four round trips):

1. the statistics (N, avgdl, df, max_tf: ``lexical_corpus``);
2. the seed: the rarest terms' postings in full while they fit ``SEED_POSTINGS``, the ``C``
   shortest of every other (term, tf) stream, summed per memory; the best ``S`` of those sums
   are scored exactly on their memory rows (the filter applied): the k-th score among them,
   theta, is one that k memories passing the filter reach;
3. the split: a share tau_t per term with sum(tau_t) < theta, chosen to read the fewest
   postings (a Lagrangian over the scope's length histogram: each term reads its streams'
   lengths below ``length_floor(tau_t)``, everything, or nothing when tau_t is its largest
   share), so every memory scoring theta or more holds a term above its tau_t and is among
   the postings read. One statement reads them (index-only range scans), sums each memory's
   shares (``partial``) and bounds the rest (per term it was not read for: the least of the
   term's unread bound and its share at max_tf and the memory's own length), raises theta
   to the k-th partial sum when the postings hold only what the default filter passes,
   keeps the memories whose bound reaches theta (the candidates), scores the best
   ``FIRST_SCORED`` x k bounds exactly on their memory rows (the same expression as today's
   scoring statement, so scores are bitwise today's) and returns, unscored, the candidates
   whose bound still reaches the k-th score found;
4. only if some were returned: those scored on their rows. The top k is exact BM25's.

``write-cost`` creates a scratch database ``kioku_postings_scratch`` on the same server,
fills one context through ``store.insert_memories`` in chunks of 5,000 synthetic memories,
alternating chunks with and without a statement-level trigger (transition tables, as
migration 0013's) that keeps the postings, and prints both rates; the scratch database is
dropped at the end. The 1M database is not written.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, LiteralString

import numpy as np
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lexical_impact import length_floor, unread_bound
from pg_lexical_plans import _context, _memory
from pg_lexical_tail import (
    CONTEXT,
    WORKSPACE,
    K,
    open_filled,
    persistent_server,
    today_search,
)

from kioku.benchmark.data import load_locomo
from kioku.benchmark.metrics import latency_summary
from kioku.benchmark.scale import SyntheticText
from kioku.search.tokenize import tokenize
from kioku.storage.bm25_constants import K1, B
from kioku.storage.lexical_cutoff import term_bound
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres.codec import lexeme
from kioku.storage.postgres.filters import filter_sql
from kioku.storage.postgres.lexical_scoring import EXACT_SCORE, top_scored
from kioku.storage.postgres.lexical_stats import lexical_corpus
from kioku.storage.postgres.search import LEXICAL_SETTINGS, idf
from kioku.storage.records import MemoryFilter, ScoredId

TABLE = "lexical_postings_study"
SEED_DEPTH = 40
"""C: postings read per (term, tf) stream by the seed."""
SEED_SCORED = 2
"""S = this x limit: memories the seed scores exactly (best partial sums first)."""
SEED_POSTINGS = 2000
"""The seed reads the rarest terms' postings in full up to this many in all."""
FIRST_SCORED = 4
"""The final statement scores this x limit memories exactly, best bounds first."""
MAX_LENGTH = 2**31 - 1
SCRATCH = "kioku_postings_scratch"

BUILD: list[LiteralString] = [
    f"DROP TABLE IF EXISTS {TABLE}",
    f"CREATE TABLE {TABLE} (workspace_id text NOT NULL, context_id text NOT NULL, "
    "lexeme text NOT NULL, tf smallint NOT NULL, dl integer NOT NULL, memory_id text NOT NULL)",
    f"INSERT INTO {TABLE} SELECT m.workspace_id, m.context_id, u.lexeme, "
    "greatest(cardinality(u.positions), 1), m.lexical_length, m.id "
    "FROM memories m, unnest(m.lexical_tokens) u "
    "WHERE m.deleted_at IS NULL AND m.superseded_by IS NULL",
    f"CREATE INDEX {TABLE}_order ON {TABLE} "
    '(workspace_id, context_id, lexeme, tf, dl, memory_id COLLATE "C")',
    f"VACUUM ANALYZE {TABLE}",
]
"""The postings of the memories the default filter passes (live, not superseded)."""

_SHARE_SQL: LiteralString = "s.wt * s.tf * %s / (s.tf + %s * (1 - %s + %s * q.dl / %s))"

_SEED: LiteralString = (
    "WITH w AS (SELECT %s::text[] AS terms, %s::float8[] AS idf), "
    "s AS (SELECT * FROM unnest(%s::text[], %s::int[], %s::float8[], %s::int[]) "
    "AS s(term, tf, wt, depth)), "
    "p AS MATERIALIZED (SELECT q.memory_id, " + _SHARE_SQL + " AS share FROM s CROSS JOIN "
    f"LATERAL (SELECT p.dl, p.memory_id FROM {TABLE} p WHERE p.workspace_id = %s "
    "AND p.context_id = %s AND p.lexeme = s.term AND p.tf = s.tf "
    'ORDER BY p.dl, p.memory_id COLLATE "C" LIMIT s.depth) q), '
    "a AS (SELECT memory_id, sum(share) AS partial FROM p GROUP BY memory_id "
    'ORDER BY partial DESC, memory_id COLLATE "C" LIMIT %s) '
    "SELECT m.id, " + EXACT_SCORE + " AS score, (SELECT count(*) FROM p) AS read "
    "FROM a JOIN memories m ON m.workspace_id = %s AND m.id = a.memory_id, w "
    "WHERE {where} "
    'ORDER BY score DESC, m.id COLLATE "C" LIMIT %s'
)

_FINAL: LiteralString = (
    "WITH w AS (SELECT %s::text[] AS terms, %s::float8[] AS idf), "
    "s AS (SELECT * FROM unnest(%s::text[], %s::int[], %s::float8[], %s::int[], %s::float8[], "
    "%s::int[]) AS s(term, tf, wt, d, tau, mtf)), "
    "p AS MATERIALIZED (SELECT q.memory_id, q.dl, " + _SHARE_SQL + " AS share, "
    "least(s.tau, s.wt * s.mtf * %s / (s.mtf + %s * (1 - %s + %s * q.dl / %s))) AS r FROM s "
    f"CROSS JOIN LATERAL (SELECT p.dl, p.memory_id FROM {TABLE} p WHERE p.workspace_id = %s "
    "AND p.context_id = %s AND p.lexeme = s.term AND p.tf = s.tf AND p.dl < s.d) q), "
    "a AS MATERIALIZED (SELECT memory_id, sum(share) AS partial, "
    "(%s::float8[])[least(max(dl), %s) + 1] - sum(r) AS rest FROM p GROUP BY memory_id), "
    "t AS (SELECT greatest(%s, CASE WHEN %s THEN coalesce((SELECT partial FROM a "
    "ORDER BY partial DESC OFFSET %s LIMIT 1), 0) ELSE 0 END) * (1 - 1e-9) AS theta), "
    "c AS MATERIALIZED (SELECT a.memory_id, a.partial + a.rest AS ub FROM a, t "
    "WHERE a.partial + a.rest >= t.theta), "
    'top AS MATERIALIZED (SELECT memory_id FROM c ORDER BY ub DESC, memory_id COLLATE "C" '
    "LIMIT %s), "
    "e AS MATERIALIZED (SELECT m.id, " + EXACT_SCORE + " AS score FROM top "
    "JOIN memories m ON m.workspace_id = %s AND m.id = top.memory_id, w WHERE {where}), "
    "k AS (SELECT coalesce((SELECT score FROM e ORDER BY score DESC OFFSET %s LIMIT 1), 0) "
    "* (1 - 1e-9) AS kth), "
    "n AS (SELECT (SELECT count(*) FROM p) AS read, (SELECT count(*) FROM c) AS candidates) "
    "SELECT e.id, e.score, NULL::float8 AS ub, n.* FROM e, n "
    "UNION ALL SELECT c.memory_id, NULL, c.ub, n.* FROM c, k, n WHERE c.ub >= k.kth "
    "AND c.memory_id NOT IN (SELECT memory_id FROM top)"
)

_SCORE_IDS: LiteralString = (
    "WITH w AS (SELECT %s::text[] AS terms, %s::float8[] AS idf) "
    "SELECT m.id, " + EXACT_SCORE + " AS score FROM memories m, w "
    "WHERE m.workspace_id = %s AND m.id = ANY(%s::text[]) AND {where}"
)


@dataclass
class Trace:
    """What one ``postings_search`` did."""

    read: int = 0
    visited: int = 0
    candidates: int = 0
    round_trips: int = 0
    theta0: float = 0.0
    notes: list[str] = field(default_factory=list)


class LengthHistogram:
    """The share of a scope's postings below each length (the split's cost model)."""

    def __init__(self, counts: dict[int, int]) -> None:
        top = max(counts) + 2 if counts else 2
        below = np.zeros(top + 1)
        for length, count in counts.items():
            below[length + 1 :] += count
        self.below = below / max(below[-1], 1)

    def share_below(self, length: np.ndarray) -> np.ndarray:
        return self.below[np.clip(length, 0, len(self.below) - 1)]

    @classmethod
    def of_scope(cls, conn: Any, ws: str, ctx: str) -> LengthHistogram:
        rows = conn.execute(
            f"SELECT dl, count(*) AS n FROM {TABLE} TABLESAMPLE SYSTEM (2) "
            "WHERE workspace_id = %s AND context_id = %s GROUP BY dl",
            (ws, ctx),
        ).fetchall()
        return cls({int(r["dl"]): int(r["n"]) for r in rows})


def split(
    weights: list[float],
    dfs: list[int],
    bounds: list[float],
    avgdl: float,
    theta: float,
    histogram: LengthHistogram,
) -> list[float]:
    """tau_t per term with sum(tau_t) < theta, the estimated postings read (df_t x the share
    of postings shorter than the tf-1 length floor) least: a Lagrangian (each term picks the
    length minimising cost + lambda x tau, lambda bisected until the taus fit)."""
    lengths = np.arange(len(histogram.below) + 1)
    rows = []
    for weight, df, bound in zip(weights, dfs, bounds, strict=True):
        taus = np.minimum(weight * (K1 + 1) / (1 + K1 * (1 - B + B * lengths / avgdl)), bound)
        taus = np.append(taus, [bound, 0.0])  # read nothing, read everything
        costs = np.append(df * histogram.share_below(lengths), [0.0, float(df)])
        rows.append((taus, costs))
    budget = theta * (1 - 1e-6)
    if sum(bound for bound in bounds) < budget:
        return list(bounds)

    def pick(lam: float) -> list[float]:
        return [float(taus[np.argmin(costs + lam * taus)]) for taus, costs in rows]

    low, high = 0.0, 1.0
    while sum(pick(high)) >= budget and high < 1e12:
        high *= 4
    if sum(pick(high)) >= budget:
        return [0.0] * len(weights)  # read everything
    for _ in range(40):
        mid = (low + high) / 2
        if sum(pick(mid)) >= budget:
            low = mid
        else:
            high = mid
    return pick(high)


def postings_search(
    store: PostgresStore,
    ws: str,
    ctxs: list[str],
    tokens: list[str],
    limit: int,
    histogram: LengthHistogram,
    flt: MemoryFilter | None = None,
    seed_depth: int = SEED_DEPTH,
    trace: Trace | None = None,
    theta_hint: float | None = None,
) -> list[ScoredId]:
    """Exact BM25's top ``limit`` (ties by id) from the postings table (see the module doc).
    One context only (the postings are ordered per context)."""
    flt = flt or MemoryFilter()
    trace = trace if trace is not None else Trace()
    terms = sorted({lexeme(token) for token in tokens if token})
    if not terms or len(ctxs) != 1 or limit <= 0 or flt.include_deleted:
        raise ValueError("the study serves one context, live memories")
    where, where_params = filter_sql(ws, ctxs, flt)
    with store.db.transaction(ws, settings=LEXICAL_SETTINGS) as conn:
        corpus = lexical_corpus(conn, ws, ctxs, terms)
        trace.round_trips += 1
        n, avgdl = max(corpus.n, 1), corpus.avgdl if corpus.avgdl > 0 else 1.0
        weights = [idf(n, min(max(corpus.dfs[t], 1), n)) for t in terms]
        held = [i for i, t in enumerate(terms) if corpus.max_tf[t] > 0]
        if not held:
            return []
        exact_params = [K1 + 1, K1, B, B, avgdl]
        share_params = [K1 + 1, K1, B, B, avgdl]
        streams = [(terms[i], tf, weights[i]) for i in held
                   for tf in range(1, corpus.max_tf[terms[i]] + 1)]  # fmt: skip
        # The rarest terms' postings in full while they fit SEED_POSTINGS (memories holding
        # two of them score high), the C shortest of every other stream.
        depth_of: dict[str, int] = {}
        budget = SEED_POSTINGS
        for i in sorted(held, key=lambda i: (corpus.dfs[terms[i]], terms[i])):
            take = min(corpus.dfs[terms[i]], budget)
            depth_of[terms[i]] = max(take, seed_depth)
            budget -= take
        seed_sql = _SEED.replace("{where}", where)
        depths = [depth_of[s[0]] for s in streams]
        rows = conn.execute(
            seed_sql,
            (
                terms, weights, [s[0] for s in streams], [s[1] for s in streams],
                [s[2] for s in streams], depths, *share_params, ws, ctxs[0],
                SEED_SCORED * limit, *exact_params, ws, *where_params, limit,
            ),
        ).fetchall()  # fmt: skip
        trace.round_trips += 1
        trace.read += int(rows[0]["read"]) if rows else 0
        trace.visited += SEED_SCORED * limit
        theta = float(rows[-1]["score"]) if len(rows) >= limit else 0.0
        if theta_hint is not None:  # an experiment: the true k-th score
            theta = theta_hint
        trace.theta0 = theta
        bounds = [
            min(term_bound(weights[i], corpus.max_tf[terms[i]],
                           corpus.min_length_per_tf[terms[i]], avgdl, K1, B) * (1 + 1e-9),
                weights[i] * (K1 + 1))
            for i in held
        ]  # fmt: skip
        taus = split([weights[i] for i in held], [corpus.dfs[terms[i]] for i in held], bounds,
                     avgdl, theta, histogram)  # fmt: skip
        final: list[tuple[str, int, float, int, float, int]] = []
        total = 0.0
        longest = len(histogram.below)
        lengths = np.arange(longest + 1)
        rest_by_length = np.zeros(longest + 1)
        for i, tau, bound in zip(held, taus, bounds, strict=True):
            floors = [length_floor(weights[i], tf, avgdl, tau)
                      for tf in range(1, corpus.max_tf[terms[i]] + 1)]  # fmt: skip
            unread = min(bound, max(unread_bound(weights[i], tf, avgdl, floor)
                                    for tf, floor in enumerate(floors, start=1)))  # fmt: skip
            if tau >= bound:
                unread = bound  # nothing read of this term
            total += unread
            top_tf = corpus.max_tf[terms[i]]
            at_length = (
                weights[i] * top_tf * (K1 + 1) / (top_tf + K1 * (1 - B + B * lengths / avgdl))
            )
            rest_by_length += np.minimum(unread, at_length * (1 + 1e-9))
            for tf, floor in enumerate(floors, start=1):
                if floor > 0 and tau < bound:
                    final.append((terms[i], tf, weights[i], floor, unread, top_tf))
        if theta > 0 and total >= theta * (1 - 1e-9):
            trace.notes.append("split above theta")  # rounding: read everything instead
        if theta <= 0 or total >= theta * (1 - 1e-9):
            final = [(terms[i], tf, weights[i], MAX_LENGTH, 0.0, corpus.max_tf[terms[i]])
                     for i in held for tf in range(1, corpus.max_tf[terms[i]] + 1)]  # fmt: skip
            total = 0.0
            rest_by_length[:] = 0.0
        final_sql = _FINAL.replace("{where}", where)
        trust_partials = not flt.is_narrowing
        first = FIRST_SCORED * limit
        rows = conn.execute(
            final_sql,
            (
                terms, weights, [f[0] for f in final], [f[1] for f in final],
                [f[2] for f in final], [f[3] for f in final], [f[4] for f in final],
                [f[5] for f in final], *share_params, *share_params, ws, ctxs[0],
                rest_by_length.tolist(), longest, theta, trust_partials, limit - 1, first,
                *exact_params, ws, *where_params, limit - 1,
            ),
        ).fetchall()  # fmt: skip
        trace.round_trips += 1
        if not rows:
            return []
        trace.read += int(rows[0]["read"])
        trace.candidates = int(rows[0]["candidates"])
        scored = {row["id"]: float(row["score"]) for row in rows if row["score"] is not None}
        trace.visited += min(first, trace.candidates)
        pending = [row["id"] for row in rows if row["score"] is None]
        if pending:  # the best bounds did not settle it: score every memory still in reach
            more = conn.execute(
                _SCORE_IDS.replace("{where}", where),
                (terms, weights, *exact_params, ws, pending, *where_params),
            ).fetchall()
            trace.round_trips += 1
            trace.visited += len(pending)
            scored |= {row["id"]: float(row["score"]) for row in more}
    return [ScoredId(memory_id, score) for memory_id, score in top_scored(scored, limit)]


def build(url: str) -> None:
    """The postings table and its index on ``kioku_1m`` (timed; sizes printed)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '2GB'")
        conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
        for statement in BUILD:
            began = time.perf_counter()
            conn.execute(statement)
            print(f"{time.perf_counter() - began:7.1f} s  {statement[:70]}", flush=True)
        row = conn.execute(
            f"SELECT pg_relation_size('{TABLE}') AS heap, "
            f"pg_relation_size('{TABLE}_order') AS idx, (SELECT count(*) FROM {TABLE}) AS rows, "
            "(SELECT count(*) FROM memories WHERE deleted_at IS NULL) AS memories"
        ).fetchone()
        assert row is not None
        print(f"table {row[0] / 2**20:.0f} MiB, index {row[1] / 2**20:.0f} MiB, {row[2]} rows, "
              f"{row[2] / max(row[3], 1):.2f} rows per memory")  # fmt: skip


def measure(store: PostgresStore, ws: str, ctx: str, args: argparse.Namespace) -> None:
    """Both legs on the questions, interleaved (see the module doc)."""
    corpora = load_locomo(args.data / "locomo")
    questions = [(c, q.text) for c, corpus in enumerate(corpora) for q in corpus.questions]
    picked = np.random.default_rng(7).choice(len(questions), size=args.questions, replace=False)
    queries = [tokenize(questions[i][1]) for i in picked]
    dev = [questions[i][0] < len(corpora) // 2 for i in picked]
    cache = json.loads((args.dir / f"exact-1000000-{args.questions}.json").read_text())
    with store.db.transaction(ws) as conn:
        histogram = LengthHistogram.of_scope(conn, ws, ctx)
    traces: list[Trace] = []

    def postings(query: list[str]) -> list[ScoredId]:
        trace = Trace()
        traces.append(trace)
        return postings_search(store, ws, [ctx], query, args.limit, histogram,
                               seed_depth=args.seed_depth, trace=trace)  # fmt: skip

    def today(query: list[str]) -> list[ScoredId]:
        return today_search(store, ws, [ctx], query, args.limit)

    variants = {"today (GIN + heap rows)": today, "impact-ordered postings": postings}
    for run in variants.values():  # warm-up
        for query in queries[:10]:
            run(query)
    traces.clear()
    times: dict[str, list[float]] = {name: [] for name in variants}
    equal: dict[str, list[tuple[float, bool, bool]]] = {name: [] for name in variants}
    per_question: list[Trace] = []
    loads = [os.getloadavg()[0]]
    for i, (query, is_dev) in enumerate(zip(queries, dev, strict=True)):
        exact = cache[" ".join(query)]
        order = list(variants.items()) if i % 2 == 0 else list(variants.items())[::-1]
        best: dict[str, float] = {}
        ids: dict[str, list[str]] = {}
        for _ in range(args.repeat):
            for name, run in order:
                began = time.perf_counter()
                ids[name] = [hit.memory_id for hit in run(query)][:K]
                elapsed = (time.perf_counter() - began) * 1000
                best[name] = min(best.get(name, elapsed), elapsed)
        per_question.append(traces[-1])
        for name in variants:
            times[name].append(best[name])
            if exact:
                share_equal = len(set(ids[name]) & set(exact)) / len(exact)
                equal[name].append((share_equal, ids[name] == exact, is_dev))
        if i % 50 == 49:
            loads.append(os.getloadavg()[0])
            print(f"  {i + 1} questions, load {loads[-1]:.1f}", flush=True)
    print(f"limit {args.limit}, repeat {args.repeat}, {len(queries)} questions; load (1-min) "
          f"during: {min(loads):.1f}-{max(loads):.1f}, at end {os.getloadavg()}")  # fmt: skip
    print(
        "| lexical leg | p50 ms | p95 ms | p99 ms | top-10 slots equal to exact BM25 "
        "(all / dev / held-out) | questions with an identical top 10 |"
    )
    print("|---|---|---|---|---|---|")
    for name in variants:
        lat = latency_summary(times[name])
        values = equal[name]
        mean_all = statistics.mean(v for v, _, _ in values)
        mean_dev = statistics.mean(v for v, _, d in values if d)
        mean_held = statistics.mean(v for v, _, d in values if not d)
        same = sum(1 for _, s, _ in values if s)
        print(
            f"| {name} | {lat['p50']:.1f} | {lat['p95']:.1f} | {lat['p99']:.1f} | "
            f"{mean_all:.3f} / {mean_dev:.3f} / {mean_held:.3f} | {same} of {len(values)} |"
        )
    for label, values in (
        ("postings read", [t.read for t in per_question]),
        ("memory rows scored", [t.visited for t in per_question]),
        ("candidates (bound reaches theta)", [t.candidates for t in per_question]),
        ("round trips", [t.round_trips for t in per_question]),
    ):
        array = np.array(values)
        print(f"{label}: median {np.median(array):.0f}, p95 {np.percentile(array, 95):.0f}, "
              f"max {array.max()}")  # fmt: skip
    notes = [note for t in per_question for note in t.notes]
    if notes:
        print(f"notes: {notes}")


_LIVE: LiteralString = "deleted_at IS NULL AND superseded_by IS NULL"
_POSTINGS_OF: LiteralString = (
    "SELECT r.workspace_id, r.context_id, u.lexeme, "
    "greatest(cardinality(u.positions), 1)::smallint AS tf, r.lexical_length AS dl, r.id "
    "FROM {rows} r, unnest(r.lexical_tokens) u WHERE r.deleted_at IS NULL "
    "AND r.superseded_by IS NULL"
)
_CHANGED: LiteralString = (
    "o.lexical_tokens IS DISTINCT FROM n.lexical_tokens "
    "OR o.lexical_length IS DISTINCT FROM n.lexical_length "
    "OR (o.deleted_at IS NULL) <> (n.deleted_at IS NULL) "
    "OR (o.superseded_by IS NULL) <> (n.superseded_by IS NULL) "
    "OR o.context_id IS DISTINCT FROM n.context_id"
)
TRIGGER: list[LiteralString] = [
    "CREATE FUNCTION memories_postings_study() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    "IF TG_OP = 'INSERT' THEN "
    f"  INSERT INTO {TABLE} " + _POSTINGS_OF.replace("{rows}", "new_rows") + "; "
    "ELSIF TG_OP = 'DELETE' THEN "
    f"  DELETE FROM {TABLE} p USING (" + _POSTINGS_OF.replace("{rows}", "old_rows") + ") d "
    "   WHERE p.workspace_id = d.workspace_id AND p.context_id = d.context_id "
    "     AND p.lexeme = d.lexeme AND p.tf = d.tf AND p.dl = d.dl AND p.memory_id = d.id; "
    "ELSE "
    f"  DELETE FROM {TABLE} p USING ("
    + _POSTINGS_OF.replace(
        "{rows}",
        f"(SELECT o.* FROM old_rows o JOIN new_rows n ON n.workspace_id = "
        f"o.workspace_id AND n.id = o.id WHERE {_CHANGED})",
    )
    + ") d "
    "   WHERE p.workspace_id = d.workspace_id AND p.context_id = d.context_id "
    "     AND p.lexeme = d.lexeme AND p.tf = d.tf AND p.dl = d.dl AND p.memory_id = d.id; "
    f"  INSERT INTO {TABLE} "
    + _POSTINGS_OF.replace(
        "{rows}",
        f"(SELECT n.* FROM old_rows o JOIN new_rows n ON n.workspace_id = "
        f"o.workspace_id AND n.id = o.id WHERE {_CHANGED})",
    )
    + "; "
    "END IF; RETURN NULL; END $$",
    "CREATE TRIGGER memories_postings_study_insert AFTER INSERT ON memories "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memories_postings_study()",
    "CREATE TRIGGER memories_postings_study_update AFTER UPDATE ON memories "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memories_postings_study()",
    "CREATE TRIGGER memories_postings_study_delete AFTER DELETE ON memories "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memories_postings_study()",
]
"""A scratch copy of what a migration would add: the postings kept by the writing statement
(transition tables, as migration 0013's statistics)."""


def write_cost(server: str, args: argparse.Namespace) -> None:
    """Fill rate through ``insert_memories`` with and without the postings trigger, chunks
    alternating, on a scratch database of the same server (dropped at the end)."""
    base = server.rsplit("/", 1)[0]
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(SCRATCH)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(SCRATCH)))
    url = f"{base}/{SCRATCH}"
    try:
        store = PostgresStore(url)
        with psycopg.connect(url, autocommit=True) as conn:
            for statement in BUILD[:2]:
                conn.execute(statement)
            conn.execute(BUILD[3])
            for statement in TRIGGER:
                conn.execute(statement)
        ws = store.ensure_workspace(WORKSPACE).id
        ctx = _context(store, ws, CONTEXT)
        real = [doc for corpus in load_locomo(args.data / "locomo") for doc in corpus.docs]
        generator = SyntheticText(real, seed=1)
        rates: dict[bool, list[float]] = {True: [], False: []}
        have = 0
        chunk = 5000
        while have < args.memories:
            with_trigger = (have // chunk) % 2 == 0
            with psycopg.connect(url, autocommit=True) as conn:
                state = "ENABLE" if with_trigger else "DISABLE"
                conn.execute(f"ALTER TABLE memories {state} TRIGGER memories_postings_study_insert")  # type: ignore[arg-type]
            rows = [_memory(ctx, text) for text in generator.texts(chunk)]
            began = time.perf_counter()
            store.insert_memories(ws, rows)
            rates[with_trigger].append(chunk / (time.perf_counter() - began))
            have += chunk
            if have % 50_000 == 0:
                print(f"  {have} memories, load {os.getloadavg()[0]:.1f}", flush=True)
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(f"SELECT count(*) FROM {TABLE}").fetchone()
        store.close()
        for flag, label in ((False, "without the postings trigger"),
                            (True, "with the postings trigger")):  # fmt: skip
            values = rates[flag]
            print(f"{label}: {statistics.median(values):.0f} memories/s median over "
                  f"{len(values)} chunks of {chunk} (min {min(values):.0f}, "
                  f"max {max(values):.0f}); harmonic mean "
                  f"{len(values) / sum(1 / v for v in values):.0f}/s")  # fmt: skip
        print(f"postings written by the trigger: {row[0] if row else 0}")
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(SCRATCH))
            )


def oracle(store: PostgresStore, ws: str, ctx: str, args: argparse.Namespace) -> None:
    """The work left when the seed's theta is the true k-th score (known from a first run):
    how much of the cost a better seed could remove (counts only, no timing)."""
    corpora = load_locomo(args.data / "locomo")
    questions = [q.text for corpus in corpora for q in corpus.questions]
    picked = np.random.default_rng(7).choice(len(questions), size=args.questions, replace=False)
    with store.db.transaction(ws) as conn:
        histogram = LengthHistogram.of_scope(conn, ws, ctx)
    counts: dict[str, list[int]] = {"seeded": [], "oracle": []}
    candidates: dict[str, list[int]] = {"seeded": [], "oracle": []}
    visited: dict[str, list[int]] = {"seeded": [], "oracle": []}
    for i in picked:
        query = tokenize(questions[i])
        first = Trace()
        found = postings_search(store, ws, [ctx], query, args.limit, histogram, trace=first)
        if len(found) < args.limit:
            continue
        second = Trace()
        again = postings_search(store, ws, [ctx], query, args.limit, histogram, trace=second,
                                theta_hint=found[-1].score * (1 - 1e-9))  # fmt: skip
        assert [h.memory_id for h in again] == [h.memory_id for h in found]
        for name, trace in (("seeded", first), ("oracle", second)):
            counts[name].append(trace.read)
            candidates[name].append(trace.candidates)
            visited[name].append(trace.visited)
    for name in counts:
        for label, values in (("postings read", counts[name]), ("candidates", candidates[name]),
                              ("memory rows scored", visited[name])):  # fmt: skip
            array = np.array(values)
            print(f"{name} theta, limit {args.limit}: {label} median {np.median(array):.0f}, "
                  f"p95 {np.percentile(array, 95):.0f} ({len(array)} questions)")  # fmt: skip


def drop(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
    print(f"{TABLE} dropped")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("action", choices=["build", "measure", "oracle", "write-cost", "drop"])
    parser.add_argument("--dir", type=Path, default=Path("/work/pg1m-lex2"))
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--seed-depth", type=int, default=SEED_DEPTH)
    parser.add_argument("--memories", type=int, default=100_000, help="write-cost: fill size")
    args = parser.parse_args()
    print(f"load at start: {os.getloadavg()}", flush=True)
    with persistent_server(args.dir) as server:
        url = server.rsplit("/", 1)[0] + "/kioku_1m"
        if args.action == "build":
            build(url)
        elif args.action == "drop":
            drop(url)
        elif args.action == "write-cost":
            write_cost(server, args)
        else:
            store, ws, ctx = open_filled(server, 1_000_000, args.data)
            try:
                if args.action == "oracle":
                    oracle(store, ws, ctx, args)
                else:
                    measure(store, ws, ctx, args)
            finally:
                store.close()
    print(f"load at end: {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
