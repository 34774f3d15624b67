"""Every command's output for people reads as words, never as Python (issue 35, item 5):
no dicts, lists, ``None`` or seventeen-digit floats; nouns agree with their numbers; and
down a pipe (CliRunner is not a terminal) no id is cut and no line is wrapped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kioku.cli import app

runner = CliRunner()
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
PYTHON = re.compile(r"\{'|'\}|\['|None\b|\d\.\d{6,}")
"""What Python's repr leaves in text: a dict or list of strings, ``None``, a raw float."""


@pytest.fixture(autouse=True)
def isolated_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")


def invoke(*args: str, input: str | None = None) -> str:
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == 0, result.output
    return result.output


def piped(*args: str) -> str:
    """What a command writes on stdout, the part a pipe carries (titles go to stderr)."""
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def remember(summary: str, *options: str) -> str:
    return json.loads(invoke("remember", summary, *options, "--json"))["id"]


def readable(output: str) -> str:
    assert not PYTHON.search(output), output
    return output


def test_sleep_and_its_report_say_what_each_phase_did() -> None:
    plan = remember("The kiwi launch plan")
    owner = remember("Dana owns the budget", "--link", plan)
    ran = readable(invoke("sleep", "--mode", "edges_only"))
    assert "sweep: no expired state keys" in ran
    assert "edges: decayed 1 edge, pruned 0" in ran
    run_id = re.search(
        r"^run (\S+) \(manual, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\): done", ran, re.M
    )
    assert run_id is not None, ran
    assert f"1 action: kioku sleep report {run_id[1]}" in ran
    report = readable(invoke("sleep", "report", run_id[1]))
    assert "#1 edges: edge weight 0.500 → 0.500" in report  # rounded: it decayed by a hair
    assert f"{min(plan, owner)} ↔ {max(plan, owner)}" in report  # whole, for kioku get
    rolled = readable(invoke("sleep", "rollback", run_id[1]))
    assert f"rolled back {run_id[1]}: 1 change restored" in rolled


def test_get_lists_edges_and_counts_accesses_in_words() -> None:
    plan = remember("The kiwi launch plan", "--tag", "launch", "--tag", "q3")
    owner = remember("Dana owns the budget", "--link", plan)
    shown = readable(invoke("get", plan))
    assert "edges: 1, strongest first" in shown
    assert f"  {owner}  weight 0.500, declared" in shown
    assert "accessed: once, last 20" in shown and "tags: launch, q3" in shown
    assert "importance: 0.50" in shown and "UTC" in shown
    assert "accessed: twice" in invoke("get", plan)
    assert "edges: none" in invoke("get", remember("An island"))


def test_forget_asks_about_one_memory_or_several_in_good_english() -> None:
    remember("The kiwi launch plan")
    one = runner.invoke(app, ["forget", "--query", "kiwi"], input="n\n")
    assert "Forget this memory?" in one.output and "1 memory would be forgotten" in one.output
    remember("The kiwi tasting notes")
    two = runner.invoke(app, ["forget", "--query", "kiwi"], input="n\n")
    assert "Forget these 2 memories?" in two.output


def test_piped_listings_give_whole_ids_first_one_record_a_line() -> None:
    plan = remember("The kiwi launch plan " * 10)  # far wider than 80 columns
    owner = remember("Dana owns the budget", "--link", plan)
    lines = piped("list").splitlines()
    assert len(lines) == 2, lines  # not wrapped at 80 columns
    ids = [line.split("\t")[0] for line in lines]
    assert ids == [owner, plan] and all(UUID.match(i) for i in ids)
    # kioku list | cut -f1 | xargs kioku get
    shown = invoke("get", *ids)
    assert "Dana owns the budget" in shown and "The kiwi launch plan" in shown
    assert [json.loads(line)["id"] for line in invoke("get", *ids, "--json").splitlines()] == ids
    explored = runner.invoke(app, ["explore", plan])
    assert [line.split("\t")[0] for line in explored.stdout.splitlines()] == [owner]  # not cut
    assert f"1 neighbour of {plan}" in explored.stderr  # the title, for the person watching
    contexts = piped("contexts", "list").splitlines()
    assert contexts[0].split("\t")[0] == "default" and UUID.match(contexts[0].split("\t")[-1])
    preview = runner.invoke(app, ["forget", "--query", "kiwi", "--dry-run"])
    assert preview.exit_code == 0 and f"{plan}\tnote\t" in preview.output


def test_keys_speak_plainly() -> None:
    created = readable(invoke("keys", "create", "it's a bot"))
    assert 'member key "it\'s a bot"' in created and 'workspace "default"' in created
    listed = piped("keys", "list").splitlines()
    assert UUID.match(listed[0].split("\t")[0]) and listed[0].endswith("\tactive\tit's a bot")
    missing = runner.invoke(app, ["keys", "list", "--workspace", "nowhere"])
    assert missing.exit_code == 1 and 'no workspace named "nowhere"' in missing.output


def test_contexts_show_has_no_python_values() -> None:
    shown = readable(invoke("contexts", "show", "default"))
    assert "search config: defaults" in shown and "sleep mode: edges_only" in shown
    assert "embedding model: none yet" in shown and "created at: 20" in shown


def test_state_feedback_and_purge_read_as_words() -> None:
    said = invoke("state", "set", "ticket-42", '{"step": 2}')
    assert 'ticket-42 = {"step": 2}  expires in 24 h' in said
    memory = remember("Deploys happen on Fridays")
    invoke("feedback", "add", memory, "--helpful", "--query", "when are deploys?")
    listed = readable(invoke("feedback", "list"))
    assert listed.startswith(f"{memory}\t") and "\thelpful\twhen are deploys?\n" in listed
    invoke("contexts", "create", "scratch")
    invoke("remember", "a scratch note", "-c", "scratch")
    purged = invoke("purge", "--context", "scratch", "--yes")
    assert "purged context scratch: 1 memory, 0 vectors, 0 edges" in purged
    assert "0 feedback events, 0 state keys, 0 Sleep actions" in purged


def test_every_purge_count_has_its_noun() -> None:
    from kioku.cli.import_commands import PURGED
    from kioku.models import PurgeResult

    assert set(PURGED) == set(PurgeResult.model_fields)


@pytest.mark.parametrize("width", [100, 45])
def test_on_a_terminal_a_table_never_cuts_an_id(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wide enough: a table under a header; too narrow for the id: a record a line."""
    import io

    from rich.console import Console

    from kioku.cli import common, human

    screen = io.StringIO()
    monkeypatch.setattr(human, "attached", lambda stream: True)
    monkeypatch.setattr(common, "console", Console(file=screen, width=width))
    uuid = "796eff34-5d0c-4b35-9b7e-2f6f0e4e1a9c"
    columns = [human.Column("id", whole=True), human.Column("summary")]
    human.print_table(columns, [(uuid, "The kiwi launch plan, in some detail " * 3)])
    shown = screen.getvalue()
    assert uuid in shown and "…" not in shown
    assert shown.startswith("id ") == (width == 100), shown
