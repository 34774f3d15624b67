"""The harness's quality figures do not depend on how fast the machine writes, nor on the ids
memories happen to draw (``kioku.benchmark.reproducible``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import kioku.benchmark.ingest as ingest
import kioku.clock
from kioku.benchmark.data import Doc
from kioku.benchmark.reproducible import IMPORT_TIME, UnsettledStore, require_settled, seeded_ids
from kioku.benchmark.run import run_suite
from kioku.embeddings.fake import FakeEmbedder

FACT = (
    "The staging database of the billing service listens on port {} behind the shared load "
    "balancer in the Tokyo region, with nightly backups kept for thirty days."
)
BACKGROUND = [
    "Alice prefers green tea over coffee and brings her own cup to the office.",
    "The guest Wi-Fi password changes on the first Monday of every month.",
    "CI runs on GitHub Actions and the merge queue needs the whole matrix green.",
]


def _data(root: Path) -> Path:
    """A JSQuAD-shaped corpus: two versions of one fact, written one after the other, and a
    question naming the older one's port (its gold); plus a one-turn LoCoMo conversation."""
    paragraphs = [{"context": text, "qas": []} for text in BACKGROUND]
    paragraphs.append(
        {"context": FACT.format("5433"), "qas": [{"id": "q-old", "question": (
            "Does the staging database of the billing service listen on port 5433?")}]}
    )  # fmt: skip
    paragraphs.append({"context": FACT.format("6543"), "qas": []})
    (root / "jsquad").mkdir(parents=True)
    (root / "jsquad" / "valid-v1.3.json").write_text(
        json.dumps({"data": [{"title": "ops", "paragraphs": paragraphs}]})
    )
    turn = {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat last week."}
    qa = [{"question": "Who adopted a cat?", "evidence": ["D1:1"], "category": 4}]
    (root / "locomo").mkdir()
    (root / "locomo" / "conv-1.json").write_text(
        json.dumps({"session_1": [turn], "session_1_date_time": "1 May, 2023", "qa": qa})
    )
    return root


class _SlowMachine(datetime):
    """``datetime`` whose ``now`` moves 2 s at every reading: each batch of a write lands
    seconds after the one before, as on a loaded machine."""

    readings = 0

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        cls.readings += 1
        return datetime(2026, 12, 4, 12, 0, tzinfo=UTC) + timedelta(seconds=2 * cls.readings)


def _metrics(results: dict[str, Any]) -> dict[str, Any]:
    return {
        corpus: {arm: run["metrics"] for arm, run in results[corpus]["arms"].items()}
        for corpus in ("locomo", "jsquad")
    }


def test_quality_figures_are_the_same_on_a_slow_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _data(tmp_path / "data")
    monkeypatch.setattr(ingest, "BATCH", 1)  # one clock reading per memory
    fast = run_suite(data, embedder=FakeEmbedder(), workdir=tmp_path / "fast", progress=False)
    with monkeypatch.context() as patch:
        patch.setattr(kioku.clock, "datetime", _SlowMachine)
        slow = run_suite(data, embedder=FakeEmbedder(), workdir=tmp_path / "slow", progress=False)
    assert _SlowMachine.readings > 0  # the slow clock was on while the second run wrote
    # Written seconds apart, the two versions of the fact would be told apart by the
    # newer-fact-first stage, which would move the newer one above the gold.
    assert _metrics(slow) == _metrics(fast)
    assert fast["jsquad"]["arms"]["bm25"]["metrics"]["all"]["recall@1"] == 1.0


def test_seeded_ids_repeat_and_look_like_uuid4() -> None:
    first, second = seeded_ids(), seeded_ids()
    ids = [first() for _ in range(1000)]
    assert ids == [second() for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert all(len(memory_id) == 36 and memory_id[14] == "4" for memory_id in ids)
    assert seeded_ids(1)() != ids[0]


def test_benchmark_memories_are_named_and_stamped_alike_on_every_run(tmp_path: Path) -> None:
    from kioku.benchmark.run import _open

    def write(label: str) -> list[tuple[str, datetime]]:
        runtime = _open(f"sqlite:///{tmp_path / label}.db", None, reproducible=True)
        try:
            principal = runtime.local_principal("import")
            ingest.ensure_context(runtime, principal, "c")
            docs = [Doc(f"k{i}", f"memory number {i}", f"test:{i}") for i in range(150)]
            keys, _ = ingest.remember_docs(runtime, principal, "c", docs)
            rows = runtime.store.get_memories(principal.workspace_id, list(keys))
            return sorted((row.id, row.created_at) for row in rows.values())
        finally:
            runtime.close()

    first = write("one")
    assert first == write("two")
    stamps = sorted(stamp for _, stamp in first)
    assert stamps[0] == IMPORT_TIME and stamps[-1] - stamps[0] < timedelta(seconds=1)


def test_a_memory_without_its_vector_stops_the_measurement(tmp_path: Path) -> None:
    from kioku.benchmark.run import _open

    runtime = _open(f"sqlite:///{tmp_path / 'b'}.db", FakeEmbedder(), reproducible=True)
    try:
        principal = runtime.local_principal("import")
        ingest.ensure_context(runtime, principal, "c")
        ingest.ensure_context(runtime, principal, "d")
        docs = [Doc(f"k{i}", f"memory number {i}", f"test:{i}") for i in range(3)]
        keys, _ = ingest.remember_docs(runtime, principal, "c", docs)
        with pytest.raises(UnsettledStore, match="pending"):
            require_settled(runtime, principal, ["c"])
        # As the drain does with a memory over its wall-clock budget on a loaded machine.
        runtime.store.mark_embedding_failed(principal.workspace_id, list(keys)[:1])
        ingest.drain_embeddings(runtime)
        with pytest.raises(UnsettledStore, match="failed"):
            require_settled(runtime, principal, ["c"])
        require_settled(runtime, principal, ["d"])  # a context with nothing in it is settled
    finally:
        runtime.close()
