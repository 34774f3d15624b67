"""The storage package's shape: no import cycle, small area protocols, SQL written once."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from kioku.storage.shared.candidates import CandidateStore
from kioku.storage.shared.connectors import ConnectorStore
from kioku.storage.shared.contexts import ContextStore
from kioku.storage.shared.delivery import DeliveryStore
from kioku.storage.shared.embeddings import EmbeddingStore
from kioku.storage.shared.feedback import FeedbackStore
from kioku.storage.shared.graph import GraphStore
from kioku.storage.shared.jobs import JobStore
from kioku.storage.shared.keys import KeyStore
from kioku.storage.shared.memories import MemoryStore
from kioku.storage.shared.oauth import OAuthStore
from kioku.storage.shared.state import StateStore
from kioku.storage.shared.threads import ThreadStore
from kioku.storage.shared.transfer import TransferStore
from kioku.storage.sleep import SleepStore

SRC = Path(__file__).resolve().parents[2] / "src"
STORAGE = SRC / "kioku" / "storage"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _storage_imports() -> dict[str, set[str]]:
    """Each storage module → the storage modules it imports (anywhere in it, lazily too)."""
    modules = {_module_name(p): p for p in STORAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            found.update(t for t in targets if t in modules and t != name)
        graph[name] = found
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_storage_has_no_import_cycle() -> None:
    assert _cycle(_storage_imports()) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


AREAS: list[type] = [
    CandidateStore,
    GraphStore,
    EmbeddingStore,
    ConnectorStore,
    ContextStore,
    DeliveryStore,
    FeedbackStore,
    JobStore,
    KeyStore,
    MemoryStore,
    OAuthStore,
    SleepStore,
    StateStore,
    ThreadStore,
    TransferStore,
]


@pytest.mark.parametrize("area", AREAS, ids=lambda area: area.__name__)
def test_an_area_protocol_has_at_most_20_primitives(area: type) -> None:
    methods = [name for name, _ in inspect.getmembers(area, inspect.isfunction)]
    assert 0 < len(methods) <= 20, methods
