"""``kioku import`` into a database a server has touched (issue 35, item 3).

``kioku serve`` makes the ``default`` workspace and its ``default`` context on first start, so
the compose stack's database has one before anything is imported. A context of the file whose
name the target workspace already uses is imported into that context when it is empty (no
memory, forgotten ones included, and no state key, expired ones included): its id stays (keys
scoped to it keep working), it takes the file's settings, and the output says so. One that
holds anything still refuses, writing nothing, and says what to do. Both backends, through the
real CLI (typer's CliRunner), on real databases.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kioku.cli import app
from kioku.embeddings.fake import FakeEmbedder
from kioku.errors import ConflictError
from kioku.models import (
    ContextCreate,
    ContextUpdate,
    FeedbackCreate,
    KeyCreate,
    MemoryCreate,
    StateSet,
)
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings
from kioku.storage import open_store
from tests.conftest import backend_settings, make_settings

runner = CliRunner()


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # No command here may fall back on the user's own database.
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'unused.db'}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """The database to import into, empty (no workspace yet): SQLite or PostgreSQL."""
    return backend_settings(request, tmp_path / "target")


@pytest.fixture
def export_file(tmp_path: Path) -> Path:
    """An export of a workspace ``default`` whose ``default`` context holds a live and a
    forgotten memory, feedback and a state key, and a second context ``notes``."""
    source = make_settings(tmp_path / "source")
    with _runtime(source) as runtime:
        me = runtime.local_principal("rest")
        runtime.contexts.update_context(
            me, "default", ContextUpdate(description="moved from a laptop")
        )
        runtime.contexts.create_context(me, ContextCreate(name="notes", description="papers"))
        kept = runtime.memories.remember(me, "default", MemoryCreate(summary="Alice drinks oolong"))
        gone = runtime.memories.remember(me, "default", MemoryCreate(summary="An old note"))
        runtime.memories.forget(me, "default", gone.id)
        runtime.memories.remember(me, "notes", MemoryCreate(summary="Attention is all you need"))
        runtime.feedback.feedback(
            me, "default", FeedbackCreate(memory_id=kept.id, helpful=True, query="tea")
        )
        runtime.state.set_state(me, "default", "ticket:42", StateSet(value={"phase": "draft"}))
    out = tmp_path / "default.jsonl"
    invoke("export", "--database-url", source.database.url, "--out", str(out))
    return out


def test_import_fills_the_empty_default_a_server_made_and_keeps_its_id(
    target: Settings, export_file: Path
) -> None:
    # The compose stack: kioku started first, made `default`, and a key was scoped to it.
    with _runtime(target) as runtime:
        owner = runtime.local_principal("rest")
        default_id = runtime.contexts.resolve(owner, "default").id
        key = runtime.keys.create_key(
            owner, KeyCreate(name="agent", role="member", context_ids=["default"])
        ).key
    said = invoke("import", str(export_file), "--database-url", target.database.url)
    flat = " ".join(said.split())
    assert "imported workspace default (2 contexts, 3 memories, 1 feedback event" in flat, said
    assert "into the workspace's existing empty context default (its id kept" in flat, said
    with _runtime(target) as runtime:
        agent = runtime.keys.authenticate(key, "rest")  # the key scoped to the old id
        default = runtime.contexts.resolve(agent, "default")
        assert default.id == default_id
        assert default.description == "moved from a laptop"  # the file's settings
        page = runtime.memories.list_memories(agent, "default")
        assert [m.summary for m in page.items] == ["Alice drinks oolong"]
        assert runtime.state.get_state(agent, "default", "ticket:42").value == {"phase": "draft"}
        owner = runtime.local_principal("rest")
        notes = runtime.memories.list_memories(owner, "notes")
        assert [m.summary for m in notes.items] == ["Attention is all you need"]
    # Everything else travelled as it was: a new export is the file, the context id aside.
    second = export_file.with_name("again.jsonl")
    invoke("export", "--database-url", target.database.url, "--out", str(second))
    file_id = _context_id(export_file, "default")
    expected = export_file.read_text(encoding="utf-8").replace(file_id, default_id)
    assert sorted(second.read_text(encoding="utf-8").splitlines()) == sorted(expected.splitlines())


def test_json_output_names_the_contexts_imported_into(target: Settings, export_file: Path) -> None:
    open_runtime(target, embedder=None).close()
    said = invoke("import", str(export_file), "--database-url", target.database.url, "--json")
    summary = json.loads(said)
    assert summary["into_existing_contexts"] == ["default"]
    assert summary["counts"]["memory"] == 3 and summary["counts"]["context"] == 2
    # Into a workspace of its own, nothing is taken over: an empty list.
    other = json.loads(
        invoke(
            "import",
            str(_renumbered(export_file)),
            "--database-url",
            target.database.url,
            "-w",
            "moved",
            "--json",
        )
    )
    assert other["workspace"] == "moved" and other["into_existing_contexts"] == []


@pytest.mark.parametrize("holding", ["a memory", "a forgotten memory", "a state key"])
def test_a_same_named_context_that_holds_anything_still_refuses(
    target: Settings, export_file: Path, holding: str
) -> None:
    with _runtime(target) as runtime:
        me = runtime.local_principal("rest")
        if holding == "a state key":
            runtime.state.set_state(me, "default", "mine", StateSet(value=1))
        else:
            kept = runtime.memories.remember(me, "default", MemoryCreate(summary="Already here"))
            if holding == "a forgotten memory":
                runtime.memories.forget(me, "default", kept.id)
    result = runner.invoke(app, ["import", str(export_file), "--database-url",
                                   target.database.url])  # fmt: skip
    said = " ".join(result.output.split())
    assert result.exit_code == 1, result.output
    assert "already has contexts named default that hold memories or state keys" in said
    assert "nothing was imported" in said and "--workspace" in said
    assert "kioku purge --context default --yes" in said
    with _runtime(target) as runtime:
        me = runtime.local_principal("rest")
        assert [c.name for c in runtime.contexts.list_contexts(me).items] == ["default"]


def test_a_context_that_takes_a_memory_during_the_import_refuses_it_whole(
    target: Settings, export_file: Path
) -> None:
    """The service checks emptiness before reading the file a second time; the restore checks
    again inside its transaction, so a server writing meanwhile cannot be overwritten."""
    from kioku.service import transfer

    with _runtime(target) as runtime:
        me = runtime.local_principal("rest")
        default_id = runtime.contexts.resolve(me, "default").id
    store = open_store(target.database.url)
    try:
        workspace = store.get_workspace_by_name("default")
        assert workspace is not None
        rows = list(transfer._rows(export_file, workspace.id, 0, None, {
            _context_id(export_file, "default"): default_id
        }))  # fmt: skip
        with _runtime(target) as runtime:  # the server's write lands after the check
            me = runtime.local_principal("rest")
            runtime.memories.remember(me, "default", MemoryCreate(summary="Written meanwhile"))
        with pytest.raises(ConflictError, match="took a memory or a state key"):
            store.restore_workspace(workspace.id, iter(rows), adopt={default_id})
        assert store.get_context_by_name(workspace.id, "notes") is None  # nothing written
    finally:
        store.close()


# ---------------------------------------------------------------- helpers


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


@contextmanager
def _runtime(settings: Settings) -> Iterator[Runtime]:
    """A runtime on ``settings`` with a fake embedder, closed after the block."""
    runtime = open_runtime(settings, embedder=FakeEmbedder())
    try:
        yield runtime
    finally:
        runtime.close()


def _context_id(export: Path, name: str) -> str:
    for line in export.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record.get("kind") == "context" and record["name"] == name:
            return str(record["id"])
    raise AssertionError(f"no context {name} in {export}")


def _renumbered(export: Path) -> Path:
    """The export with new ids (the same file cannot be imported twice: ids are kept)."""
    text = export.read_text(encoding="utf-8")
    ids = {str(json.loads(line)["id"]) for line in text.splitlines() if '"id"' in line}
    for n, old in enumerate(sorted(ids)):
        text = text.replace(old, f"copy-{n:04d}-{old[:8]}")
    copy = export.with_name("copy.jsonl")
    copy.write_text(text, encoding="utf-8")
    return copy
