"""``kioku setup claude-code`` in a scratch HOME: merged into the user's files, never clobbering
another server or hook, idempotent, no key written, ``--remove`` gives back the very bytes it
found; and the real Claude Code CLI (npm ``@anthropic-ai/claude-code``) run from an unrelated
folder lists kioku as connected (issue 36)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import free_port, kioku_env, running_server

BIN = Path(sys.executable).parent
USER_SETTINGS = {  # written by hand with four-space indents and a hook of another tool
    "model": "sonnet",
    "hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo other-tool"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}],
    },
}
USER_CONFIG = {"mcpServers": {"github": {"type": "http", "url": "https://example.test/mcp"}}}


def kioku_setup(home: Path, *args: str, env: dict[str, str] | None = None) -> str:
    environment = {**kioku_env(home), "HOME": str(home), **(env or {})}
    environment.pop("CLAUDE_CONFIG_DIR", None)
    done = subprocess.run([str(BIN / "kioku"), "setup", "claude-code", *args], env=environment,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=4))
    (home / ".claude.json").write_text(json.dumps(USER_CONFIG))
    return home


def files(home: Path) -> tuple[bytes, bytes]:
    return (home / ".claude" / "settings.json").read_bytes(), (home / ".claude.json").read_bytes()


def test_setup_merges_and_remove_gives_back_the_same_bytes(home: Path) -> None:
    before = files(home)
    url = f"http://127.0.0.1:{free_port()}"  # no server: command hooks, stdio MCP
    kioku_setup(home, "--url", url, env={"KIOKU_API_KEY": "kk_secret_never_written"})
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    config = json.loads((home / ".claude.json").read_text())
    # Others' entries kept, in place; kioku's added after them.
    assert settings["model"] == "sonnet"
    assert settings["hooks"]["PreToolUse"] == USER_SETTINGS["hooks"]["PreToolUse"]
    prompt_groups = settings["hooks"]["UserPromptSubmit"]
    assert prompt_groups[0] == USER_SETTINGS["hooks"]["UserPromptSubmit"][0]
    assert "kioku-hook" in prompt_groups[1]["hooks"][0]["command"]
    assert settings["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    assert config["mcpServers"]["github"] == USER_CONFIG["mcpServers"]["github"]
    kioku = config["mcpServers"]["kioku"]
    assert kioku["type"] == "stdio" and kioku["args"] == ["mcp"]
    assert Path(kioku["command"]).is_absolute() and Path(kioku["command"]).name == "kioku"
    for text in files(home):
        assert b"kk_secret_never_written" not in text  # the key stays in the environment
    # Idempotent: a second run changes nothing.
    after_first = files(home)
    kioku_setup(home, "--url", url)
    assert files(home) == after_first
    kioku_setup(home, "--remove")
    assert files(home) == before
    assert not list(home.rglob("*.kioku-backup"))


def test_remove_keeps_what_the_user_changed_since_and_deletes_files_it_made(
    tmp_path: Path,
) -> None:
    home = tmp_path / "empty-home"
    home.mkdir()
    kioku_setup(home, "--url", f"http://127.0.0.1:{free_port()}", "--hooks", "http")
    assert (home / ".claude.json").exists() and (home / ".claude" / "settings.json").exists()
    kioku_setup(home, "--remove")
    assert not (home / ".claude.json").exists()  # there was none before
    assert not (home / ".claude" / "settings.json").exists()
    # Changed by the user after setup: only kioku's entries go.
    kioku_setup(home, "--url", f"http://127.0.0.1:{free_port()}")
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    settings["theme"] = "dark"
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    kioku_setup(home, "--remove")
    assert json.loads((home / ".claude" / "settings.json").read_text()) == {"theme": "dark"}


def test_dry_run_writes_nothing_and_shows_the_change(home: Path) -> None:
    before = files(home)
    shown = kioku_setup(home, "--url", f"http://127.0.0.1:{free_port()}", "--dry-run")
    assert files(home) == before and not list(home.rglob("*.kioku-backup"))
    assert "would change" in shown and "+" in shown


def test_a_settings_file_that_is_not_json_is_left_alone(home: Path) -> None:
    (home / ".claude" / "settings.json").write_text("{ not json")
    done = subprocess.run([str(BIN / "kioku"), "setup", "claude-code"],
                          env={**kioku_env(home), "HOME": str(home)},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1 and "not valid JSON" in done.stderr
    assert (home / ".claude" / "settings.json").read_text() == "{ not json"


# -- the real Claude Code CLI -----------------------------------------------------------------


def claude_cli() -> str | None:
    """Claude Code's CLI: ``KIOKU_TEST_CLAUDE``, on PATH, or where .ci/run installs it."""
    found = os.environ.get("KIOKU_TEST_CLAUDE") or shutil.which("claude")
    local = (
        Path(__file__).resolve().parents[2] / ".ci" / "node" / "node_modules" / ".bin" / "claude"
    )
    return found or (str(local) if local.exists() else None)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with running_server(tmp_path, "--dev") as base:
        yield base


