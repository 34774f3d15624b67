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
    count,
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


def print_report(report: SleepReport, *, actions: bool) -> None:
    """A run for a person: what each phase did (``kioku.cli.sleep_view``); with ``actions``,
    each change on its line and the ids it touched, whole, on the next."""
    from kioku.cli.human import when
    from kioku.cli.sleep_view import action_lines, phase_lines

    status = report.status.replace("_", " ")
    console.print(
        f"run {report.run_id} ({report.trigger}, {when(report.started_at)}): [bold]{status}[/bold]",
        soft_wrap=True,
    )
    if report.error:
        console.print(f"  error: {escape(report.error)}", soft_wrap=True)
    for line in phase_lines(report.summary):
        console.print(f"  {escape(line)}", soft_wrap=True)
    if not actions:
        console.print(
            f"  {count(len(report.actions), 'action')}: kioku sleep report {report.run_id}",
            soft_wrap=True,
        )
        return
    for action in report.actions:
        what, ids = action_lines(action, report.context_id)
        console.print(f"  #{action.seq} {action.phase}: {escape(what)}", soft_wrap=True)
        if ids:
            console.print(f"      [dim]{escape(ids)}[/dim]", soft_wrap=True)


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
        print_report(report, actions=False)


@app.command("report")
def report(run_id: str, url: str | None = UrlOption, as_json: bool = JsonOption) -> None:
    """Show a run with every action and its values before and after."""
    with cli_client(url, embed=False) as kioku:
        found = kioku.sleep_report(run_id)
    if as_json:
        print_json(found)
    else:
        print_report(found, actions=True)


@app.command("rollback")
def rollback(run_id: str, url: str | None = UrlOption, as_json: bool = JsonOption) -> None:
    """Restore what a run changed (the context's latest run that is not rolled back)."""
    with cli_client(url, embed=False) as kioku:
        outcome = kioku.rollback_sleep(run_id)
    if as_json:
        print_json(outcome)
        return
    restored = count(outcome.undone, "change")
    console.print(f"rolled back {outcome.run.run_id}: {restored} restored", soft_wrap=True)
    for skip in outcome.skipped:
        console.print(f"  left #{skip.seq}: {escape(skip.reason)}")
