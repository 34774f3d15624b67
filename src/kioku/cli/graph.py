"""``kioku explore``: the association graph around one memory."""

from __future__ import annotations

import typer

from kioku.cli.common import (
    ContextOption,
    JsonOption,
    UrlOption,
    cli_client,
    console,
    escape,
    print_json,
)
from kioku.vocabulary import TrustTier


def explore(
    memory_id: str = typer.Argument(..., help="The memory to start from."),
    depth: int = typer.Option(2, min=1, max=3, help="Hops to spread (1-3)."),
    min_weight: float = typer.Option(0.05, min=0.0, max=1.0, help="Weaker edges are ignored."),
    limit: int = typer.Option(20, min=1, max=100, help="At most this many neighbours."),
    trust_tier: TrustTier | None = typer.Option(
        None, help="trusted: no external memory shown or passed through."
    ),
    context: str = ContextOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Spreading activation: memories associated with one memory, with activation and path."""
    filters = {"trust_tier": trust_tier} if trust_tier else None
    with cli_client(url, embed=False) as kioku:
        result = kioku.explore(
            context, memory_id, depth=depth, min_weight=min_weight, limit=limit, filters=filters
        )
    if as_json:
        print_json(result)
        return
    if not result.neighbours:
        console.print("no associated memories")
        return
    from rich.table import Table

    table = Table(title=f"{len(result.neighbours)} neighbours of {memory_id}")
    table.add_column("activation", justify="right")
    table.add_column("hops", justify="right")
    table.add_column("summary")
    table.add_column("trust")
    table.add_column("id", style="dim")
    for n in result.neighbours:
        trust = n.trust_tier + (" [red]suspicious[/red]" if n.suspicious else "")
        table.add_row(f"{n.activation:.4f}", str(n.hops), escape(n.summary), trust, n.id)
    console.print(table)
