"""``kioku remember --link``, ``kioku explore`` and ``kioku recall --related``."""

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


def test_link_explore_and_related_from_the_shell() -> None:
    plan = json.loads(invoke("remember", "The kiwi launch plan", "--json"))["id"]
    owner = json.loads(invoke("remember", "Dana owns the budget", "--link", plan, "--json"))
    explored = json.loads(invoke("explore", plan, "--json", "--trust-tier", "trusted"))
    assert [(n["id"], n["path"]) for n in explored["neighbours"]] == [
        (owner["id"], [plan, owner["id"]])
    ]
    assert "Dana owns the budget" in invoke("explore", plan)
    found = json.loads(invoke("recall", "kiwi launch", "-k", "1", "--related", "--json"))
    assert [n["id"] for n in found["related"]] == [owner["id"]]
    assert "related" in invoke("recall", "kiwi launch", "-k", "1", "--related")
    missing = runner.invoke(app, ["remember", "orphan", "--link", "no-such-id"])
    assert missing.exit_code == 1 and "not found" in missing.output
