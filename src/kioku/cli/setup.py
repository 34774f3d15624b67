"""``kioku setup``: put kioku inside the agents people use (docs/integrations.md)."""

from __future__ import annotations

import difflib
import json
import os
from enum import StrEnum
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from kioku.cli.claude_code import (
    Change,
    HookConfig,
    Paths,
    SettingsError,
    apply,
    hook_handler,
    mcp_entry,
    plan_remove,
    plan_setup,
    read_json,
    with_kioku_hooks,
    with_mcp_server,
    without_kioku_hooks,
    without_mcp_server,
)
from kioku.settings import client as client_settings

app = typer.Typer(help="Put kioku inside the agents you use (Claude Code).", no_args_is_help=True)
console = Console()
err_console = Console(stderr=True)
DEFAULT_URL = client_settings.DEFAULT_URL


@app.callback()
def setup() -> None:
    """Put kioku inside the agents you use: `kioku setup claude-code`."""


class Form(StrEnum):
    auto = "auto"
    http = "http"
    command = "command"


class McpForm(StrEnum):
    auto = "auto"
    http = "http"
    stdio = "stdio"


class Trust(StrEnum):
    trusted = "trusted"
    all = "all"


class Level(StrEnum):
    high = "high"
    moderate = "moderate"
    low = "low"
    none = "none"


def server_answers(url: str) -> bool:
    """Whether a kioku server answers ``GET /health`` at ``url`` (within a second)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "127.0.0.1", parts.port, timeout=1.0)
    try:
        connection.request("GET", parts.path.rstrip("/") + "/health")
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def _show(change: Change) -> None:
    before = (change.before or "").splitlines(keepends=True)
    after = (change.after or "").splitlines(keepends=True)
    name = str(change.path)
    for line in difflib.unified_diff(before, after, f"{name} (now)", f"{name} (after)"):
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
        console.print(escape(line.rstrip("\n")), style=style, highlight=False)


@app.command("claude-code")
def claude_code(
    url: str = typer.Option(
        DEFAULT_URL, "--url", envvar=client_settings.URL, help="The kioku server the hooks ask."
    ),
    context: list[str] = typer.Option(
        ["default"], "--context", "-c", help="Context whose pinned rules every turn gets (repeat)."
    ),
    trust: Trust = typer.Option(
        Trust.trusted, help="trusted: only memories that may be obeyed; all: external too."
    ),
    min_confidence: Level = typer.Option(
        Level.moderate, help="Add memories for a prompt only when recall is at least this sure."
    ),
    capture: bool = typer.Option(
        False, "--capture", help="Also store each prompt, in a thread per Claude Code session."
    ),
    hooks: Form = typer.Option(
        Form.auto,
        help="http: Claude Code posts to the server; command: runs kioku-hook. "
        "auto: http when a server answers at --url, else command.",
    ),
    mcp: McpForm = typer.Option(
        McpForm.auto, help="auto: http when a server answers at --url, else stdio (kioku mcp)."
    ),
    remove: bool = typer.Option(False, "--remove", help="Take kioku out of Claude Code again."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Show the changes; write nothing."),
    json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON."),
) -> None:
    """Register kioku with Claude Code for every project (MCP at user scope) and install
    hooks that add the pinned rules (and memories for each prompt) to every turn.

    Merges into ~/.claude.json and ~/.claude/settings.json (other servers and hooks are kept,
    the files as they were are saved beside them as *.kioku-backup); running it again
    replaces kioku's entries; --remove takes them out. The API key is never written into
    these files: export KIOKU_API_KEY (or, for command hooks, put it in
    ~/.config/kioku/api-key with mode 0600)."""
    paths = Paths.of(Path.home(), os.environ.get("CLAUDE_CONFIG_DIR"))
    try:
        config, settings = read_json(paths.global_config), read_json(paths.settings)
    except SettingsError as exc:
        err_console.print(f"[red]Error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from None
    answers = server_answers(url) if Form.auto in (hooks, mcp) else False
    hook_form = hooks.value if hooks is not Form.auto else ("http" if answers else "command")
    mcp_form = mcp.value if mcp is not McpForm.auto else ("http" if answers else "stdio")
    hook_config = HookConfig(tuple(context), trust.value, min_confidence.value, capture)
    handler = hook_handler(hook_form, url, hook_config)
    server = mcp_entry(url, mcp_form == "http")
    if remove:
        changes = [
            plan_remove(paths.global_config, without_mcp_server(config)),
            plan_remove(paths.settings, without_kioku_hooks(settings)),
        ]
    else:
        changes = [
            plan_setup(paths.global_config, with_mcp_server(config, server)),
            plan_setup(paths.settings, with_kioku_hooks(settings, handler)),
        ]
    if not dry_run:
        for change in changes:
            apply(change, keep_backup=not remove)
    if json_out:
        report = {
            "action": "remove" if remove else "setup",
            "dry_run": dry_run,
            "server_answers": answers,
            "files": [{"path": str(c.path), "changed": c.changed} for c in changes],
            **({} if remove else {"mcp": server, "hook": handler}),
        }
        print(json.dumps(report, indent=2))
        return
    for change in changes:
        verb = "would change" if dry_run else "changed"
        state = verb if change.changed else "unchanged"
        console.print(f"{escape(str(change.path))}: {state}")
        if dry_run and change.changed:
            _show(change)
    if remove:
        console.print("kioku is out of Claude Code" + (" (dry run)" if dry_run else "") + ".")
        return
    console.print(
        f"MCP server 'kioku' at user scope: {mcp_form}"
        + (f" ({escape(server['url'])})" if mcp_form == "http" else " (kioku mcp)")
    )
    console.print(
        f"hooks: SessionStart, UserPromptSubmit ({hook_form}, contexts: {', '.join(context)})"
    )
    if not answers:
        console.print(
            f"[yellow]No kioku server answers at {escape(url)} yet[/yellow]: the hooks need one "
            "(`kioku serve --dev`, or `make run` in a clone); until then they add nothing and "
            "never block a prompt."
        )
    console.print(
        "A server that requires keys: export KIOKU_API_KEY=kk_... where Claude Code runs. "
        "Check with `claude mcp list` from any folder; undo with "
        "`kioku setup claude-code --remove`."
    )
