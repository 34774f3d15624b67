"""The architecture, tested: import direction and one name per operation."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "kioku"


def imports_of(package: str) -> set[str]:
    found: set[str] = set()
    for path in (SRC / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        (
            "storage",
            ("fastapi", "starlette", "mcp", "typer", "kioku.service", "kioku.api", "kioku.cli"),
        ),
        # Search is pure functions over what storage found: the records it ranks with are
        # kioku.signals, so it never imports storage at all.
        ("search", ("fastapi", "typer", "kioku.storage", "kioku.service", "kioku.api")),
        (
            "service",
            ("fastapi", "starlette", "typer", "kioku.api", "kioku.cli", "kioku.storage.sqlite"),
        ),
        # Surfaces reach the data through the services only.
        ("api", ("typer", "kioku.cli", "kioku.storage")),
        ("mcp", ("fastapi", "typer", "kioku.api", "kioku.cli", "kioku.storage")),
        ("cli", ("kioku.storage",)),
        ("embeddings", ("fastapi", "typer", "kioku.service", "kioku.api")),
        # The UI calls the services, like every surface: no SQL, no other surface's code.
        (
            "ui",
            ("typer", "sqlalchemy", "kioku.cli", "kioku.mcp", "kioku.api", "kioku.storage"),
        ),
        # The SDK speaks HTTP: the wire models and errors, nothing of the server.
        (
            "client",
            (
                "fastapi",
                "starlette",
                "typer",
                "mcp",
                "sqlalchemy",
                "kioku.api",
                "kioku.cli",
                "kioku.mcp",
                "kioku.ui",
                "kioku.runtime",
                "kioku.service",
                "kioku.storage",
                "kioku.search",
            ),
        ),
        # Connectors read sources and call the service; surfaces call them, never the reverse.
        (
            "connectors",
            (
                "fastapi",
                "starlette",
                "typer",
                "mcp",
                "kioku.api",
                "kioku.cli",
                "kioku.mcp",
                "kioku.storage.sqlite",
                "kioku.storage.postgres",
            ),
        ),
    ],
)
def test_import_direction(package: str, forbidden: tuple[str, ...]) -> None:
    bad = {
        name
        for name in imports_of(package)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    }
    assert not bad, f"{package} must not import {sorted(bad)}"


SURFACES = ("api", "mcp", "cli", "ui", "client")


@pytest.mark.parametrize("surface", SURFACES)
def test_surfaces_never_import_storage(surface: str) -> None:
    """Every surface reaches the data through the services, opened by ``kioku.runtime`` (or,
    for the commands that need no runtime, ``kioku.database``): no surface names a store, a
    storage record or a SQL helper, lazily inside a function or at the top."""
    reached = {name for name in imports_of(surface) if name.split(".")[:2] == ["kioku", "storage"]}
    assert not reached, f"{surface} must reach storage through the services: {sorted(reached)}"


def test_every_rest_operation_is_a_service_method() -> None:
    from kioku.api import create_app
    from kioku.service.audit import AuditService
    from kioku.service.connectors import ConnectorService
    from kioku.service.contexts import ContextService
    from kioku.service.delivery import DeliveryService
    from kioku.service.feedback import FeedbackService
    from kioku.service.forgetting import ForgetService
    from kioku.service.graph import GraphService
    from kioku.service.harness import HarnessService
    from kioku.service.keys import KeyService
    from kioku.service.memories import MemoryService
    from kioku.service.purge import PurgeService
    from kioku.service.recall import RecallService
    from kioku.service.sleep import SleepService
    from kioku.service.state import StateService
    from kioku.service.stats import StatsService

    spec = create_app().openapi()
    services = (
        ContextService,
        MemoryService,
        RecallService,
        DeliveryService,
        FeedbackService,
        StateService,
        StatsService,
        KeyService,
        AuditService,
        SleepService,
        GraphService,
        ConnectorService,
        PurgeService,
        ForgetService,
        HarnessService,
    )
    for path in spec["paths"].values():
        for operation in path.values():
            name = operation["operationId"]
            if name == "health":
                continue
            assert any(hasattr(service, name) for service in services), name


def test_modules_stay_small() -> None:
    sizes = {
        str(path.relative_to(SRC)): len(path.read_text(encoding="utf-8").splitlines())
        for path in SRC.rglob("*.py")
    }
    too_big = {name: size for name, size in sizes.items() if size > 500}
    assert not too_big, too_big


def test_vocabulary_imports_nothing_of_kioku() -> None:
    """``kioku.vocabulary`` (the shared Literals) is imported by every layer, storage and
    search included, so it may import nothing of kioku itself."""
    tree = ast.parse((SRC / "vocabulary.py").read_text(encoding="utf-8"))
    names = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {name for name in names if name.split(".")[0] == "kioku"}
