"""The attack suite: black-box requests against a real ``kioku serve``, as an attacker would make
them (a connector key, a second tenant, a web page rebinding DNS, a misbehaving client).

Each module replays one family of attacks from docs/security.md and asserts the boundary held.
Nothing here imports kioku: the server is a subprocess, reached over HTTP only, and the keys
come from the CLI, as an operator would make them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import cli, running_server

pytestmark = pytest.mark.e2e


def create_key(data: Path, name: str, *options: str) -> str:
    """A new API key's secret, made by ``kioku keys create NAME OPTIONS --json``."""
    return json.loads(cli(data, "keys", "create", name, *options, "--json"))["key"]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@dataclass(frozen=True)
class Target:
    """A running server, its data directory (database, log) and the keys made for it."""

    base: str
    data: Path
    keys: dict[str, str]

    def headers(self, who: str) -> dict[str, str]:
        return bearer(self.keys[who])

    def log(self) -> str:
        return (self.data / "serve.log").read_text()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """``kioku serve`` without ``--dev``, with one key of each role in workspace ``default``,
    an admin allowed only context ``ops``, and an owner of a second workspace ``tenant-b``."""
    data = tmp_path_factory.mktemp("attacks")
    cli(data, "contexts", "create", "ops")
    keys = {
        role: create_key(data, f"attack-{role}", "--role", role)
        for role in ("owner", "admin", "member", "viewer", "connector")
    }
    keys["ops-admin"] = create_key(data, "ops-admin", "--role", "admin", "--context", "ops")
    keys["tenant-b"] = create_key(data, "b", "--role", "owner", "--workspace", "tenant-b")
    with running_server(data) as base:
        yield Target(base, data, keys)


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """``kioku serve --dev`` (what ``make run`` starts): no keys."""
    data = tmp_path_factory.mktemp("attacks-dev")
    with running_server(data, "--dev") as base:
        yield Target(base, data, {})
