"""``kioku export`` and ``kioku import``: move a whole workspace between databases as JSONL.

Both open the database for a transfer (``kioku.service.database_admin``), not a runtime: no
embedder is loaded (vectors travel in the file), and a fresh target database gets no
``default`` workspace or context before the import (they would collide with the imported
ones).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kioku.cli.common import (
    JsonOption,
    console,
    count,
    err_console,
    handle_errors,
    print_json,
)

if TYPE_CHECKING:
    from rich.console import Console

    from kioku.service.transfer import TransferSummary

DatabaseUrlOption = typer.Option(
    None,
    "--database-url",
    help="The database to use (default: KIOKU_DATABASE_URL, else the local SQLite file).",
    show_default=False,
)


def export(
    workspace: str = typer.Option("default", "--workspace", "-w", help="Workspace to export."),
    out: str = typer.Option("-", "--out", "-o", help="File to write; - (the default) is stdout."),
    database_url: str | None = DatabaseUrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Export a whole workspace as JSONL: contexts, memories with vectors, feedback, state.

    Lossless (ids, timestamps, provenance, counters, soft-deleted memories included) and
    canonical: the same rows give the same bytes from SQLite or PostgreSQL. Expired state keys
    are left out. Read it back with kioku import.
    """
    from kioku.clock import system_clock
    from kioku.service.database_admin import open_transfer
    from kioku.settings import Settings

    # With the data on stdout, the progress bar and the summary go to stderr.
    report = err_console if out == "-" else console
    with (
        handle_errors(),
        open_transfer(database_url or Settings().database.url) as database,
        _counter(report, as_json) as progress,
        _output(out) as write,
    ):
        summary = database.export_workspace(
            workspace, system_clock(), write, progress(f"exporting {workspace}")
        )
    _report(report, as_json, "exported", summary, out)


def import_workspace(
    path: str = typer.Argument(..., help="A file written by kioku export; - reads stdin."),
    workspace: str | None = typer.Option(
        None,
        "--workspace",
        "-w",
        help="Target workspace (default: the exported one); created if missing.",
        show_default=False,
    ),
    database_url: str | None = DatabaseUrlOption,
    as_json: bool = JsonOption,
) -> None:
    """Import a whole workspace written by kioku export, as it was (ids, vectors, provenance).

    Every line is checked first and the rows are written in one transaction: a bad line, an id
    the database already holds or a context name the workspace already uses for a context that
    holds memories or state writes nothing. A context of that name that is empty (the default
    a kioku serve made) takes the file's context, and keeps its id.
    (kioku import-jsonl is different: it adds new memories from plain JSON objects to one
    context, as remember does, stamped source_type=import.)
    """
    from kioku.service.database_admin import open_transfer
    from kioku.settings import Settings

    with (
        _input(path) as source,
        handle_errors(),
        open_transfer(database_url or Settings().database.url) as database,
        _counter(console, as_json) as progress,
    ):
        summary = database.import_file(source, workspace, progress(f"importing {path}"))
    _report(console, as_json, "imported", summary, path)


# ---------------------------------------------------------------- plumbing


@contextmanager
def _counter(
    target: Console, quiet: bool
) -> Iterator[Callable[[str], Callable[[int, int | None], None]]]:
    """A progress bar on ``target`` (none with --json); yields a maker of update callbacks."""
    from rich.progress import MofNCompleteColumn, Progress, SpinnerColumn, TextColumn

    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        MofNCompleteColumn(),
        console=target,
        disable=quiet,
        transient=True,
    ) as progress:

        def start(description: str) -> Callable[[int, int | None], None]:
            task = progress.add_task(description, total=None)
            return lambda done, total: progress.update(task, completed=done, total=total)

        yield start


@contextmanager
def _output(out: str) -> Iterator[Callable[[str], object]]:
    """Where the lines go: stdout, or a file that appears whole (written beside, then moved)."""
    if out == "-":
        yield sys.stdout.write
        sys.stdout.flush()
        return
    target = Path(out)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            yield handle.write
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def _input(path: str) -> Iterator[Path]:
    """The export as a file: import reads it twice (check every line, then write)."""
    if path != "-":
        if not Path(path).is_file():
            err_console.print(f"[red]error[/red]: no such file: {path}")
            raise typer.Exit(1)
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="kioku-import-") as folder:
        spooled = Path(folder) / "stdin.jsonl"
        with spooled.open("wb") as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
        yield spooled


def _report(
    target: Console, as_json: bool, verb: str, summary: TransferSummary, where: str
) -> None:
    if as_json:
        result: dict[str, object] = {
            "workspace": summary.workspace,
            "file": where,
            "counts": summary.counts,
        }
        if verb == "imported":
            result["into_existing_contexts"] = summary.adopted
        if target is err_console:  # stdout holds the export itself
            sys.stderr.write(json.dumps(result, ensure_ascii=False) + "\n")
        else:
            print_json(result)
        return
    counts = summary.counts
    target.print(
        f"{verb} workspace {summary.workspace} ({count(counts['context'], 'context')}, "
        f"{count(counts['memory'], 'memory', 'memories')}, "
        f"{count(counts['feedback'], 'feedback event')}, "
        f"{count(counts['state'], 'state key')}) {'to' if verb == 'exported' else 'from'} {where}",
        soft_wrap=True,
        highlight=False,
    )
    if summary.adopted:  # the target's own empty context(s) of the same name took the file's
        several = len(summary.adopted) > 1
        target.print(
            f"into the workspace's existing empty {'contexts' if several else 'context'} "
            f"{', '.join(summary.adopted)} ({'their' if several else 'its'} id kept, the "
            "file's settings taken)",
            soft_wrap=True,
            highlight=False,
        )
