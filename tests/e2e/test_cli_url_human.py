"""The human output of the commands that speak to a server (``--url``) is the same words as
locally: ``get`` lists edges, ``sleep`` says what each phase did, ``list`` piped gives whole
ids first, and the quick ``state`` path writes times as spans."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kioku.cli import app

pytestmark = pytest.mark.e2e

runner = CliRunner()
PYTHON = re.compile(r"\{'|'\}|\['|None\b|\d\.\d{6,}")


@pytest.fixture(autouse=True)
def untouched_local_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'local.db'}")
    monkeypatch.delenv("KIOKU_URL", raising=False)


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    if "--json" not in args:
        assert not PYTHON.search(result.stdout), result.stdout
    return result.stdout


def test_commands_through_url_print_words_not_python(server: str) -> None:
    where = ("-c", "cli-human", "--url", server)
    invoke("contexts", "create", "cli-human", "--url", server)
    plan = json.loads(invoke("remember", "The kiwi launch plan", *where, "--json"))["id"]
    owner = json.loads(invoke("remember", "Dana owns it", "--link", plan, *where, "--json"))["id"]
    shown = invoke("get", plan, *where)
    assert f"  {owner}  weight 0.500, declared" in shown and "accessed: once" in shown
    assert [line.split("\t")[0] for line in invoke("list", *where).splitlines()] == [owner, plan]
    ran = invoke("sleep", "--mode", "edges_only", *where)
    assert "edges: decayed 1 edge, pruned 0" in ran and "1 action: kioku sleep report" in ran
    assert "expires in 1 h" in invoke("state", "set", "t", "1", "--ttl", "3600", *where)
