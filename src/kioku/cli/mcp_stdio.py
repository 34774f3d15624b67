"""``kioku mcp``: the MCP server over stdio, for clients that launch it (Claude Desktop/Code).

stdout carries the protocol, so nothing else may print there: logs go to stderr.
"""

from __future__ import annotations

from kioku.cli.common import handle_errors


def mcp() -> None:
    """Serve MCP over stdio on the configured database (no auth: the local user's own memory)."""
    import anyio

    from kioku.mcp import build_mcp
    from kioku.runtime import open_runtime
    from kioku.settings import Settings

    with handle_errors():
        runtime = open_runtime(Settings())
    try:
        runtime.start_background()
        anyio.run(build_mcp(runtime, channel="mcp").run_stdio_async)
    finally:
        runtime.close()