SCHEMA_EVENTS = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}


def check_documented_shape(settings: dict[str, Any], config: dict[str, Any]) -> None:
    """Claude Code's documented settings shape (hooks reference: events → matcher groups →
    handlers of type command/http; MCP: user scope is ``mcpServers`` in ~/.claude.json)."""
    for event, groups in settings["hooks"].items():
        assert event in SCHEMA_EVENTS
        for group in groups:
            assert set(group) <= {"matcher", "hooks"} and isinstance(group["hooks"], list)
            for handler in group["hooks"]:
                assert handler["type"] in ("command", "http")
                assert isinstance(handler.get("timeout", 1), int)
                if handler["type"] == "http":
                    assert handler["url"].startswith("http") and "allowedEnvVars" in handler
    entry = config["mcpServers"]["kioku"]
    assert entry["type"] in ("http", "stdio")


def test_claude_code_lists_kioku_connected_from_any_folder(tmp_path: Path, server: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    kioku_setup(home, "--url", server)
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    config = json.loads((home / ".claude.json").read_text())
    assert config["mcpServers"]["kioku"] == {
        "type": "http",
        "url": f"{server}/mcp",
        "headers": {"Authorization": "Bearer ${KIOKU_API_KEY:-}"},
    }
    check_documented_shape(settings, config)
    claude = claude_cli()
    if claude is None:
        warnings.warn(
            "Claude Code's CLI is not installed (npm i @anthropic-ai/claude-code, or set "
            "KIOKU_TEST_CLAUDE): the settings were checked against its documented shape only",
            stacklevel=1,
        )
        return
    elsewhere = tmp_path / "some-other-project"
    elsewhere.mkdir()
    env = {**os.environ, "HOME": str(home), "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip
    env.pop("CLAUDE_CONFIG_DIR", None)
    listed = subprocess.run([claude, "mcp", "list"], cwd=elsewhere, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert listed.returncode == 0, listed.stdout + listed.stderr
    line = next(line for line in listed.stdout.splitlines() if line.startswith("kioku:"))
    assert f"{server}/mcp" in line and "Connected" in line, listed.stdout


# -- the plugin layout --------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "integrations" / "claude-code"


def test_the_plugin_carries_what_setup_writes_for_the_default_server() -> None:
    from kioku.cli.claude_code import HookConfig, hook_groups, hook_handler, mcp_entry

    default = "http://127.0.0.1:8765"
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    expected = hook_groups(hook_handler("http", default, HookConfig()))
    assert {event: groups[0] for event, groups in hooks.items()} == expected
    servers = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]
    assert servers == {"kioku": mcp_entry(default, server_answers=True)}
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    marketplace = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    assert manifest["name"] == "kioku" and marketplace["plugins"][0]["name"] == "kioku"
    assert (REPO / marketplace["plugins"][0]["source"]).resolve() == PLUGIN


def test_claude_code_validates_and_installs_the_plugin_from_a_clone(tmp_path: Path) -> None:
    claude = claude_cli()
    if claude is None:
        warnings.warn(
            "Claude Code's CLI is not installed: the plugin was not installed", stacklevel=1
        )
        return
    env = {**os.environ, "HOME": str(tmp_path), "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip
    env.pop("CLAUDE_CONFIG_DIR", None)

    def claude_says(*args: str) -> str:
        done = subprocess.run([claude, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "Validation passed" in claude_says("plugin", "validate", "--strict", str(REPO))
    assert "Validation passed" in claude_says("plugin", "validate", "--strict", str(PLUGIN))
    claude_says("plugin", "marketplace", "add", str(REPO))
    claude_says("plugin", "install", "kioku@kioku")
    assert "kioku@kioku" in claude_says("plugin", "list")
    assert "plugin:kioku:kioku: http://127.0.0.1:8765/mcp" in claude_says("mcp", "list")
