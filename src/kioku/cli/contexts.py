"""``kioku contexts ...``: create, list, show, update, delete contexts."""

from __future__ import annotations

from typing import Any

import typer

from kioku.cli.common import JsonOption, UrlOption, cli_client, console, print_json
from kioku.vocabulary import SleepMode, TrustTier
from kioku.wording import plain

app = typer.Typer(help="Manage contexts (named memory spaces).", no_args_is_help=True)


@app.command("list")
def list_contexts(url: str | None = UrlOption, as_json: bool = JsonOption) -> None:
    """List every context with its memory count."""
    with cli_client(url, embed=False) as kioku:
        page = kioku.list_contexts()
    if as_json:
        print_json(page)
        return
    from kioku.cli.human import Column, print_table

    columns = [Column("name", whole=True), Column("memories", whole=True, justify="right"),
               Column("trust", whole=True), Column("model"),
               Column("id", whole=True, style="dim")]  # fmt: skip
    rows = [(c.name, str(c.memory_count), c.trust_tier, c.embedding_model or "-", c.id)
            for c in page.items]  # fmt: skip
    print_table(columns, rows)


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
    from kioku.cli.human import print_fields, when

    model = ctx.embedding_model
    if model and ctx.embedding_dim:
        model += f" ({ctx.embedding_dim} dimensions)"
    print_fields([
        ("id", ctx.id),
        ("name", ctx.name),
        ("description", ctx.description),
        ("memories", str(ctx.memory_count)),
        ("trust tier", ctx.trust_tier),
        ("sleep mode", ctx.sleep_mode),
        ("search config", plain(ctx.search_config) if ctx.search_config else "defaults"),
        ("embedding model", model or "none yet (set by its first vector)"),
        ("connector", ctx.connector_id),
        ("created at", when(ctx.created_at)),
        ("updated at", when(ctx.updated_at)),
        ("workspace id", ctx.workspace_id),
    ])  # fmt: skip


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
