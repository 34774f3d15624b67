"""``kioku contexts ...``: create, list, show, update, delete contexts."""

from __future__ import annotations

from typing import Any

import typer

from kioku.cli.common import JsonOption, UrlOption, cli_client, console, escape, print_json
from kioku.vocabulary import SleepMode, TrustTier

app = typer.Typer(help="Manage contexts (named memory spaces).", no_args_is_help=True)


@app.command("list")
def list_contexts(url: str | None = UrlOption, as_json: bool = JsonOption) -> None:
    """List every context with its memory count."""
    with cli_client(url, embed=False) as kioku:
        page = kioku.list_contexts()
    if as_json:
        print_json(page)
        return
    from rich.table import Table

    table = Table()
    for column in ("name", "memories", "trust", "model", "id"):
        table.add_column(column)
    for ctx in page.items:
        table.add_row(
            ctx.name, str(ctx.memory_count), ctx.trust_tier, ctx.embedding_model or "-", ctx.id
        )
    console.print(table)


@app.command("create")
def create(
    name: str = typer.Argument(..., help="Lowercase letters, digits, - and _ (max 64)."),
    description: str = typer.Option("", help="What this context holds."),
    trust_tier: TrustTier = typer.Option("trusted", help="external for untrusted sources."),
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Create a context."""
    with cli_client(url, embed=False) as kioku:
        ctx = kioku.create_context(name, description=description, trust_tier=trust_tier)
    if as_json:
        print_json(ctx)
    else:
        console.print(f"created context [bold]{ctx.name}[/bold] ({ctx.id})")


@app.command("show")
def show(
    context: str = typer.Argument(..., help="Id or name."),
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Show one context."""
    with cli_client(url, embed=False) as kioku:
        ctx = kioku.get_context(context)
    if as_json:
        print_json(ctx)
        return
    for name, value in ctx.model_dump().items():
        console.print(f"[bold]{name}[/bold]: {escape(str(value))}")


@app.command("update")
def update(
    context: str = typer.Argument(..., help="Id or name."),
    name: str | None = typer.Option(None, help="New name."),
    description: str | None = typer.Option(None, help="New description."),
    trust_tier: TrustTier | None = typer.Option(None, help="trusted or external."),
    sleep_mode: SleepMode | None = typer.Option(None, help="off, edges_only or full."),
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Change a context's fields."""
    options = dict(name=name, description=description, trust_tier=trust_tier, sleep_mode=sleep_mode)
    changes: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
    with cli_client(url, embed=False) as kioku:
        ctx = kioku.update_context(context, **changes)
    if as_json:
        print_json(ctx)
    else:
        console.print(f"updated context [bold]{ctx.name}[/bold]")


@app.command("delete")
def delete(
    context: str = typer.Argument(..., help="Id or name."),
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
    url: str | None = UrlOption,
) -> None:
    """Delete a context and every memory in it, for good."""
    if not yes:
        typer.confirm(f"Delete context {context} and all its memories?", abort=True)
    with cli_client(url, embed=False) as kioku:
        kioku.delete_context(context)
    console.print(f"deleted context {context}")
