"""``kioku keys ...``: API keys of a workspace, managed locally on the database file (the
operator's own machine; remotely, use ``POST /api/v1/keys`` with an admin key)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import typer

from kioku.cli.common import (
    JsonOption,
    cli_runtime,
    console,
    err_console,
    escape,
    handle_errors,
    print_json,
)
from kioku.vocabulary import KeyRole
from kioku.wording import quoted

if TYPE_CHECKING:
    from kioku.models import ApiKey
    from kioku.runtime import Runtime
    from kioku.service.principal import Principal

app = typer.Typer(help="API keys: create (shown once), list, revoke.", no_args_is_help=True)
WorkspaceOption = typer.Option("default", "--workspace", "-w", help="Workspace name.")


@contextmanager
def owner_of(workspace: str, *, create: bool = False) -> Iterator[tuple[Runtime, Principal]]:
    """The local runtime and the owner of ``workspace`` (created first if ``create``)."""
    with cli_runtime(embed=False) as runtime, handle_errors():
        owner = runtime.workspaces.owner(workspace, "cli", create=create)
        if owner is None:
            err_console.print(
                f"[red]error[/red] (workspace): no workspace named {escape(quoted(workspace))}"
            )
            raise typer.Exit(1)
        yield runtime, owner


@app.command("create")
def create(
    name: str = typer.Argument(..., help="What the key is for, e.g. 'claude-desktop'."),
    role: KeyRole = typer.Option(
        "member", help="viewer | member | admin | owner | connector (may only ingest)."
    ),
    context: list[str] = typer.Option([], "--context", "-c", help="Allow only these contexts."),
    expires_in_days: int | None = typer.Option(None, min=1, help="Expire after N days."),
    workspace: str = WorkspaceOption,
    as_json: bool = JsonOption,
) -> None:
    """Create a key. The secret is printed once; only its hash is stored. A workspace that does
    not exist yet is created (a new tenant)."""
    expires = None
    if expires_in_days is not None:
        expires = datetime.now(UTC) + timedelta(days=expires_in_days)
    from kioku.models import KeyCreate

    with owner_of(workspace, create=True) as (runtime, owner):
        data = KeyCreate(name=name, role=role, context_ids=context or None, expires_at=expires)
        created = runtime.keys.create_key(owner, data)
    if as_json:
        print_json(created)
        return
    console.print(f"[bold]{created.key}[/bold]")
    console.print(
        f"[dim]{created.role} key {escape(quoted(created.name))} ({created.id}) for workspace "
        f"{escape(quoted(workspace))}. Store it now: it cannot be shown again.[/dim]",
        soft_wrap=True,
    )


@app.command("list")
def list_keys(workspace: str = WorkspaceOption, as_json: bool = JsonOption) -> None:
    """List a workspace's keys (prefixes only)."""
    with owner_of(workspace) as (runtime, owner):
        page = runtime.keys.list_keys(owner)
    if as_json:
        print_json(page)
        return
    from kioku.cli.human import Column, print_table

    columns = [Column("id", whole=True, style="dim"), Column("prefix", whole=True),
               Column("role", whole=True), Column("state", whole=True),
               Column("name")]  # fmt: skip
    rows = [(key.id, f"{key.prefix}…", key.role, _state(key), key.name) for key in page.items]
    if rows:
        print_table(columns, rows)
    else:
        console.print("no keys")


def _state(key: ApiKey) -> str:
    if key.revoked_at:
        return f"revoked {key.revoked_at:%Y-%m-%d}"
    return f"expires {key.expires_at:%Y-%m-%d}" if key.expires_at else "active"


@app.command("revoke")
def revoke(key_id: str, workspace: str = WorkspaceOption) -> None:
    """Revoke a key: it stops working at once."""
    with owner_of(workspace) as (runtime, owner):
        runtime.keys.revoke_key(owner, key_id)
    console.print(f"revoked {key_id}")
