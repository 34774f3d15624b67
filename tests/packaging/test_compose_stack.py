"""compose.yaml's two services, run as compose runs them where no engine runs
(docs/operations.md, "What is checked where").

The database's health check is run, as the ``sh -c`` compose gives it, against a PostgreSQL
laid out like the pgvector image's (its socket trusts everyone, TCP asks for passwords), before
and after the init script; kioku's environment is rendered from a ``.env`` whose password holds
every character a URL reserves, and the ``kioku`` commands run with it against that server
(``db`` found through ``PGHOSTADDR``, as the compose network would resolve it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from kioku.api import create_app
from kioku.embeddings.fake import FakeEmbedder
from kioku.runtime import open_runtime
from kioku.settings import Settings
from tests.conftest import portal_client
from tests.packaging.compose_db import (
    DOTENV,
    PASSWORD,
    PasswordServer,
    db_env,
    password_server,
    run_init_script,
)
from tests.packaging.container_files import compose, exec_form, image_env, interpolate, service_env


@pytest.fixture
def server() -> Iterator[PasswordServer]:
    with password_server() as found:
        yield found


def healthy(server: PasswordServer) -> subprocess.CompletedProcess[str]:
    form, command = compose()["services"]["db"]["healthcheck"]["test"]
    assert form == "CMD-SHELL"
    return subprocess.run(["sh", "-c", interpolate(command, DOTENV)], env=db_env(server),
                          capture_output=True, text=True, timeout=30)  # fmt: skip


def test_the_database_is_healthy_only_once_kiokus_role_and_database_exist(
    server: PasswordServer,
) -> None:
    """On the image's first start the server answers (pg_isready passes) while the init script
    has yet to make kioku's role: kioku started then fails and restarts in a loop."""
    ready = subprocess.run(["pg_isready", "-d", "postgres"], env=db_env(server),
                           capture_output=True, text=True)  # fmt: skip
    assert ready.returncode == 0, ready.stdout  # the server answers already
    before = healthy(server)
    assert before.returncode != 0, "healthy before the init script made kioku's role"
    run_init_script(server)
    after = healthy(server)
    assert after.returncode == 0, after.stdout + after.stderr


def kioku_env(server: PasswordServer) -> dict[str, str]:
    """The kioku container's environment (image, then compose) on this machine: ``db`` is the
    test server (PGHOSTADDR), the embedder off (the connection is what is tested)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIOKU_", "PG"))}
    image = image_env({"PATH": env["PATH"]})
    return {**env, **image, "PATH": env["PATH"], "HOME": env.get("HOME", "/"),
            **service_env("kioku", DOTENV), "PGHOSTADDR": "127.0.0.1", "PGPORT": str(server.port),
            "KIOKU_EMBEDDER": "none"}  # fmt: skip


def kioku(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kioku.cli", *args], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_kioku_connects_with_a_password_a_url_would_need_encoded(server: PasswordServer) -> None:
    """``kioku serve`` migrates on start as ``remember`` does here (test_image_fallback.py
    serves with this environment)."""
    run_init_script(server)
    env = kioku_env(server)
    done = kioku(env, "remember", "Compose passwords may hold @ / : #")
    assert done.returncode == 0, done.stdout + done.stderr
    found = kioku(env, "recall", "compose passwords", "--json")
    assert "Compose passwords may hold @ / : #" in found.stdout, found.stdout + found.stderr
    # The server does check the password: another one is refused.
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(host="127.0.0.1", port=server.port, user="kioku", dbname="kioku",
                        password="not " + PASSWORD).close()  # fmt: skip


def test_another_compose_service_reaches_kioku_by_its_service_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``http://kioku:8765`` from another container: Host ``kioku:8765``, answered (421
    without KIOKU_ALLOWED_HOSTS); a name nobody configured is still refused."""
    command = exec_form("CMD")
    host, port = command[command.index("--host") + 1], int(command[command.index("--port") + 1])
    outside = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    env = {**image_env({"PATH": outside["PATH"]}), **service_env("kioku", DOTENV)}
    for name, value in env.items():  # the container's KIOKU_* variables, read as it reads them
        if name.startswith("KIOKU_") and name != "KIOKU_DATABASE_URL":
            monkeypatch.setenv(name, value)
    settings = Settings({
        "server": {"host": host, "port": port}, "embedder": {"background": False},
        "database": {"url": f"sqlite:///{tmp_path / 'kioku.db'}"},
    })  # fmt: skip
    runtime = open_runtime(settings, embedder=FakeEmbedder())
    try:
        with portal_client(create_app(runtime=runtime)) as client:
            answered = client.get(f"http://kioku:{port}/health")
            assert answered.status_code == 200, answered.text
            refused = client.get(f"http://elsewhere.example:{port}/health")
            assert refused.status_code == 421, refused.text
    finally:
        runtime.close()
