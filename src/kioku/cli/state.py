"""``kioku state ...``: the TTL key/value lane of an agent loop (never recalled)."""

from __future__ import annotations

import json
from typing import Any

import typer

from kioku.cli.common import (
    ContextOption,
    CursorOption,
    JsonOption,
    UrlOption,
    call_server,
    cli_client,
    cli_runtime,
    console,
    escape,
    handle_errors,
    print_json,
    print_server_json,
)
from kioku.wording import duration

DEFAULT_STATE_TTL = 86_400
"""``kioku.models.DEFAULT_STATE_TTL`` (a test keeps them equal): the models load only when
used."""

app = typer.Typer(
    help="Agent run-state: TTL key/value pairs, never part of recall.", no_args_is_help=True
)


def parse_value(text: str) -> object:
    """JSON if it parses (``42``, ``{"step": 2}``, ``null``), else the text itself as a string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _show(state: dict[str, Any]) -> None:
    """One key for a person (the JSON of State, from a server or not)."""
    seconds = state.get("expires_in_seconds")
    expiry = "never expires" if seconds is None else f"expires in {duration(seconds)}"
    value = json.dumps(state["value"], ensure_ascii=False)
    console.print(f"{escape(state['key'])} = {escape(value)}  [dim]{expiry}[/dim]", soft_wrap=True)


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
    ttl_seconds = None if forever else ttl
    if url:  # the quick path: no SDK to import (kioku.cli.rest)
        from kioku.cli.rest import path

        body = {"value": parse_value(value), "ttl_seconds": ttl_seconds}
        state: Any = call_server(url, "PUT", path("contexts", context, "state", key), body=body)
        if as_json:
            print_server_json(state)
    else:
        with cli_client(url, embed=False) as kioku:
            found = kioku.set_state(context, key, parse_value(value), ttl_seconds=ttl_seconds)
        if as_json:
            print_json(found)
        state = found.model_dump(mode="json")
    if as_json:
        return
    _show(state)
    if state.get("ttl_clamped"):
        console.print("[yellow]ttl was clamped to 1 s..30 days[/yellow]")


@app.command("get")
def get_state(
    key: str,
    context: str = ContextOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Show one live key (exit 1 if it is missing or expired)."""
    if url:  # the quick path: no SDK to import (kioku.cli.rest)
        from kioku.cli.rest import path

        state = call_server(url, "GET", path("contexts", context, "state", key))
        if as_json:
            print_server_json(state)
        else:
            _show(state)
        return
    # Locally the state service itself, without the REST app (nor an embedder): loading
    # FastAPI would cost more than the read.
    with cli_runtime(embed=False) as runtime, handle_errors():
        found = runtime.state.get_state(runtime.local_principal("cli"), context, key)
    if as_json:
        print_json(found)
    else:
        _show(found.model_dump(mode="json"))


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
        _show(state.model_dump(mode="json"))
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
