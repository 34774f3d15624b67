"""kill -9 a real ``kioku serve`` mid-write and mid-Sleep, restart it, check what is left.

SQLite file, bundled model, the embedding worker running: the hardest case for the rebuildable
vector index and the database-backed embedding queue. Nothing acknowledged may be lost, an
atomic batch is all or nothing, the lexical index agrees with the table, every memory gets its
vector after the restart, and a Sleep run cut short rolls back to a byte-identical export.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from kioku import Client
from tests.e2e.conftest import free_port, kioku_env

pytestmark = pytest.mark.e2e

BATCH = 100
FILLER = "The harbour crane moved containers all night while the tide came in. " * 3
ENV = {"KIOKU_EMBED_LEASE_SECONDS": "5", "KIOKU_SLEEP_STALE_SECONDS": "2"}


@contextmanager
def serving(data: Path, log_name: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``kioku serve --dev`` on ``data``; yields the process (to kill) and its URL."""
    port = free_port()
    with (data / log_name).open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "kioku.cli", "serve", "--dev", "--port", str(port)],
            env={**kioku_env(data), **ENV},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120
            while True:
                assert process.poll() is None, (data / log_name).read_text()
                try:
                    if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.2)
            yield process, base
        finally:
            if process.poll() is None:
                process.terminate()
                process.wait(timeout=30)


