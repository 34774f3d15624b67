"""Round trips and prepared statements of the PostgreSQL vector leg, old against new.

Usage: ``nice -n 10 .venv/bin/python lab/pg_vector_round_trips.py [N] [--baseline REV]``
(default N = 20000 memories in one context, REV = 51d1658, the leg before issue 21's fold).
Starts a throwaway PostgreSQL, fills one context with N memories (random unit vectors, 384
dimensions: latency only), builds the HNSW index, then times ``vector_search`` (k = 40) of
the baseline revision's ``search.py`` (loaded from git) and of this checkout, interleaved
query by query, each with psycopg's prepared statements off (``prepare_threshold`` None), at
the default (prepared from the 5th run) and from the first run (0). Also counts the
statements and transactions each sends. Scope sizes: the whole context (HNSW) and a 2,000-row
slice of it by type (exact).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import psycopg

from kioku.benchmark.metrics import latency_summary
from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres.embeddings import create_vector_index
from kioku.storage.postgres.throwaway import postgres_server, scratch_database
from kioku.storage.records import ContextRow, MemoryFilter, NewMemory

T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUERIES = 200
K = 40
THRESHOLDS: tuple[int | None, ...] = (None, 5, 0)


def _baseline(rev: str) -> ModuleType:
    text = subprocess.run(
        ["git", "show", f"{rev}:src/kioku/storage/postgres/search.py"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    path = Path(tempfile.mkdtemp()) / "baseline_search.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("baseline_search", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _old_lane(old: ModuleType, store: PostgresStore) -> Any:
    """The baseline's search lane over ``store``'s pool."""
    lane = old.PostgresSearchLane.__new__(old.PostgresSearchLane)
    lane.db = store.db
    return lane


def _store(url: str, threshold: int | None) -> PostgresStore:
    store = PostgresStore(url)
    with store.db.pool.connection() as conn:  # sequential calls reuse this one connection
        conn.prepare_threshold = threshold
    return store


class _Counter:
    """Statements (Cursor.execute) and BEGINs sent, while installed."""

    def __init__(self) -> None:
        self.statements = 0
        self.begins = 0

    def install(self) -> Callable[[], None]:
        execute = psycopg.Cursor.execute
        start = psycopg.Connection._start_query  # counting BEGINs
        counter = self

        def counted_execute(cursor: Any, *args: Any, **kwargs: Any) -> Any:
            counter.statements += 1
            return execute(cursor, *args, **kwargs)

        def counted_start(conn: Any) -> Any:
            if not conn.autocommit and conn.pgconn.transaction_status == 0:
                counter.begins += 1
            return start(conn)

        psycopg.Cursor.execute = counted_execute  # type: ignore[method-assign]  # a probe
        psycopg.Connection._start_query = counted_start  # type: ignore[method-assign]  # a probe

        def uninstall() -> None:
            psycopg.Cursor.execute = execute  # type: ignore[method-assign]
            psycopg.Connection._start_query = start  # type: ignore[method-assign]

        return uninstall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("count", type=int, nargs="?", default=20_000)
    parser.add_argument("--baseline", default="51d1658")
    args = parser.parse_args()
    old = _baseline(args.baseline)
    rng = np.random.default_rng(0)
    print(f"load at start: {os.getloadavg()}", flush=True)
    with postgres_server() as server, scratch_database(server) as url:
        filler = PostgresStore(url)
        ws = filler.ensure_workspace("bench").id
        ctx = filler.insert_context(
            ws, ContextRow(str(uuid.uuid4()), ws, "c", "", "trusted", "edges_only", {},
                           None, None, T0, T0),
        ).id  # fmt: skip
        for start in range(0, args.count, 2000):
            rows = [
                NewMemory(
                    id=str(uuid.uuid4()),
                    context_id=ctx,
                    summary=f"m {i}",
                    content="",
                    type="slice" if i < 2000 else "note",
                    tags=[],
                    importance=0.5,
                    delivery_mode="on_recall",
                    trigger_from=None,
                    trigger_until=None,
                    source_type="api",
                    source_uri=None,
                    trust_tier="trusted",
                    lexical_tokens=f"m {i}",
                    created_at=T0,
                )
                for i in range(start, min(start + 2000, args.count))
            ]
            filler.insert_memories(ws, rows)
            vectors = rng.standard_normal((len(rows), 384)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            filler.store_embeddings(
                ws, ctx, "m", list(zip([r.id for r in rows], vectors, strict=True))
            )
        with psycopg.connect(url, autocommit=True) as conn:
            create_vector_index(conn, 384)
            conn.execute("VACUUM ANALYZE memories")
        filler.close()
        stores = {t: _store(url, t) for t in THRESHOLDS}
        queries = rng.standard_normal((QUERIES + 10, 384)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        scopes = {"whole context (HNSW)": MemoryFilter(), "2,000 rows (exact)": MemoryFilter(
            types=["slice"])}  # fmt: skip
        print("| scope | leg | prepared | statements | transactions | p50 ms | p95 ms |")
        print("|---|---|---|---|---|---|---|")
        for label, flt in scopes.items():
            legs: dict[tuple[str, int | None], Callable[[np.ndarray], Any]] = {}
            for t, store in stores.items():
                before = _old_lane(old, store)
                legs[("before", t)] = lambda q, b=before, f=flt: b.vector_search(ws, [ctx], q, f, K)
                legs[("after", t)] = lambda q, s=store, f=flt: s.vector_search(ws, [ctx], q, f, K)
            times: dict[tuple[str, int | None], list[float]] = {key: [] for key in legs}
            counts: dict[tuple[str, int | None], tuple[int, int]] = {}
            for i, query in enumerate(queries):
                for key, leg in legs.items():
                    counter = _Counter()
                    uninstall = counter.install() if i == 0 else (lambda: None)
                    began = time.perf_counter()
                    leg(query)
                    elapsed = (time.perf_counter() - began) * 1000
                    uninstall()
                    if i == 0:
                        counts[key] = (counter.statements, counter.begins)
                    if i >= 10:  # warm-up: past psycopg's 5th run, every statement prepared
                        times[key].append(elapsed)
            for key in legs:
                lat = latency_summary(times[key])
                prepared = {None: "off", 5: "from the 5th run", 0: "from the 1st run"}[key[1]]
                print(
                    f"| {label} | {key[0]} | {prepared} | {counts[key][0]} | {counts[key][1]} "
                    f"| {lat['p50']:.2f} | {lat['p95']:.2f} |",
                    flush=True,
                )
        for store in stores.values():
            store.close()
    print(f"load at end: {os.getloadavg()}")


if __name__ == "__main__":
    sys.exit(main())
