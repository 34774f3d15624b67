"""What every command shares: opening the runtime, printing results, turning errors into exit 1."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console

from kioku.errors import KiokuError
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings

console = Console()
err_console = Console(stderr=True)

JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")
ContextOption = typer.Option("default", "--context", "-c", help="Context id or name.")
CursorOption = typer.Option(None, "--cursor", help="next_cursor of the previous page.")


@contextmanager
def cli_runtime(*, embed: bool = True) -> Iterator[Runtime]:
    """A runtime for one command: embeds inline (the process is short-lived)."""
    settings = Settings(embed_async=False)
    if not embed:
        settings = settings.model_copy(update={"embedder": "none"})
    with handle_errors():
        runtime = open_runtime(settings)
    try:
        yield runtime
    finally:
        runtime.close()


@contextmanager
def handle_errors() -> Iterator[None]:
    """Print domain and validation errors readably and exit 1 (never a traceback)."""
    try:
        yield
    except KiokuError as exc:
        where = f" ({exc.field})" if exc.field else ""
        err_console.print(f"[red]error[/red]{where}: {exc.message}")
        raise typer.Exit(1) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        err_console.print(f"[red]error[/red] ({field}): {error['msg']}")
        raise typer.Exit(1) from None
    except ValueError as exc:
        err_console.print(f"[red]error[/red]: {exc}")
        raise typer.Exit(1) from None


def print_json(value: BaseModel | dict[str, Any] | list[Any]) -> None:
    """Compact, stable JSON on stdout."""
    if isinstance(value, BaseModel):
        sys.stdout.write(value.model_dump_json() + "\n")
    else:
        sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")
