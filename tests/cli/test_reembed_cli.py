"""``kioku reembed`` when a server shares the embedding queue: the progress and the answer
count what anyone embedded, and the command waits for the memories another worker holds."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kioku.cli import app
from kioku.embeddings.fake import FakeEmbedder
from kioku.models import MemoryCreate
from kioku.runtime import open_runtime
from kioku.storage.sqlite import SQLiteStore
from tests.conftest import make_settings

runner = CliRunner()


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'kioku.db'}")
    # The command's own runtime embeds with the fake too (the real model is tested elsewhere).
    monkeypatch.setattr("kioku.runtime.make_embedder", lambda settings: FakeEmbedder())
    return tmp_path


def fill(tmp_path: Path, n: int) -> None:
    runtime = open_runtime(make_settings(tmp_path), embedder=FakeEmbedder())
    try:
        principal = runtime.local_principal("cli")
        for i in range(n):
            runtime.memories.remember(principal, "default", MemoryCreate(summary=f"fact {i}"))
    finally:
        runtime.close()


def test_reembed_answers_in_json(database: Path) -> None:
    fill(database, 12)
    result = runner.invoke(app, ["reembed", "--yes", "--json"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert answer == {"context": "default", "model": FakeEmbedder().name, "memories": 12,
                      "embedded": 12, "failed": 0, "pending": 0}  # fmt: skip


def test_reembed_waits_for_what_a_server_holds_and_counts_it(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(database, 30)
    server = open_runtime(make_settings(database), embedder=FakeEmbedder())
    reset, claimed = threading.Event(), threading.Event()
    reset_embeddings = SQLiteStore.reset_embeddings

    def reset_then_let_the_server_claim(
        self: SQLiteStore, workspace_id: str, context_id: str
    ) -> int:
        n = reset_embeddings(self, workspace_id, context_id)
        reset.set()
        assert claimed.wait(30)  # the server's worker takes its share first
        return n

    monkeypatch.setattr(SQLiteStore, "reset_embeddings", reset_then_let_the_server_claim)
    held: list[int] = []

    def serve_some() -> None:  # a server's worker: claims 10, embeds them slowly
        assert server.embedding is not None and reset.wait(30)
        jobs = server.embedding.claim(10)
        held.append(len(jobs))
        claimed.set()
        time.sleep(1.5)  # the command meanwhile embeds the rest, then must wait for these
        server.embedding.embed_jobs(jobs)

    worker = threading.Thread(target=serve_some)
    worker.start()
    try:
        result = runner.invoke(app, ["reembed", "--yes", "--json"])
    finally:
        worker.join()
        server.close()
    assert held == [10]
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert (answer["memories"], answer["embedded"], answer["pending"]) == (30, 30, 0)
