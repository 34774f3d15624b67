"""What every command shares: the client or runtime, printing results, errors as exit 1.

Importing this module (and every command module) stays cheap: typer and the standard library
only. The SDK (httpx), pydantic, rich, the settings and the runtime are imported by the
commands that use them, when they run, so that ``kioku --version`` and the quick commands
(``recall --url``, ``pinned``, ``state get``) start in a fraction of a second.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

import typer

from kioku.errors import KiokuError, Reported, first_error
from kioku.settings import client as client_settings
from kioku.wording import count as count  # the commands' one pluralising helper

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console

    from kioku.client import Client
    from kioku.runtime import Runtime


class _LazyConsole:
    """A rich ``Console`` made on first use: importing rich.console costs tens of
    milliseconds, more than the whole of ``kioku --version`` should take."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def _made(self) -> Console:
        if self._console is None:
            from kioku.cli.human import make_console

            self._console = make_console(stderr=self._stderr)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._made(), name)

    def __enter__(self) -> Console:  # rich's live displays hold the console this way
        return self._made().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self._made().__exit__(*exc_info)


console = cast("Console", _LazyConsole(stderr=False))
err_console = cast("Console", _LazyConsole(stderr=True))

JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")
ContextOption = typer.Option("default", "--context", "-c", help="Context id or name.")
CursorOption = typer.Option(None, "--cursor", help="next_cursor of the previous page.")
UrlOption = typer.Option(
    None,
    "--url",
    envvar=client_settings.URL,
    help="A running kioku server to talk to (default: the local database, in this process).",
)


class RootOptions:
    """The root's options, for every command to read: ``kioku --debug COMMAND`` (or
    ``KIOKU_DEBUG=1``) sets ``debug``, set by ``kioku.cli.app``'s callback."""

    debug: bool = False


def show_traceback() -> None:
    """Under ``--debug``, the traceback of the error being handled, on stderr, before the
    message that stands for it (which is all a user sees otherwise)."""
    if RootOptions.debug:
        import traceback

        traceback.print_exc(file=sys.stderr)


def escape(text: str) -> str:
    """``rich.markup.escape``, imported when first needed."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


@contextmanager
def cli_runtime(*, embed: bool = True, background: bool = False) -> Iterator[Runtime]:
    """A runtime for one command: embeds inline (the process is short-lived).

    ``background``: writes leave their vectors to the runtime's embedding worker (started
    here), as in ``kioku serve``, instead of embedding them inline."""
    from kioku.runtime import open_runtime
    from kioku.settings import Settings

    with handle_errors():  # a bad KIOKU_* value is one line naming it, not a traceback
        embedder: dict[str, object] = {"background": background}
        if not embed:
            embedder["kind"] = "none"
        settings = Settings({"embedder": embedder})
        runtime = open_runtime(settings)
    try:
        if background and runtime.embedding is not None:
            runtime.embedding.start()
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
    from kioku.client import Client

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


def call_server(
    url: str,
    method: str,
    route: str,
    *,
    params: dict[str, Any] | None = None,
    body: Any = None,
) -> Any:
    """One call of a quick command to the server at ``url`` (``kioku.cli.rest``, no SDK):
    the answer's JSON; its errors printed and exit 1, as through the SDK."""
    from kioku.cli import rest

    with handle_errors():
        try:
            return rest.request(url, method, route, params=params, body=body)
        except rest.Unreachable as exc:
            show_traceback()
            raise unreachable(url, str(exc)) from None


def unreachable(url: str, reason: str) -> typer.Exit:
    """One line on stderr for a server that cannot be reached; the exit (1) to raise."""
    err_console.print(f"[red]error[/red]: no answer from kioku at {escape(url)} ({escape(reason)})")
    return typer.Exit(1)


@contextmanager
def _reachable(url: str) -> Iterator[None]:
    """A server that cannot be reached is one line on stderr and exit 1, not a traceback."""
    import httpx

    try:
        yield
    except (httpx.TransportError, httpx.InvalidURL) as exc:
        show_traceback()
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise unreachable(url, reason) from None


@contextmanager
def handle_errors() -> Iterator[None]:
    """Print domain and validation errors readably and exit 1 (a traceback only under
    ``--debug``). A database that cannot be opened is a ``ValueError`` whose message says why
    and what to do (``DatabaseOpenError``, ``storage/opening.py``): printed whole, unwrapped,
    so that its command can be copied."""
    try:
        yield
    except KiokuError as exc:
        show_traceback()
        where = f" ({exc.field})" if exc.field else ""
        # A server's validation message already starts with the field: say it once.
        message = exc.message.removeprefix(f"{exc.field}: ") if exc.field else exc.message
        err_console.print(f"[red]error[/red]{escape(where)}: {escape(message)}")
        raise typer.Exit(1) from None
    except ValueError as exc:  # pydantic's ValidationError is a ValueError too
        show_traceback()
        if _is_validation_error(exc):
            field, message = first_error(cast("Reported", exc))
            err_console.print(f"[red]error[/red] ({field}): {message}")
        else:
            err_console.print(f"[red]error[/red]: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from None


def _is_validation_error(exc: ValueError) -> bool:
    """Whether ``exc`` is pydantic's ValidationError, without importing pydantic to ask:
    if pydantic was never imported, nothing raised one."""
    core = sys.modules.get("pydantic_core")
    return core is not None and isinstance(exc, core.ValidationError)


def print_server_json(value: Any) -> None:
    """A server's JSON answer on stdout, compact, as ``print_json`` prints its model."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n")


def print_json(value: BaseModel | dict[str, Any] | list[Any]) -> None:
    """Compact, stable JSON on stdout."""
    if isinstance(value, dict | list):
        sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")
    else:
        sys.stdout.write(value.model_dump_json() + "\n")
