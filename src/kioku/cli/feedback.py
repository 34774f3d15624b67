"""``kioku feedback ...``: record whether a memory helped, and read the (append-only) log."""

from __future__ import annotations

import typer

from kioku.cli.common import (
    ContextOption,
    CursorOption,
    JsonOption,
    UrlOption,
    cli_client,
    console,
    print_json,
)

app = typer.Typer(help="Retrieval feedback: append-only, never recalled.", no_args_is_help=True)


@app.command("add")
def add(
    memory_id: str,
    helpful: bool = typer.Option(..., "--helpful/--unhelpful", help="Did the memory help?"),
    query: str | None = typer.Option(None, help="The query it was recalled for."),
    note: str | None = typer.Option(None, help="Why (free text)."),
    context: str = ContextOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Append a helpful/unhelpful event for MEMORY_ID (it nudges the bounded re-ranker)."""
    with cli_client(url, embed=False) as kioku:
        event = kioku.feedback(context, memory_id, helpful, query=query, note=note)
    if as_json:
        print_json(event)
    else:
        console.print(f"recorded {event.feedback_id}")


@app.command("list")
def list_feedback(
    memory: str | None = typer.Option(None, "--memory", help="Only this memory's events."),
    context: str = ContextOption,
    limit: int = typer.Option(50, help="Events per page (1..200)."),
    cursor: str | None = CursorOption,
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Show feedback events, newest first."""
    with cli_client(url, embed=False) as kioku:
        page = kioku.list_feedback(context, memory_id=memory, cursor=cursor, limit=limit)
    if as_json:
        print_json(page)
        return
    from kioku.cli.human import Cell, Column, print_table

    columns = [Column("memory", whole=True, style="dim"), Column("when", whole=True),
               Column("verdict", whole=True), Column("query")]  # fmt: skip
    rows: list[list[Cell]] = [
        [event.memory_id, f"{event.created_at:%Y-%m-%d %H:%M}",
         ("helpful", "green") if event.helpful else ("unhelpful", "red"), event.query or ""]
        for event in page.items
    ]  # fmt: skip
    if any(event.note for event in page.items):  # a column only when some event has one
        columns.append(Column("note"))
        for row, event in zip(rows, page.items, strict=True):
            row.append(event.note or "")
    if rows:
        print_table(columns, rows)
    else:
        console.print("no feedback yet")
    if page.next_cursor:
        console.print(f"more: --cursor {page.next_cursor}", soft_wrap=True)
