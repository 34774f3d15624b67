"""``kioku import markdown`` through typer's CliRunner on a real folder and SQLite file: one
memory per section, front-matter tags, ``source_uri`` = path; re-import is idempotent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kioku.cli import app
from kioku.connectors.markdown import anchor, parse_front_matter, read_file
from kioku.runtime import open_runtime
from kioku.storage.records import MemoryFilter, MemoryRow
from tests.conftest import make_settings

runner = CliRunner()

HANDBOOK = """---
title: Engineering handbook
tags: [eng, handbook]
owner: "platform team"
---
Read this first.

# Deploys

Deploys happen on Fridays after 3pm.

## Rollback

Run `make rollback`; it takes five minutes.

```sh
# not a heading: a comment in a code block
make rollback
```

## Rollback

A second section with the same title gets its own anchor.

# Empty section

# 会議室

東京オフィスの会議室は3階にあります。
"""

POLICY = """---
tags:
  - hr
  - "policy"
---
# Expenses

Expense reports are due by the 25th.
"""


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'kioku.db'}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")


def import_folder(folder: Path) -> dict[str, int]:
    result = runner.invoke(app, ["import", "markdown", str(folder), "-c", "docs", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["counts"]


def memories(tmp_path: Path, *, deleted: bool = False) -> list[MemoryRow]:
    runtime = open_runtime(make_settings(tmp_path, embedder="none"))
    try:
        ws = runtime.default_workspace_id
        ctx = runtime.store.get_context_by_name(ws, "docs")
        assert ctx is not None
        flt = MemoryFilter(include_deleted=deleted)
        return runtime.store.list_memories(ws, [ctx.id], flt, None, 100)
    finally:
        runtime.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "wiki"
    (root / "hr").mkdir(parents=True)
    (root / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    (root / "hr" / "policy.md").write_text(POLICY, encoding="utf-8")
    (root / "notes.txt").write_text("# not markdown", encoding="utf-8")
    return root


def test_one_memory_per_section_with_front_matter_tags_and_the_path(
    folder: Path, tmp_path: Path
) -> None:
    assert import_folder(folder) == {"created": 6}
    rows = {m.external_id: m for m in memories(tmp_path)}
    assert sorted(str(k) for k in rows) == [
        "handbook.md#",
        "handbook.md#deploys",
        "handbook.md#rollback",
        "handbook.md#rollback-1",
        "handbook.md#会議室",
        "hr/policy.md#expenses",
    ]
    intro = rows["handbook.md#"]
    assert (intro.summary, intro.content) == ("Engineering handbook", "Read this first.")
    rollback = rows["handbook.md#rollback"]
    assert rollback.summary == "Engineering handbook — Rollback"
    assert "# not a heading: a comment in a code block" in rollback.content
    assert rows["handbook.md#会議室"].content == "東京オフィスの会議室は3階にあります。"
    assert {m.source_uri for m in rows.values()} == {"handbook.md", "hr/policy.md"}
    assert rows["handbook.md#deploys"].tags == ["eng", "handbook"]
    assert rows["hr/policy.md#expenses"].tags == ["hr", "policy"]
    assert rows["hr/policy.md#expenses"].summary == "policy — Expenses"
    assert {(m.source_type, m.trust_tier) for m in rows.values()} == {("import", "trusted")}


def test_reimport_is_idempotent_and_follows_edits(folder: Path, tmp_path: Path) -> None:
    import_folder(folder)
    first = {m.external_id: m for m in memories(tmp_path)}
    assert import_folder(folder) == {"unchanged": 6}
    assert {m.external_id: m for m in memories(tmp_path)} == first
    edited = HANDBOOK.replace("Fridays after 3pm", "Thursdays after noon").replace(
        "## Rollback\n\nA second section with the same title gets its own anchor.\n", ""
    )
    (folder / "handbook.md").write_text(edited, encoding="utf-8")
    # Deploys' text changed; 会議室 moved up one place in the file's thread.
    assert import_folder(folder) == {"updated": 2, "unchanged": 3, "deleted": 1}
    after = {m.external_id: m for m in memories(tmp_path)}
    deploys = after["handbook.md#deploys"]
    assert deploys.id == first["handbook.md#deploys"].id
    assert "Thursdays after noon" in deploys.content
    assert "handbook.md#rollback-1" not in after


def test_front_matter_subset_and_anchors() -> None:
    meta, body = parse_front_matter("---\ntags: a, b\ntitle: 'T'\n---\nbody")
    assert meta == {"tags": "a, b", "title": "T"} and body == "body"
    assert parse_front_matter("---\nno closing rule\n# Title") == (
        {},
        "---\nno closing rule\n# Title",
    )
    assert anchor("Hello, World! (v2)") == "hello-world-v2"
    assert anchor("会議室の予約") == "会議室の予約"


def test_a_file_without_headings_is_one_section(tmp_path: Path) -> None:
    path = tmp_path / "plain.md"
    path.write_text("Just a paragraph.\n", encoding="utf-8")
    doc = read_file(tmp_path, path)
    assert doc.sections == [("", "plain", "Just a paragraph.")]


def test_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["import", "markdown", str(tmp_path / "nope")])
    assert result.exit_code != 0 and "Traceback" not in result.output


def test_a_files_sections_are_one_thread_in_file_order(folder: Path, tmp_path: Path) -> None:
    import_folder(folder)
    rows = {m.external_id: m for m in memories(tmp_path)}
    handbook = ["handbook.md#", "handbook.md#deploys", "handbook.md#rollback"]
    handbook += ["handbook.md#rollback-1", "handbook.md#会議室"]
    assert [(rows[e].thread, rows[e].thread_position) for e in handbook] == [
        ("handbook.md", position) for position in range(5)
    ]
    policy = rows["hr/policy.md#expenses"]
    assert (policy.thread, policy.thread_position) == ("hr/policy.md", 0)
    # A section removed from the middle: the ones after it move up, in place.
    (folder / "handbook.md").write_text(HANDBOOK.replace("# Deploys\n", ""), encoding="utf-8")
    import_folder(folder)
    after = {m.external_id: m for m in memories(tmp_path)}
    assert after["handbook.md#rollback"].id == rows["handbook.md#rollback"].id
    assert [after[e].thread_position for e in handbook if e in after] == [0, 1, 2, 3]
