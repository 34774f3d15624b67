"""CLI commands with ``--url`` / ``$KIOKU_URL`` speak to ``kioku serve``, not the local file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kioku import Client
from kioku.cli import app

pytestmark = pytest.mark.e2e

runner = CliRunner()


@pytest.fixture(autouse=True)
def untouched_local_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    local = tmp_path / "local.db"
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{local}")
    monkeypatch.delenv("KIOKU_URL", raising=False)
    return local


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_remember_and_recall_through_url(server: str, untouched_local_database: Path) -> None:
    invoke("contexts", "create", "cli-url", "--url", server)
    memory = json.loads(
        invoke(
            "remember", "Staging listens on port 5433", "-c", "cli-url", "--url", server, "--json"
        )
    )
    assert memory["source_type"] == "api"  # it came in through REST
    found = json.loads(invoke("recall", "staging port", "-c", "cli-url", "--url", server, "--json"))
    assert found["results"][0]["id"] == memory["id"]
    shown = json.loads(invoke("get", memory["id"], "-c", "cli-url", "--url", server, "--json"))
    assert shown["summary"] == "Staging listens on port 5433"
    missing = runner.invoke(app, ["get", "nope", "-c", "cli-url", "--url", server])
    assert missing.exit_code == 1 and "not found" in missing.output
    assert not untouched_local_database.exists()


def test_kioku_url_points_every_command_at_the_server(
    server: str, monkeypatch: pytest.MonkeyPatch, untouched_local_database: Path
) -> None:
    monkeypatch.setenv("KIOKU_URL", server)
    invoke("contexts", "create", "cli-env")
    invoke("state", "set", "ticket-7", '{"phase": "drafted"}', "-c", "cli-env")
    with Client(server) as kioku:
        assert kioku.get_state("cli-env", "ticket-7").value == {"phase": "drafted"}
    assert "ticket-7" in invoke("state", "list", "-c", "cli-env")
    assert not untouched_local_database.exists()


def test_the_quick_commands_answer_what_the_sdk_answers(
    server: str, untouched_local_database: Path
) -> None:
    """recall, pinned and state get|set with --url speak REST without the SDK (docs/cli.md):
    their JSON is the server's, field for field what the SDK reads."""
    invoke("contexts", "create", "cli-quick", "--url", server)
    with Client(server) as kioku:
        rule = kioku.remember("cli-quick", "Never deploy on Fridays", delivery_mode="always")
        kioku.remember("cli-quick", "Staging listens on port 5433", wait=True)
        quick = ["-c", "cli-quick", "--url", server, "--json"]
        pinned = json.loads(invoke("pinned", *quick))
        assert pinned == kioku.load_pinned("cli-quick").model_dump(mode="json")
        assert [item["id"] for item in pinned["items"]] == [rule.id]
        found = json.loads(invoke("recall", "staging port", "-k", "3", *quick))
        assert found["results"][0]["summary"] == "Staging listens on port 5433"
        written = json.loads(invoke("state", "set", "run:7", '{"step": 2}', *quick))
        read = json.loads(invoke("state", "get", "run:7", *quick))
        assert written["value"] == read["value"] == kioku.get_state("cli-quick", "run:7").value
    missing = runner.invoke(app, ["state", "get", "nope", "-c", "cli-quick", "--url", server])
    assert missing.exit_code == 1 and "not found" in missing.output
    assert not untouched_local_database.exists()
