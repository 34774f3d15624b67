"""Framework adapters speak to kioku over HTTP through the SDK, like any other client."""

from __future__ import annotations

import ast

from tests.test_structure import SRC, imports_of

SERVER = (
    "fastapi", "starlette", "typer", "sqlalchemy", "mcp",
    "kioku.api", "kioku.cli", "kioku.mcp", "kioku.ui", "kioku.runtime",
    "kioku.service", "kioku.storage", "kioku.search", "kioku.embeddings",
)  # fmt: skip


def test_integrations_import_nothing_of_the_server() -> None:
    bad = {
        name
        for name in imports_of("integrations")
        if any(name == f or name.startswith(f + ".") for f in SERVER)
    }
    assert not bad, f"integrations must not import {sorted(bad)}"
    assert "kioku.client" in imports_of("integrations")


def test_the_pinned_block_renderer_imports_the_standard_library_only() -> None:
    """Harness hooks import it on every turn (tests/client/test_pinned_block.py checks that
    importing it loads no httpx or pydantic; this names what it may import at all)."""
    tree = ast.parse((SRC / "client" / "pinned_block.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert imported <= {"__future__", "collections.abc", "datetime", "html", "typing"}, imported
