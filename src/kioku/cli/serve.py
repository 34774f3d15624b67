"""``kioku serve``: the REST API, the Remote MCP endpoint and the web UI in one process."""

from __future__ import annotations

import ipaddress
import json
import logging
import logging.config
import math
import socket
from typing import TYPE_CHECKING

import typer

from kioku.cli.common import console, err_console, handle_errors, show_traceback

if TYPE_CHECKING:  # the server's modules are imported when serve runs (a quick start)
    from kioku.runtime import Runtime
    from kioku.settings import Settings


def is_loopback(host: str) -> bool:
    """True for localhost / 127.0.0.0/8 / ::1."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound now (e.g. "address already in use"), else ``None``.
    Checked before the banner, so a busy port is one line, not a banner and then a failure."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            return (exc.strerror or str(exc)).lower()
    return None


def banner_lines(settings: Settings) -> list[tuple[str, str, str]]:
    """(name, URL, label) of what ``kioku serve`` offers, as its banner prints them."""
    base = settings.server.base_url
    return [
        ("ui", f"{base}/ui/", "web UI"),
        ("mcp", f"{base}/mcp", "MCP"),
        ("rest", f"{base}/api/v1", "REST API"),
        ("docs", f"{base}/docs", "OpenAPI"),
        ("health", f"{base}/health", "health"),
    ]


def stale_model_notes(runtime: Runtime) -> list[str]:
    """One line per context whose vectors come from another model than the configured one:
    its vector leg is off (vectors of two models are never mixed) until it is re-embedded."""
    if runtime.embedder is None:
        return []
    return [
        f"context {found.context} (workspace {found.workspace}) holds vectors of "
        f"{found.model}; recall there is lexical only until `kioku reembed --context "
        f"{found.context}` (or run with KIOKU_EMBEDDER set to that model's embedder)"
        for found in runtime.workspaces.foreign_vectors(runtime.embedder.name)
    ]


def serve(
    host: str | None = typer.Option(
        None,
        help="Address to bind (default: KIOKU_HOST, the settings file, else 127.0.0.1).",
        show_default=False,
    ),
    port: int | None = typer.Option(
        None,
        help="Port to bind (default: KIOKU_PORT, the settings file, else 8765).",
        show_default=False,
    ),
    dev: bool = typer.Option(
        False,
        "--dev",
        help="Development mode: no API keys needed; loopback addresses only.",
    ),
) -> None:
    """Start the server on the configured database (default: embedded SQLite + bundled model).

    Without --dev every request needs an API key, on any address; --dev serves loopback only
    and needs none."""
    import uvicorn

    from kioku.api import create_app
    from kioku.api.logs import uvicorn_log_config
    from kioku.cli.shutdown import DeadlineServer
    from kioku.embeddings.e5onnx.errors import ModelCacheError
    from kioku.embeddings.factory import prepare_embedder
    from kioku.runtime import open_runtime
    from kioku.service.database_admin import display_url
    from kioku.settings import Settings

    # --host/--port win over KIOKU_HOST/KIOKU_PORT and the file; only --dev turns keys off.
    given = {"host": host, "port": port}
    server = {"dev": dev} | {name: value for name, value in given.items() if value is not None}
    with handle_errors():  # a bad KIOKU_* value is one line naming it, not a traceback
        settings = Settings({"server": server})
    host, port, dev = settings.server.host, settings.server.port, settings.server.dev
    if dev and not is_loopback(host):
        err_console.print(
            f"[red]refusing to serve on {host} with --dev[/red]: --dev answers without API "
            "keys, so it serves loopback addresses only. Drop --dev to require keys."
        )
        raise typer.Exit(2)
    busy = port_in_use(host, port)
    if busy:
        err_console.print(
            f"[red]cannot serve on {host}:{port}[/red]: {busy} (another kioku, or another "
            f"program, holds it). Choose another port: `kioku serve --port {port + 1}`, or "
            f"`make run PORT={port + 1}`."
        )
        raise typer.Exit(1)
    # Logging as the server will log, before anything can warn (a file mode, a migration).
    log_config = uvicorn_log_config(settings.server.log_format)
    logging.config.dictConfig(log_config)
    # Opened here, not in the app's lifespan: a database that cannot be opened (unreachable,
    # damaged, another application's, not writable) is one paragraph and exit 1, not
    # uvicorn's startup traceback. The app is given the runtime; this command closes it.
    try:  # the bundled model is converted once, before the port is bound (timed)
        conversion_seconds = prepare_embedder(settings)
    except ModelCacheError as exc:
        show_traceback()
        err_console.print(f"[red]cannot start[/red]: {exc}")
        raise typer.Exit(1) from None
    with handle_errors():
        runtime = open_runtime(settings)
    stale = stale_model_notes(runtime)
    if settings.server.log_format == "json":  # every line of the output parses: a record
        where = {"database": display_url(settings.database.url)}
        where |= {name: url for name, url, _ in banner_lines(settings)}
        logging.getLogger("kioku.serve").info("kioku serving %s", json.dumps(where))
        if conversion_seconds:
            logging.getLogger("kioku.serve").info(
                "converted the bundled embedding model in %.1f s", conversion_seconds
            )
        for note in stale:
            logging.getLogger("kioku.serve").warning("%s", note)
    else:
        console.print(f"kioku serving [bold]{display_url(settings.database.url)}[/bold]")
        for name, url, label in banner_lines(settings):
            note = "   (streamable HTTP)" if name == "mcp" else ""
            console.print(f"  {label:<10} {url}{note}", soft_wrap=True)
        if conversion_seconds:
            console.print(
                f"  converted the bundled embedding model once, in {conversion_seconds:.1f} s "
                f"({settings.embedder.model_dir})"
            )
        for note in stale:
            err_console.print(f"[yellow]warning[/yellow]: {note}", soft_wrap=True)
        if dev:
            console.print(
                "  (--dev: loopback, no keys needed: local development mode; the UI offers "
                "'Continue as the local owner'; no rate limit unless KIOKU_RATE_LIMIT_PER_MINUTE "
                "is set)"
            )
        else:
            console.print(
                "  API keys required (Authorization: Bearer kk_...); create one with "
                "`kioku keys create NAME --role owner`"
            )
    config = uvicorn.Config(
        create_app(settings, runtime=runtime),
        host=host,
        port=port,
        log_level="info",
        log_config=log_config,
        timeout_graceful_shutdown=math.ceil(settings.server.shutdown_seconds),
    )
    server = DeadlineServer(config, settings.server.shutdown_seconds)
    try:
        server.run()
    finally:
        runtime.close()  # stops the embedding worker after its batch (the watchdog stays armed)
    if not server.started:
        raise typer.Exit(3)  # uvicorn has logged why
