"""What every command shares: the client or runtime, printing results, errors as exit 1."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.markup import escape

from kioku.client import Client
from kioku.errors import KiokuError, first_error
from kioku.runtime import Runtime, open_runtime
from kioku.settings import Settings

console = Console()
err_console = Console(stderr=True)

JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")
ContextOption = typer.Option("default", "--context", "-c", help="Context id or name.")
CursorOption = typer.Option(None, "--cursor", help="next_cursor of the previous page.")
UrlOption = typer.Option(
    None,
    "--url",
    envvar="KIOKU_URL",
    help="A running kioku server to talk to (default: the local database, in this process).",
)


@contextmanager
def cli_runtime(*, embed: bool = True) -> Iterator[Runtime]:
    """A runtime for one command: embeds inline (the process is short-lived)."""
    with handle_errors():  # a bad KIOKU_* value is one line naming it, not a traceback
        settings = Settings(embed_async=False)
        if not embed:
            settings = settings.model_copy(update={"embedder": "none"})
        runtime = open_runtime(settings)
    try:
        yield runtime
    finally:
        runtime.close()


@contextmanager
def cli_client(url: str | None, *, embed: bool = True) -> Iterator[Client]:
    """The SDK client one command talks through: the server at ``url``, else the local database.

    Locally the REST app runs in this process as the ``cli`` channel, so writes are stamped
    ``source_type=manual`` as before; the channel is the server's to decide, never a header.
    ``embed=False`` skips loading the embedder for commands that never embed.
    """
    if url:
        with handle_errors(), _reachable(url), Client(url) as client:
            yield client
        return
    from kioku.api import create_app  # FastAPI loads only for commands that need it
    from kioku.api.deps import get_principal

    with cli_runtime(embed=embed) as runtime:
        app = create_app(runtime=runtime, with_mcp=False)
        app.dependency_overrides[get_principal] = lambda: runtime.local_principal("cli")
        with handle_errors(), Client(app=app) as client:
            yield client


@contextmanager
def _reachable(url: str) -> Iterator[None]:
    """A server that cannot be reached is one line on stderr and exit 1, not a traceback."""
    try:
        yield
    except (httpx.TransportError, httpx.InvalidURL) as exc:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        err_console.print(
            f"[red]error[/red]: no answer from kioku at {escape(url)} ({escape(reason)})"
        )
        raise typer.Exit(1) from None


@contextmanager
def handle_errors() -> Iterator[None]:
    """Print domain and validation errors readably and exit 1 (never a traceback)."""
    try:
        yield
    except KiokuError as exc:
        where = f" ({exc.field})" if exc.field else ""
        # A server's validation message already starts with the field: say it once.
        message = exc.message.removeprefix(f"{exc.field}: ") if exc.field else exc.message
        err_console.print(f"[red]error[/red]{escape(where)}: {escape(message)}")
        raise typer.Exit(1) from None
    except ValidationError as exc:
        field, message = first_error(exc)
        err_console.print(f"[red]error[/red] ({field}): {message}")
        raise typer.Exit(1) from None
    except ValueError as exc:
        err_console.print(f"[red]error[/red]: {exc}")
        raise typer.Exit(1) from None


def count(n: int, singular: str, plural: str | None = None) -> str:
    """``1 memory``, ``2 memories``: a number with its noun in the right form."""
    return f"{n} {singular if n == 1 else plural or singular + 's'}"


def print_json(value: BaseModel | dict[str, Any] | list[Any]) -> None:
    """Compact, stable JSON on stdout."""
    if isinstance(value, BaseModel):
        sys.stdout.write(value.model_dump_json() + "\n")
    else:
        sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")
