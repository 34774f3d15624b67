"""``kioku serve`` as a real process on a loopback port, shared by the end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kioku_env(data: Path) -> dict[str, str]:
    """The environment of a kioku process on its own database under ``data``."""
    return {
        **os.environ,
        "KIOKU_DATABASE_URL": f"sqlite:///{data / 'kioku.db'}",
        "HF_HUB_OFFLINE": "1",
    }


def cli(data: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """``kioku ARGS`` on the database under ``data`` (``env`` adds to its environment); its
    standard output. A failure raises, with the command's output."""
    done = subprocess.run(
        [sys.executable, "-m", "kioku.cli", *args], env={**kioku_env(data), **(env or {})},
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout


@contextmanager
def running_server(
    data: Path, *args: str, env: dict[str, str] | None = None, log_name: str = "serve.log"
) -> Iterator[str]:
    """``kioku serve ARGS`` on a free loopback port until the block ends; yields its URL.
    ``env`` adds to (or overrides) the environment, e.g. another ``KIOKU_DATABASE_URL``."""
    port = free_port()
    log = (data / log_name).open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "kioku.cli", "serve", *args, "--port", str(port)],
        env={**kioku_env(data), **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(Path(log.name).read_text())
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(Path(log.name).read_text())
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``kioku serve --dev``: no keys needed."""
    with running_server(tmp_path_factory.mktemp("serve"), "--dev") as base:
        yield base
