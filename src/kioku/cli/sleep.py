"""``kioku sleep``: consolidate a context now; ``report`` and ``rollback`` a run."""

from __future__ import annotations

from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from kioku.models.sleep import SleepReport

app = typer.Typer(
    help="Sleep: consolidate a context (merge near-duplicates, decay edges, re-score "
    "importance), show what a run did, roll it back.",
    invoke_without_command=True,
)


def _print_report(report: SleepReport, *, actions: bool) -> None:
    when = f"{report.started_at:%Y-%m-%d %H:%M:%S}"
    console.print(f"run {report.run_id} ({report.trigger}, {when}): [bold]{report.status}[/bold]")
    if report.error:
        console.print(f"  error: {escape(report.error)}")
    for phase, counts in report.summary.items():
        console.print(f"  {phase}: {escape(str(counts))}")
    if actions:
        for action in report.actions:
            note = f"  ({escape(action.note)})" if action.note else ""
            console.print(
                f"  #{action.seq} {action.phase}/{action.kind} {action.target}: "
                f"{escape(str(action.before))} → {escape(str(action.after))}{note}"
            )
    else:
        console.print(f"  {len(report.actions)} actions: kioku sleep report {report.run_id}")


@app.callback()
def sleep(
    ctx: typer.Context,
    context: str = ContextOption,
    mode: str | None = typer.Option(
        None, help="edges_only or full (default: the context's sleep_mode; full if off)."
    ),
    url: str | None = UrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Run Sleep on a context now and print the run (with a subcommand: see below)."""
    if ctx.invoked_subcommand is not None:
        return
    if mode not in (None, "edges_only", "full"):
        raise typer.BadParameter("edges_only or full", param_hint="--mode")
    with cli_client(url, embed=False) as kioku:
        report = kioku.sleep(context, mode=mode)
    if as_json:
        print_json(report)
    else:
        _print_report(report, actions=False)


@app.command("report")
def report(run_id: str, url: str | None = UrlOption, as_json: bool = JsonOption) -> None:
    """Show a run with every action and its values before and after."""
    with cli_client(url, embed=False) as kioku:
        found = kioku.sleep_report(run_id)
    if as_json:
        print_json(found)
    else:
        _print_report(found, actions=True)


@app.command("rollback")
def rollback(run_id: str, url: str | None = UrlOption, as_json: bool = JsonOption) -> None:
    """Restore what a run changed (the context's latest run that is not rolled back)."""
    with cli_client(url, embed=False) as kioku:
        outcome = kioku.rollback_sleep(run_id)
    if as_json:
        print_json(outcome)
        return
    console.print(f"rolled back {outcome.run.run_id}: {outcome.undone} changes restored")
    for skip in outcome.skipped:
        console.print(f"  left #{skip.seq}: {escape(skip.reason)}")
