"""``kioku import slack|markdown|workspace`` and ``kioku purge``.

``kioku import FILE`` (no subcommand) still imports a workspace export, as before the
connectors: the group hands any first argument that is not a subcommand to ``workspace``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from kioku.cli import transfer
from kioku.cli.common import (
    ContextOption,
    JsonOption,
    cli_runtime,
    console,
    count,
    err_console,
    handle_errors,
    print_json,
)
from kioku.errors import InvalidInputError
from kioku.wording import quoted

if TYPE_CHECKING:
    from rich.progress import Progress

    from kioku.connectors.slack import Granularity


class _ImportGroup(TyperGroup):
    """Subcommands, with ``workspace`` as the default for a bare file argument."""

    # ctx typed loosely: typer vendors its own click, whose types are private to it.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # Before the group reads options: "kioku import -w copy -" is the workspace import.
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["workspace", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(
    cls=_ImportGroup,
    no_args_is_help=True,
    help="Import data: a Slack export, a Markdown folder, or a whole workspace written by "
    "kioku export (kioku import FILE.jsonl is kioku import workspace FILE.jsonl). "
    "kioku import-jsonl is different: it adds plain JSON memories to one context.",
)
app.command("workspace")(transfer.import_workspace)


def _progress(quiet: bool) -> Progress:
    from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        MofNCompleteColumn(),
        console=console,
        disable=quiet,
        transient=True,
    )


@app.command("slack")
def slack(
    archive: Path = typer.Argument(..., exists=True, help="The export zip (or its folder)."),
    per: str = typer.Option(
        "thread", "--per", help="thread (default: a thread is one memory) or message."
    ),
    source: str = typer.Option(
        "slack", "--source", help="Name of the Slack workspace, if several feed this one."
    ),
    embed: bool = typer.Option(True, "--embed/--no-embed", help="Embed now (else later)."),
    as_json: bool = JsonOption,
) -> None:
    """Import a Slack workspace export: one external context per channel (slack-<name>),
    stamped source_type=connector. Re-importing changes only what changed in Slack."""
    from kioku.connectors.slack import import_slack

    if per not in ("thread", "message"):
        raise typer.BadParameter("thread or message", param_hint="--per")
    granularity: Granularity = "thread" if per == "thread" else "message"
    warnings: list[str] = []
    with cli_runtime(embed=embed) as runtime, handle_errors(), _progress(as_json) as bar:
        task = bar.add_task(f"importing {archive.name}", total=None)
        summaries = import_slack(
            runtime.connectors,
            runtime.local_principal("connector"),
            archive,
            granularity=granularity,
            source=source,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
            warn=warnings.append,
        )
    if as_json:
        print_json(
            {
                "channels": [
                    {"channel": s.channel, "channel_id": s.channel_id, "context": s.context,
                     "counts": dict(s.counts)}
                    for s in summaries
                ],
                "warnings": warnings,
            }
        )  # fmt: skip
        return
    for warning in warnings:
        err_console.print(f"[yellow]warning[/yellow]: {warning}", soft_wrap=True, highlight=False)
    for s in summaries:
        console.print(
            f"#{s.channel} → {s.context}: {_counts(s.counts)}", soft_wrap=True, highlight=False
        )


@app.command("markdown")
def markdown(
    folder: Path = typer.Argument(..., exists=True, file_okay=False, help="Folder of .md files."),
    context: str = ContextOption,
    embed: bool = typer.Option(True, "--embed/--no-embed", help="Embed now (else later)."),
    as_json: bool = JsonOption,
) -> None:
    """Import a folder of Markdown files: one memory per section, front-matter tags,
    source_uri = the file's path in the folder. Re-importing changes only what changed."""
    from kioku.connectors.markdown import import_markdown

    with cli_runtime(embed=embed) as runtime, handle_errors(), _progress(as_json) as bar:
        task = bar.add_task(f"importing {folder.name}", total=None)
        counts = import_markdown(
            runtime.connectors,
            runtime.local_principal("import"),
            folder,
            context,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    if as_json:
        print_json({"context": context, "counts": dict(counts)})
        return
    console.print(f"{folder} → {context}: {_counts(counts)}", soft_wrap=True, highlight=False)


def _counts(counts: Counter[str]) -> str:
    order = ("created", "updated", "unchanged", "deleted", "absent")
    return ", ".join(f"{counts[name]} {name}" for name in order if counts[name]) or "nothing"


def purge(
    context: str | None = typer.Option(
        None, "--context", "-c", help="Erase every memory of this context (id or name)."
    ),
    source_prefix: str | None = typer.Option(
        None, "--source-prefix", help="Erase every memory whose source_uri starts with this."
    ),
    yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation."),
    as_json: bool = JsonOption,
) -> None:
    """Erase for good every trace of a context's memories or of a source (GDPR-style):
    rows, vectors, index entries, edges, feedback; says what it removed."""
    from kioku.models import PurgeSource

    with handle_errors():
        if context is None and source_prefix is None:
            raise InvalidInputError("give --context, --source-prefix, or both", field="context")
    target = f"source {quoted(source_prefix)}" if source_prefix else f"context {context}"
    if not yes:
        typer.confirm(f"Erase every memory of {target} for good?", abort=True)
    with cli_runtime(embed=False) as runtime, handle_errors():
        principal = runtime.local_principal("cli")
        if source_prefix is None:
            assert context is not None
            result = runtime.purge.purge_context(principal, context)
        else:
            request = PurgeSource(source_uri_prefix=source_prefix, context_id=context)
            result = runtime.purge.purge_source(principal, request)
    if as_json:
        print_json(result)
        return
    removed = ", ".join(count(value, *PURGED[name]) for name, value in result)
    console.print(f"purged {target}: {removed}", soft_wrap=True, highlight=False)


PURGED = {
    "memories": ("memory", "memories"), "vectors": ("vector",), "edges": ("edge",),
    "feedback": ("feedback event",), "state_keys": ("state key",),
    "sleep_actions": ("Sleep action",), "ingest_requests": ("ingest request",),
}  # fmt: skip
"""The nouns of a purge's counts (``kioku.models.PurgeResult``'s fields)."""
