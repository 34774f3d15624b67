"""``kioku sleep``, ``kioku sleep report``, ``kioku sleep rollback`` through CliRunner."""

from __future__ import annotations

import json
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


def test_sleep_then_report_then_rollback() -> None:
    invoke("remember", "The staging database listens on port 5433")
    run = json.loads(invoke("sleep", "--mode", "full", "--json"))
    assert run["status"] == "done" and set(run["summary"]) >= {"sweep", "edges", "merge"}
    human = invoke("sleep", "report", run["run_id"])
    assert run["run_id"] in human and "merge" in human
    rolled = json.loads(invoke("sleep", "rollback", run["run_id"], "--json"))
    assert rolled["run"]["status"] == "rolled_back"
    again = runner.invoke(app, ["sleep", "rollback", run["run_id"]])
    assert again.exit_code == 1 and "already rolled" in " ".join(again.output.split())


def test_sleep_refuses_an_unknown_mode() -> None:
    result = runner.invoke(app, ["sleep", "--mode", "deep"])
    assert result.exit_code != 0
