"""The MCP surface: one tool per service operation, same names, over streamable HTTP and stdio."""

from kioku.mcp.server import build_mcp

__all__ = ["build_mcp"]
