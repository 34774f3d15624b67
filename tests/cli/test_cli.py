"""The CLI through typer's CliRunner, on a temporary database, lexical-only (fast)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kioku.cli import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def isolated_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_remember_then_recall_as_json() -> None:
    memory = json.loads(
        invoke("remember", "The office wifi password rotates monthly", "--json", "--tag", "it")
    )
    assert memory["source_type"] == "manual" and memory["tags"] == ["it"]
    result = json.loads(invoke("recall", "wifi password", "--json"))
    assert result["results"][0]["id"] == memory["id"]
    assert result["legs"] == ["lexical"]


def test_human_output_is_readable() -> None:
    invoke("remember", "Deploys happen on Fridays")
    output = invoke("recall", "deploys")
    assert "Deploys happen on Fridays" in output and "confidence" in output


def test_contexts_lifecycle() -> None:
    created = json.loads(invoke("contexts", "create", "research", "--json"))
    listed = json.loads(invoke("contexts", "list", "--json"))
    assert [c["name"] for c in listed["items"]] == ["default", "research"]
    invoke("remember", "a finding", "--context", "research")
    shown = json.loads(invoke("contexts", "show", created["id"], "--json"))
    assert shown["memory_count"] == 1
    invoke("contexts", "update", "research", "--description", "papers")
    invoke("contexts", "delete", "research", "--yes")
    assert [c["name"] for c in json.loads(invoke("contexts", "list", "--json"))["items"]] == [
        "default"
    ]


def test_list_get_forget() -> None:
    memory = json.loads(invoke("remember", "short-lived", "--json"))
    page = json.loads(invoke("list", "--json"))
    assert [m["id"] for m in page["items"]] == [memory["id"]]
    assert json.loads(invoke("get", memory["id"], "--json"))["access_count"] == 1
    invoke("forget", memory["id"])
    assert json.loads(invoke("list", "--json"))["items"] == []


def test_errors_exit_1_with_a_message_not_a_traceback() -> None:
    result = runner.invoke(app, ["remember", "x", "--context", "missing"])
    assert result.exit_code == 1
    assert "not found" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["remember", "   "])
    assert result.exit_code == 1 and "summary" in result.output


def test_import_jsonl_reports_bad_lines_and_keeps_good_ones(tmp_path: Path) -> None:
    path = tmp_path / "memories.jsonl"
    lines = [json.dumps({"summary": f"imported {i}", "tags": ["bulk"]}) for i in range(150)]
    lines.insert(7, json.dumps({"summary": ""}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["import-jsonl", str(path), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["created"] == 150 and summary["failed"] == 1
    assert summary["errors"][0]["line"] == 8 and summary["errors"][0]["field"] == "summary"
    hit = json.loads(invoke("recall", "imported 42", "--json"))["results"][0]
    assert hit["source_type"] == "import"


def test_strict_import_writes_nothing_when_a_line_is_bad(tmp_path: Path) -> None:
    path = tmp_path / "memories.jsonl"
    path.write_text('{"summary": "good"}\n{"summary": "bad", "importance": 9}\n', encoding="utf-8")
    result = runner.invoke(app, ["import-jsonl", str(path), "--strict"])
    assert result.exit_code == 1 and "line 2" in result.output
    assert json.loads(invoke("list", "--json"))["items"] == []


def test_dev_mode_refuses_a_public_address() -> None:
    # --dev answers without keys, so it must never listen beyond loopback.
    result = runner.invoke(app, ["serve", "--dev", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "refusing" in result.output


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    import typer.main

    command = typer.main.get_command(group)  # type: ignore[arg-type]
    found = []
    for name, sub in getattr(command, "commands", {}).items():
        found.append((*prefix, name))
        for sub_name in getattr(sub, "commands", {}):
            found.append((*prefix, name, sub_name))
    return found


def test_every_command_has_help() -> None:
    commands = _commands(app)
    assert ("remember",) in commands and ("contexts", "create") in commands
    for command in commands:
        result = runner.invoke(app, [*command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output, command


def test_pinned_lists_the_always_lane() -> None:
    invoke("remember", "ordinary")
    runner_result = runner.invoke(app, ["pinned", "--json"])
    assert json.loads(runner_result.output)["items"] == []
    from kioku.models import MemoryCreate
    from kioku.runtime import open_runtime
    from kioku.settings import Settings

    runtime = open_runtime(Settings({"embedder": {"background": False}}))
    try:
        runtime.memories.remember(
            runtime.local_principal("cli"),
            "default",
            MemoryCreate(summary="keep answers short", delivery_mode="always"),
        )
    finally:
        runtime.close()
    assert "[pinned] keep answers short" in invoke("pinned")


def test_user_text_is_printed_literally_not_as_markup() -> None:
    invoke("remember", "Use [bold] in docs, not [red]")
    assert "[bold]" in invoke("list") and "[red]" in invoke("list")


def test_state_set_get_list_delete() -> None:
    state = json.loads(invoke("state", "set", "ticket-42", '{"step": 2}', "--json"))
    assert state["value"] == {"step": 2} and state["expires_in_seconds"] == 86400
    invoke("state", "set", "note", "awaiting reply", "--forever")
    assert json.loads(invoke("state", "get", "note", "--json"))["value"] == "awaiting reply"
    listed = json.loads(invoke("state", "list", "--json"))
    assert [item["key"] for item in listed["items"]] == ["note", "ticket-42"]
    assert "never expires" in invoke("state", "list")
    invoke("state", "delete", "note")
    missing = runner.invoke(app, ["state", "get", "note"])
    assert missing.exit_code == 1 and "not found" in missing.output


def test_feedback_add_and_list() -> None:
    memory = json.loads(invoke("remember", "Deploys happen on Fridays", "--json"))
    invoke("feedback", "add", memory["id"], "--helpful", "--query", "when are deploys?")
    invoke("feedback", "add", memory["id"], "--unhelpful")
    events = json.loads(invoke("feedback", "list", "--json"))["items"]
    assert [e["helpful"] for e in events] == [False, True]
    assert events[1]["actor"] == "local:cli" and events[1]["query"] == "when are deploys?"
    unknown = runner.invoke(app, ["feedback", "add", "nope", "--helpful"])
    assert unknown.exit_code == 1 and "memory_id" in unknown.output


def test_an_unreachable_url_is_one_line_and_exit_1() -> None:
    with socket.socket() as sock:  # bound, never listening: the connection is refused
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        result = runner.invoke(app, ["recall", "anything", "--url", url])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith(f"error: no answer from kioku at {url} (ConnectError")


def test_migrate_reports_the_revision() -> None:
    first = json.loads(invoke("migrate", "--json"))
    assert first["backend"] == "sqlite" and first["from"] is None
    assert first["to"] == first["head"]
    again = json.loads(invoke("migrate", "--json"))
    assert again["from"] == again["to"] == first["head"]
    assert "already at" in invoke("migrate")


def test_remember_can_pin_and_update_changes_only_what_is_given() -> None:
    rule = json.loads(invoke("remember", "Never deploy on Fridays", "--delivery-mode", "always",
                             "--tag", "ops", "--json"))  # fmt: skip
    assert rule["delivery_mode"] == "always"
    window = json.loads(invoke("remember", "Standup moves to 10:00", "--delivery-mode",
                               "on_trigger", "--trigger-from", "2026-01-01",
                               "--trigger-until", "2099-01-01T10:00:00", "--json"))  # fmt: skip
    assert window["trigger_from"] and window["trigger_until"]  # a zone-less time is local time
    pinned = json.loads(invoke("pinned", "--json"))["items"]
    assert [item["id"] for item in pinned] == [rule["id"], window["id"]]
    changed = json.loads(invoke("update", rule["id"], "--importance", "0.9", "--json"))
    assert (changed["importance"], changed["summary"], changed["tags"]) == (
        0.9, "Never deploy on Fridays", ["ops"],
    )  # fmt: skip
    said = invoke("update", rule["id"], "--summary", "Never deploy on Fridays or holidays")
    assert rule["id"] in said and "summary" in said
    assert json.loads(invoke("get", rule["id"], "--json"))["summary"].endswith("holidays")
    nothing = runner.invoke(app, ["update", rule["id"]])
    assert nothing.exit_code == 2 and "at least one field" in nothing.output


def test_get_prints_values_not_python_reprs() -> None:
    memory = json.loads(invoke("remember", "Alice drinks oolong", "--tag", "people", "--tag",
                               "tea", "--json"))  # fmt: skip
    shown = invoke("get", memory["id"])
    assert "tags: people, tea" in shown and "created at: 20" in shown
    assert "datetime.datetime(" not in shown and "['" not in shown and "None" not in shown


def test_ids_are_printed_whole_in_80_columns() -> None:
    memory = json.loads(invoke("remember", "A rather long summary " * 4, "--json"))
    narrow = CliRunner(env={"COLUMNS": "80"})
    for args in (["recall", "rather long summary"], ["list", "-k", "5"]):
        result = narrow.invoke(app, args)
        assert result.exit_code == 0 and memory["id"] in result.output, result.output


def test_an_unreachable_postgresql_is_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"postgresql://kioku@127.0.0.1:{port}/kioku")
    result = runner.invoke(app, ["list"])
    said = " ".join(result.output.split())
    assert result.exit_code == 1, result.output
    assert f"cannot reach PostgreSQL at postgresql://kioku@127.0.0.1:{port}/kioku" in said
    assert "Traceback" not in result.output


def test_min_confidence_shows_nothing_below_it() -> None:
    """``kioku recall --min-confidence``: a weak match is held back and said to be."""
    invoke("remember", "Deploys happen on Fridays after the freeze")
    weak = json.loads(
        invoke(
            "recall", "deploys on Mondays at the beach", "--min-confidence", "moderate", "--json"
        )
    )
    assert weak["results"] == [] and weak["withheld"] == 1
    assert weak["confidence"] in {"low", "none"}
    said = invoke("recall", "deploys on Mondays at the beach", "--min-confidence", "moderate")
    assert "1 result withheld" in said and "below the minimum" in said
    sure = json.loads(
        invoke("recall", "Deploys happen on Fridays", "--min-confidence", "moderate", "--json")
    )
    assert sure["results"] and sure["withheld"] == 0
