"""``kioku serve``: the REST API and the Remote MCP endpoint (and, as it lands, the UI) in one
process."""

from __future__ import annotations

import ipaddress

import typer

from kioku.cli.common import console, err_console
from kioku.settings import Settings


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
    dev: bool = typer.Option(False, "--dev", help="Development mode: no auth, loopback only."),
) -> None:
    """Start the server on the configured database (default: embedded SQLite + bundled model)."""
    import uvicorn

    from kioku.api import create_app

    if not is_loopback(host):
        err_console.print(
            f"[red]refusing to serve on {host}[/red]: a non-loopback address needs API keys, "
            "and this version serves loopback only. Use --host 127.0.0.1."
        )
        raise typer.Exit(2)
    settings = Settings(host=host, port=port, dev=dev)
    base = f"http://{host}:{port}"
    console.print(f"kioku serving [bold]{settings.database_url}[/bold]")
    console.print(f"  MCP        {base}/mcp   (streamable HTTP)")
    console.print(f"  REST API   {base}/api/v1")
    console.print(f"  OpenAPI    {base}/docs")
    console.print(f"  health     {base}/health")
    console.print("  (loopback, no auth: local development mode)")
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info")
