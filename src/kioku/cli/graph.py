"""``kioku explore``: the association graph around one memory."""

from __future__ import annotations

import typer

from kioku.cli.common import (
    ContextOption,
    JsonOption,
    UrlOption,
    cli_client,
    console,
    count,
    print_json,
)
from kioku.vocabulary import TrustTier
from kioku.wording import number


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
    from kioku.cli.human import Column, print_table

    title = f"{count(len(result.neighbours), 'neighbour')} of {memory_id}"
    columns = [
        Column("id", whole=True, style="dim"), Column("activation", whole=True, justify="right"),
        Column("hops", whole=True, justify="right"), Column("trust", whole=True),
        Column("summary"),
    ]  # fmt: skip
    rows = [
        (n.id, number(n.activation, 4), str(n.hops),
         (f"{n.trust_tier}, suspicious", "red") if n.suspicious else n.trust_tier, n.summary)
        for n in result.neighbours
    ]  # fmt: skip
    print_table(columns, rows, title=title)