def kill_9(process: subprocess.Popen[bytes]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def wait_for_embeddings(client: Client, total: int) -> dict[str, int]:
    """Until ``total`` are ready, or two minutes pass without one more (a stuck queue)."""
    ready, progress = -1, time.monotonic()
    while True:
        embeddings = client.stats("default").embeddings
        if embeddings.get("ready", 0) > ready:
            ready, progress = embeddings.get("ready", 0), time.monotonic()
        if ready >= total or time.monotonic() - progress > 120:
            return embeddings
        time.sleep(0.5)


def test_kill_9_during_remember_batch_loses_nothing_acknowledged_and_halves_nothing(
    tmp_path: Path,
) -> None:
    acknowledged: list[int] = []
    with serving(tmp_path, "first.log") as (process, base):
        stop = threading.Event()

        def write() -> None:
            with Client(base_url=base, timeout=60) as client:
                number = 0
                while not stop.is_set():
                    items = [
                        {"summary": f"crash batch b{number} item {i} marker zqb{number}i{i}",
                         "content": FILLER, "tags": [f"b{number}"]}
                        for i in range(BATCH)
                    ]  # fmt: skip
                    try:
                        client.remember_batch("default", items, atomic=True)
                    except Exception:  # the server died under this request
                        return
                    acknowledged.append(number)
                    number += 1

        writer = threading.Thread(target=write)
        writer.start()
        while len(acknowledged) < 4:  # let some land, and the embedder get going
            time.sleep(0.05)
        kill_9(process)
        stop.set()
        writer.join(timeout=60)

    with serving(tmp_path, "second.log") as (_, base), Client(base_url=base, timeout=60) as client:
        per_batch: Counter[str] = Counter()
        ids: list[str] = []
        cursor = None
        while True:
            page = client.list_memories("default", cursor=cursor, limit=200)
            for memory in page.items:
                per_batch.update(memory.tags)
                ids.append(memory.id)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert len(ids) == len(set(ids))
        # Every acknowledged batch is whole; the one cut short is whole or absent.
        assert all(per_batch[f"b{n}"] == BATCH for n in acknowledged), per_batch
        assert set(per_batch.values()) == {BATCH}, per_batch
        total = sum(per_batch.values())
        # The lexical index agrees with the table: a marker of each batch is the lexical leg's
        # first hit. (Not necessarily the fused first: a memory still waiting for its vector has
        # one leg, and a vector-only neighbour can tie it.)
        for tag in per_batch:
            number = tag[1:]
            hits = client.recall("default", f"zqb{number}i7", k=10).results
            lexical_first = [h.summary for h in hits if h.score_breakdown.lexical_rank == 1]
            assert lexical_first == [f"crash batch b{number} item 7 marker zqb{number}i7"], tag
        # The embedding queue survived the kill (leases of the dead worker run out) and the
        # vector index is rebuilt around the new vectors.
        assert wait_for_embeddings(client, total) == {"ready": total, "pending": 0, "failed": 0}
        found = client.recall("default", "cranes moving containers at night", k=3)
        assert "vector" in found.legs and found.results


def test_kill_9_during_sleep_leaves_a_consistent_store_that_rolls_back_exactly(
    tmp_path: Path,
) -> None:
    database = tmp_path / "kioku.db"
    with serving(tmp_path, "first.log") as (process, base):
        with Client(base_url=base, timeout=60) as client:
            # 150 pairs of exact copies: Sleep merges each pair in its own transaction.
            for start in range(0, 150, 50):
                items = [
                    {"summary": f"sleep fact {i}: the {i}th crate is blue", "tags": ["a"]}
                    for i in range(start, start + 50)
                ]
                client.remember_batch("default", items)
                client.remember_batch("default", [{**item, "tags": ["b"]} for item in items])
            assert wait_for_embeddings(client, 300)["ready"] == 300
        subprocess.run(  # the state to come back to, written by the CLI (the server is idle)
            [sys.executable, "-m", "kioku.cli", "export", "--out", str(tmp_path / "before.jsonl")],
            env=kioku_env(tmp_path), check=True, capture_output=True,
        )  # fmt: skip

        def run_sleep() -> None:
            with contextlib.suppress(httpx.TransportError):  # killed under it
                httpx.post(
                    f"{base}/api/v1/contexts/default/sleep", json={"mode": "full"}, timeout=120
                )

        sleeper = threading.Thread(target=run_sleep)
        sleeper.start()
        reader = sqlite3.connect(database, timeout=30)
        deadline = time.monotonic() + 120
        while True:  # kill once some merges have landed, before the run is over
            merged = reader.execute(
                "SELECT count(*) FROM sleep_actions WHERE kind = 'supersede'"
            ).fetchone()[0]
            if merged >= 10:
                break
            assert time.monotonic() < deadline, "Sleep never merged"
            time.sleep(0.01)
        kill_9(process)
        sleeper.join(timeout=60)

    # Consistent after the kill: each supersession is logged with it, no chains, no winner lost.
    superseded = dict(
        reader.execute(
            "SELECT id, superseded_by FROM memories WHERE superseded_by IS NOT NULL"
        ).fetchall()
    )
    logged = {
        row[0]
        for row in reader.execute("SELECT target FROM sleep_actions WHERE kind = 'supersede'")
    }
    run_id, status = reader.execute(
        "SELECT id, status FROM sleep_runs ORDER BY started_at DESC LIMIT 1"
    ).fetchone()
    reader.close()
    assert status == "running"  # nobody recorded the end: the process was gone
    assert set(superseded) == logged and 10 <= len(logged) < 150
    assert not set(superseded.values()) & set(superseded)

    time.sleep(2.5)  # past KIOKU_SLEEP_STALE_SECONDS: the run is abandoned
    with serving(tmp_path, "second.log") as (_, base), Client(base_url=base, timeout=60) as client:
        stats = client.stats("default")
        assert (stats.memories, stats.superseded) == (300 - len(logged), len(logged))
        undone = client.rollback_sleep(run_id)
        assert undone.run.status == "rolled_back" and undone.undone >= len(logged)
    subprocess.run(
        [sys.executable, "-m", "kioku.cli", "export", "--out", str(tmp_path / "after.jsonl")],
        env=kioku_env(tmp_path), check=True, capture_output=True,
    )  # fmt: skip
    assert (tmp_path / "after.jsonl").read_bytes() == (tmp_path / "before.jsonl").read_bytes()
