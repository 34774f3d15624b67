"""``kioku import-jsonl``: the batch path, once per line, and what Ctrl-C leaves (docs/cli.md).

Through typer's CliRunner on a temporary SQLite file; lexical-only unless a test says so."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kioku.cli import app
from kioku.embeddings.fake import FakeEmbedder
from kioku.runtime import open_runtime
from kioku.service.connectors import ConnectorService
from kioku.service.memories import MemoryService
from kioku.settings import Settings

runner = CliRunner()


@pytest.fixture(autouse=True)
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cli.db"
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{path}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")
    return path


def write_lines(path: Path, n: int, **extra: Any) -> Path:
    lines = [
        json.dumps({"summary": f"imported fact {i}", "tags": ["bulk"], **extra}) for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def summaries(database: Path) -> list[str]:
    """The live memories' summaries, read from the file itself."""
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT summary FROM memories WHERE deleted_at IS NULL").fetchall()
    return sorted(summary for (summary,) in rows)


def import_json(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["import-jsonl", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def count_batches(
    monkeypatch: pytest.MonkeyPatch, then: Callable[[int], None] | None = None
) -> list[int]:
    """Record the size of each batch the import sends; ``then(call)`` runs after each."""
    sizes: list[int] = []
    original = ConnectorService.import_memories

    def recorded(
        self: ConnectorService, principal: Any, context: str, items: Any, **kw: Any
    ) -> Any:
        answer = original(self, principal, context, items, **kw)
        sizes.append(len(items))
        if then is not None:
            then(len(sizes))
        return answer

    monkeypatch.setattr(ConnectorService, "import_memories", recorded)
    return sizes


def test_the_import_goes_through_the_batch_path_100_lines_a_call(
    tmp_path: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def one_by_one(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("import-jsonl wrote a memory outside the batch path")

    monkeypatch.setattr(MemoryService, "remember", one_by_one)
    sizes = count_batches(monkeypatch)
    answer = import_json(str(write_lines(tmp_path / "facts.jsonl", 250)))
    assert sizes == [100, 100, 50]
    assert answer["created"] == 250 and answer["skipped"] == 0 and answer["failed"] == 0
    assert len(summaries(database)) == 250
    runtime = open_runtime(Settings({"embedder": {"background": False}}))
    try:
        lines = runtime.audit.list_audit(runtime.local_principal("cli")).items
    finally:
        runtime.close()
    batches = [line for line in lines if line.action == "import_memories"]
    assert [(b.channel, b.detail["created"]) for b in batches] == [
        ("import", n) for n in (50, 100, 100)
    ]


def test_a_second_run_imports_no_new_row(tmp_path: Path, database: Path) -> None:
    path = write_lines(tmp_path / "facts.jsonl", 150)
    assert import_json(str(path))["created"] == 150
    again = import_json(str(path))
    assert (again["created"], again["skipped"], again["failed"]) == (0, 150, 0)
    assert again["in_context"] == 150
    stored = summaries(database)
    assert len(stored) == 150 and len(set(stored)) == 150
    # The same lines reordered, spaced differently, are the same lines.
    lines = path.read_text(encoding="utf-8").splitlines()
    respaced = [
        json.dumps(json.loads(line), indent=None, separators=(" ,", " : ")) for line in lines
    ]
    (tmp_path / "reordered.jsonl").write_text("\n".join(reversed(respaced)), encoding="utf-8")
    assert import_json(str(tmp_path / "reordered.jsonl"))["created"] == 0
    assert len(summaries(database)) == 150


def test_ctrl_c_after_the_first_batch_says_how_far_it_got_and_a_rerun_finishes(
    tmp_path: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_lines(tmp_path / "facts.jsonl", 250)

    def interrupt(call: int) -> None:
        if call == 1:
            raise KeyboardInterrupt

    count_batches(monkeypatch, then=interrupt)
    result = runner.invoke(app, ["import-jsonl", str(path)])
    assert result.exit_code == 130, result.output
    said = " ".join(result.output.split())
    assert "interrupted: 100 of the 250 memories of facts.jsonl are in context default" in said
    assert "run the same command again: lines already imported are skipped" in said
    assert "Traceback" not in result.output
    assert len(summaries(database)) == 100
    monkeypatch.undo()
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{database}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")
    finished = import_json(str(path))
    assert (finished["created"], finished["skipped"]) == (150, 100)
    stored = summaries(database)
    assert len(stored) == 250 and len(set(stored)) == 250


def test_a_real_ctrl_c_stops_after_the_batch_being_written(
    tmp_path: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGINT while a batch is written: that batch lands whole, then the import stops."""
    path = write_lines(tmp_path / "facts.jsonl", 250)
    count_batches(monkeypatch, then=lambda call: os.kill(os.getpid(), signal.SIGINT))
    result = runner.invoke(app, ["import-jsonl", str(path), "--json"])
    assert result.exit_code == 130, result.output
    answer = json.loads(result.stdout)
    assert answer["interrupted"] is True
    assert (answer["created"], answer["in_context"], answer["in_file"]) == (100, 100, 250)
    assert len(summaries(database)) == 100
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_repeated_lines_and_external_ids(tmp_path: Path, database: Path) -> None:
    path = tmp_path / "notes.jsonl"
    lines = [
        {"summary": "Staging listens on 5433"},
        {"summary": "Staging listens on 5433"},  # the same line again: left out
        {"external_id": "doc-1", "summary": "Alice drinks tea"},
        {"external_id": "doc-1", "summary": "Alice drinks coffee"},  # the id, other fields
        {"external_id": "", "summary": "no id"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    answer = import_json(str(path))
    assert (answer["created"], answer["duplicates"], answer["failed"]) == (2, 1, 2)
    assert [(e["line"], e["field"]) for e in answer["errors"]] == [
        (4, "external_id"), (5, "external_id"),
    ]  # fmt: skip
    # The line of an external id already imported is skipped, even with other fields.
    path.write_text(json.dumps({"external_id": "doc-1", "summary": "Alice drinks water"}))
    assert import_json(str(path))["skipped"] == 1
    assert summaries(database) == ["Alice drinks tea", "Staging listens on 5433"]


def test_lines_keep_every_field_of_remember(tmp_path: Path) -> None:
    path = tmp_path / "rules.jsonl"
    lines = [
        {"summary": "Never deploy on Fridays", "delivery_mode": "always", "importance": 0.9},
        {"summary": "step one", "thread": "runbook"},
        {"summary": "step two", "thread": "runbook"},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    assert import_json(str(path))["created"] == 3
    pinned = json.loads(runner.invoke(app, ["pinned", "--json"]).stdout)["items"]
    assert [item["summary"] for item in pinned] == ["Never deploy on Fridays"]
    assert pinned[0]["source_type"] == "import"
    page = json.loads(runner.invoke(app, ["list", "--json"]).stdout)["items"]
    positions = {m["summary"]: m.get("position") for m in page if m.get("thread") == "runbook"}
    assert positions == {"step one": 0, "step two": 1}


def test_vectors_come_from_the_worker_and_embed_waits_for_them(
    tmp_path: Path, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIOKU_EMBEDDER", "bundled")
    monkeypatch.setattr(  # the fake, where the bundled model would be
        "kioku.runtime.make_embedder",
        lambda settings: None if settings.embedder.kind == "none" else FakeEmbedder(),
    )
    first = tmp_path / "first.jsonl"
    write_lines(first, 30)
    result = runner.invoke(app, ["import-jsonl", str(first)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "30 memories of default wait for their vectors" in said  # no worker ran
    waited = import_json(str(write_lines(tmp_path / "more.jsonl", 20, type="fact")), "--embed")
    assert waited["created"] == 20 and waited["pending_vectors"] == 0  # all 50, by the worker
