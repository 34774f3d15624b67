"""A small context inside a large HNSW index: the PostgreSQL vector leg before and after the
small-scope route (issue 21), interleaved on one database.

Usage (from the checkout; the database built by ``lab/pg_scale_db.py``, whose ``side``
context is the small scope)::

    .venv/bin/python lab/pg_scale_db.py start DIR
    git show REV:src/kioku/storage/postgres/vector_leg.py > /tmp/before_leg.py
    nice -n 10 .venv/bin/python lab/pg_small_scope.py DIR /tmp/before_leg.py \\
        [--queries 60] [--data ../shared/data]

Asks Q LoCoMo questions (seeded sample, embedded by the bundled model) of the leg, depth 40 as
``recall`` asks at k = 10, in the ``side`` context alone and in the big context (``scale``, to
show the route leaves it on the walk). Per question, in turn: ``before`` (the leg's statement
from the given module file), ``read once`` (this checkout's statement with the route off:
``SMALL_SCOPE_MAX = 0``), ``after`` (this checkout), and in between ``before, exact`` (the
given module with ``EXACT_MAX`` raised past every scope: its exact search, each embedding
read twice, to compare with ``after``'s, read once). In ``side``, each variant's top 10 is compared
with the exact top 10 (numpy over the scope's vectors): recall@10. Contexts ``mixed`` and
``mixed10`` are measured too when the database has them (shares of ``scale``'s rows moved
to them: docs/benchmarks-postgres-scale.md).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from kioku.benchmark.data import load_locomo
from kioku.benchmark.meta import configured_embedder
from kioku.benchmark.metrics import latency_summary
from kioku.storage.postgres import vector_leg
from kioku.storage.postgres.codec import encode_vector
from kioku.storage.postgres.connection import PostgresDatabase

DEPTH = 40
K = 10
WARMUP = 10


def _module(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("before_leg", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _runner(db: PostgresDatabase, leg: Any, ws: str, ctx: str) -> Callable[[np.ndarray], list]:
    where = "m.workspace_id = %s AND m.context_id = ANY(%s) AND m.superseded_by IS NULL"
    params = [ws, [ctx]]

    def run(query: np.ndarray) -> list[tuple[str, float]]:
        statement = leg.vector_statement(where, int(query.shape[0]))
        arguments = leg.vector_parameters(ws, [ctx], params, encode_vector(query), DEPTH)
        with db.transaction(ws, settings=leg.hnsw_settings(DEPTH)) as conn:
            rows = conn.execute(statement, arguments).fetchall()
        rows.sort(key=lambda row: (row["distance"], row["id"].encode()))
        return [(row["id"], float(row["distance"])) for row in rows]

    return run


def _vectors(url: str, ctx: str) -> tuple[list[str], np.ndarray]:
    """The context's live vectors, normalised (the exact search's input)."""
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
        with conn.cursor(binary=True) as cur:
            cur.execute(
                "SELECT id, embedding FROM memories WHERE context_id = %s "
                "AND deleted_at IS NULL AND embedding_status = 'ready'",
                (ctx,),
            )
            fetched = cur.fetchall()
    vectors = np.stack([r[1].to_numpy() for r in fetched]).astype(np.float64)
    return [r[0] for r in fetched], vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("before", type=Path, help="the vector_leg.py to compare with")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    url = f"postgresql://postgres@127.0.0.1:{(args.dir / 'port').read_text().strip()}/kioku"
    load = [os.getloadavg()]
    embedder = configured_embedder()
    assert embedder is not None
    questions = [q.text for c in load_locomo(args.data / "locomo") for q in c.questions]
    picked = np.random.default_rng(21).permutation(len(questions))[: args.queries]
    queries = [np.asarray(embedder.embed_query(questions[int(i)]), np.float32) for i in picked]
    with psycopg.connect(url) as conn:
        register_vector(conn)
        conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
        row = conn.execute("SELECT id FROM workspaces ORDER BY created_at LIMIT 1").fetchone()
        assert row is not None
        ws = str(row[0])
        contexts = dict(conn.execute("SELECT name, id FROM contexts").fetchall())
        index_rows = conn.execute(
            "SELECT reltuples FROM pg_class WHERE relname = 'ix_memories_hnsw_384'"
        ).fetchone()
    scopes = [name for name in ("side", "mixed", "mixed10") if name in contexts]  # recall measured
    print(f"index rows (reltuples) {index_rows}", flush=True)
    db = PostgresDatabase(url)
    before = _module(args.before)
    before_exact = _module(args.before)
    setattr(before_exact, "EXACT_MAX", 10**9)  # noqa: B010 (its exact branch, every time)
    read_once = _module(Path(vector_leg.__file__))
    setattr(read_once, "SMALL_SCOPE_MAX", 0)  # noqa: B010 (a module loaded by path)
    for name in [*scopes, "scale"]:
        ctx = str(contexts[name])
        ids, vectors = _vectors(url, ctx) if name in scopes else ([], np.zeros((0, 1)))
        print(f"{name}: {len(ids)} rows", flush=True)
        variants = {
            "before": _runner(db, before, ws, ctx),
            **({"before, exact": _runner(db, before_exact, ws, ctx)} if ids else {}),
            "read once": _runner(db, read_once, ws, ctx),
            "after": _runner(db, vector_leg, ws, ctx),
        }
        for query in queries[:WARMUP]:
            for run in variants.values():
                run(query)
        times: dict[str, list[float]] = {v: [] for v in variants}
        exact_top: dict[str, int] = {v: 0 for v in variants}
        for query in queries:
            q = query.astype(np.float64) / np.linalg.norm(query)
            scores = vectors @ q if ids else np.zeros(0)
            exact = {ids[i] for i in np.argsort(-scores)[:K]} if ids else None
            for v, run in variants.items():
                t0 = time.perf_counter()
                hits = run(query)
                times[v].append((time.perf_counter() - t0) * 1000)
                if exact is not None:
                    exact_top[v] += len(exact & {h for h, _ in hits[:K]})
        for v in variants:
            lat = latency_summary(times[v])
            recall = exact_top[v] / (K * len(queries))
            same = f", recall@10 against exact {recall:.3f}" if ids else ""
            print(f"{name:22} {v:13} p50 {lat['p50']:.1f} p95 {lat['p95']:.1f} ms{same}",
                  flush=True)  # fmt: skip
    load.append(os.getloadavg())
    print(f"load {load}")
    db.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
