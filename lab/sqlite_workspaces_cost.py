"""What the number of workspaces costs on SQLite, where each has an FTS5 table of its own.

Usage: ``.venv/bin/python lab/sqlite_workspaces_cost.py [W ...]`` (default 1 100 1000),
from the checkout. For each W it fills a fresh file with W workspaces of 3 memories each (50
more in the first), then times, on a new connection, the first lexical query (SQLite reads
the whole schema then), later lexical queries, and ``purge_memory`` in the first workspace.
Figures are in docs/scaling.md.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.storage

from tests.storage.test_contract import new_context, new_memory

from kioku.storage.records import MemoryFilter
from kioku.storage.sqlite import SQLiteStore

LIVE = MemoryFilter()


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


def measure(workspaces: int, folder: Path) -> str:
    store = SQLiteStore(folder / "k.db")
    ws = ctx = ""
    for i in range(workspaces):
        workspace_id = store.ensure_workspace(f"w{i}").id
        context_id = new_context(store, workspace_id, "notes").id
        rows = [new_memory(context_id, "x", tokens="needle hay") for _ in range(3)]
        store.insert_memories(workspace_id, rows)
        ws, ctx = (ws, ctx) if ws else (workspace_id, context_id)
    extra = [new_memory(ctx, "x", tokens="needle hay") for _ in range(50)]
    store.insert_memories(ws, extra)
    store.close()
    store = SQLiteStore(folder / "k.db")
    try:
        start = time.perf_counter()
        store.lexical_search(ws, [ctx], ["needle"], LIVE, 5)
        first = _ms(start)
        queries, purges = [], []
        for _ in range(20):
            start = time.perf_counter()
            store.lexical_search(ws, [ctx], ["needle"], LIVE, 5)
            queries.append(_ms(start))
        for row in extra:
            start = time.perf_counter()
            store.purge_memory(ws, row.id)
            purges.append(_ms(start))
    finally:
        store.close()
    return (
        f"workspaces={workspaces}: new connection + first lexical query {first:.1f} ms; "
        f"lexical query p50 {statistics.median(queries):.2f} ms; "
        f"purge_memory p50 {statistics.median(purges):.2f} ms"
    )


if __name__ == "__main__":
    for count in [int(arg) for arg in sys.argv[1:]] or [1, 100, 1000]:
        with tempfile.TemporaryDirectory() as scratch:
            print(measure(count, Path(scratch)), flush=True)
