"""``kioku serve``: the REST API, the Remote MCP endpoint and the web UI in one process."""

from __future__ import annotations

import ipaddress

import typer

from kioku.cli.common import console, err_console
from kioku.embeddings.e5onnx.errors import ModelCacheError
from kioku.embeddings.factory import prepare_embedder
from kioku.settings import Settings
from kioku.storage.urls import display_url


def is_loopback(host: str) -> bool:
    """True for localhost / 127.0.0.0/8 / ::1."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    host: str = typer.Option("127.0.0.1", help="Address to bind."),
    port: int = typer.Option(8765, help="Port to bind."),
    dev: bool = typer.Option(
        False, "--dev", help="Development mode: no API keys needed; loopback addresses only."
    ),
) -> None:
    """Start the server on the configured database (default: embedded SQLite + bundled model).

    Without --dev every request needs an API key, on any address; --dev serves loopback only
    and needs none."""
    import uvicorn

    from kioku.api import create_app
    from kioku.api.logs import uvicorn_log_config

    if dev and not is_loopback(host):
        err_console.print(
            f"[red]refusing to serve on {host} with --dev[/red]: --dev answers without API "
            "keys, so it serves loopback addresses only. Drop --dev to require keys."
        )
        raise typer.Exit(2)
    settings = Settings(host=host, port=port, dev=dev)
    try:
        conversion_seconds = prepare_embedder(settings)
    except ModelCacheError as exc:
        err_console.print(f"[red]cannot start[/red]: {exc}")
        raise typer.Exit(1) from None
    base = settings.base_url
    console.print(f"kioku serving [bold]{display_url(settings.database_url)}[/bold]")
    console.print(f"  web UI     {base}/ui/")
    console.print(f"  MCP        {base}/mcp   (streamable HTTP)")
    console.print(f"  REST API   {base}/api/v1")
    console.print(f"  OpenAPI    {base}/docs")
    console.print(f"  health     {base}/health")
    if conversion_seconds:
        console.print(
            f"  converted the bundled embedding model once, in {conversion_seconds:.1f} s "
            f"({settings.model_dir})"
        )
    if dev:
        console.print(
            "  (--dev: loopback, no keys needed: local development mode; the UI offers "
            "'Continue as the local owner')"
        )
    else:
        console.print(
            "  API keys required (Authorization: Bearer kk_...); create one with "
            "`kioku keys create NAME --role owner`"
        )
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level="info",
        log_config=uvicorn_log_config(),
    )
