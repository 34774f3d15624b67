"""``kioku forget --query``: a preview, a prompt (or --yes), or --dry-run then --confirm."""

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


def invoke(*args: str, input: str | None = None, code: int = 0) -> str:
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == code, result.output
    return result.output


def remember(summary: str, *args: str) -> str:
    return json.loads(invoke("remember", summary, "--json", *args))["id"]


def live() -> set[str]:
    return {m["id"] for m in json.loads(invoke("list", "--json"))["items"]}


def test_forget_by_query_shows_the_matches_and_asks_first() -> None:
    old = remember("Old VPN endpoint is vpn1.example.com", "--tag", "it")
    new = remember("New VPN endpoint is vpn2.example.com")
    declined = invoke("forget", "--query", "old VPN endpoint", input="n\n", code=1)
    assert "1 memory would be forgotten" in declined and old in declined
    assert new not in declined and live() == {old, new}
    accepted = invoke("forget", "--query", "old VPN endpoint", input="y\n")
    assert "forgot 1 memory" in accepted and live() == {new}


def test_dry_run_then_confirm_and_a_changed_match_is_refused() -> None:
    first = remember("scratch idea: cache the tokenizer", "--tag", "scratch")
    preview = json.loads(invoke("forget", "--tag", "scratch", "--dry-run", "--json"))
    assert [m["id"] for m in preview["matches"]] == [first]
    second = remember("scratch idea: batch the embeddings", "--tag", "scratch")
    refused = invoke("forget", "--tag", "scratch", "--confirm", preview["confirmation"], code=1)
    assert "preview again" in refused and live() == {first, second}
    again = invoke("forget", "--tag", "scratch", "--dry-run")
    token = again.split("--confirm ")[1].split()[0]
    done = json.loads(invoke("forget", "--tag", "scratch", "--confirm", token, "--json"))
    assert done["status"] == "forgotten" and set(done["forgotten_ids"]) == {first, second}
    assert live() == set()


def test_yes_forgets_without_asking_and_no_match_says_so() -> None:
    remember("force-push recovery steps")
    remember("Force-push is blocked on main")
    keep = remember("Release tags are signed")
    output = invoke("forget", "-q", "force-push", "--yes")
    assert "forgot 2 memories" in output and live() == {keep}
    assert "nothing matches" in invoke("forget", "-q", "force-push")


def test_usage_errors() -> None:
    invoke("forget", code=2)
    invoke("forget", "some-id", "--query", "x", code=2)
    invoke("forget", "--query", "x", "--purge", code=2)
