"""``kioku state ...``: the TTL key/value lane of an agent loop (never recalled)."""

from __future__ import annotations

import json

import typer
from rich.markup import escape

from kioku.cli.common import (
    ContextOption,
    CursorOption,
    JsonOption,
    UrlOption,
    cli_client,
    console,
    print_json,
)
from kioku.models import DEFAULT_STATE_TTL, State

app = typer.Typer(
    help="Agent run-state: TTL key/value pairs, never part of recall.", no_args_is_help=True
)


def parse_value(text: str) -> object:
    """JSON if it parses (``42``, ``{"step": 2}``, ``null``), else the text itself as a string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _show(state: State) -> None:
    expiry = (
        "never expires"
        if state.expires_in_seconds is None
        else f"expires in {state.expires_in_seconds}s"
    )
    value = json.dumps(state.value, ensure_ascii=False)
    console.print(f"{escape(state.key)} = {escape(value)}  [dim]{expiry}[/dim]")


@app.command("set")
def set_state(
    key: str = typer.Argument(..., help="1-256 characters, no '/'."),
    value: str = typer.Argument(..., help='JSON (42, [1,2], {"a":1}); anything else is text.'),
    context: str = ContextOption,
    ttl: int = typer.Option(DEFAULT_STATE_TTL, "--ttl", help="Seconds to live (1 s..30 days)."),
    forever: bool = typer.Option(False, "--forever", help="Never expire (overrides --ttl)."),
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Set KEY to VALUE (last writer wins); expires after --ttl seconds unless --forever."""
    with cli_client(url, embed=False) as kioku:
        ttl_seconds = None if forever else ttl
        state = kioku.set_state(context, key, parse_value(value), ttl_seconds=ttl_seconds)
    if as_json:
        print_json(state)
        return
    _show(state)
    if state.ttl_clamped:
        console.print("[yellow]ttl was clamped to 1 s..30 days[/yellow]")


@app.command("get")
def get_state(
    key: str,
    context: str = ContextOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Show one live key (exit 1 if it is missing or expired)."""
    with cli_client(url, embed=False) as kioku:
        state = kioku.get_state(context, key)
    if as_json:
        print_json(state)
    else:
        _show(state)


@app.command("list")
def list_state(
    context: str = ContextOption,
    limit: int = typer.Option(100, help="Keys per page (1..1000)."),
    cursor: str | None = CursorOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """List the live keys of a context, in key order."""
    with cli_client(url, embed=False) as kioku:
        page = kioku.list_state(context, cursor=cursor, limit=limit)
    if as_json:
        print_json(page)
        return
    for state in page.items:
        _show(state)
    if not page.items:
        console.print("no live keys")
    if page.next_cursor:
        console.print(f"more: --cursor {page.next_cursor}")


@app.command("delete")
def delete_state(key: str, context: str = ContextOption, url: str | None = UrlOption) -> None:
    """Delete a key (exit 1 if it is missing or expired)."""
    with cli_client(url, embed=False) as kioku:
        kioku.delete_state(context, key)
    console.print(f"deleted {escape(key)}")
