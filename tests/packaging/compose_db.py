"""compose.yaml's ``db`` service on this machine: a throwaway PostgreSQL laid out like the
pgvector image's, the service's environment rendered from a ``.env``, and its init script.

The suite's usual server trusts every connection (``--auth=trust``), which would let a test
pass with a wrong or garbled password. This one reads a ``pg_hba.conf`` of the image's shape:
its Unix socket trusts everyone (where the image's init scripts and ``pg_isready`` run), TCP
asks every role but the tests' superuser for its SCRAM password.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import make_url

from kioku.storage.postgres.throwaway import _bundled_binaries, throwaway_server
from tests.packaging.container_files import ROOT, service_env

# What a person may well put in .env: each of @ / : # ? % & and a space breaks a URL unencoded.
PASSWORD = "p@ss/w:rd#1?%&= x"
DOTENV = {"POSTGRES_PASSWORD": "superuser secret", "KIOKU_DB_PASSWORD": PASSWORD}

HBA = """\
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
"""


@dataclass(frozen=True)
class PasswordServer:
    admin_url: str  # the superuser, over TCP, without a password
    port: int
    socket_dir: Path  # where its Unix socket is (the image's /var/run/postgresql)

    def client_env(self) -> dict[str, str]:
        """An environment whose libpq tools (psql, pg_isready) find this server by default."""
        return {
            **os.environ,
            "PATH": f"{_bundled_binaries()}:{os.environ['PATH']}",
            "PGHOST": str(self.socket_dir),
            "PGPORT": str(self.port),
        }


@contextmanager
def password_server() -> Iterator[PasswordServer]:
    """Start the server; yield where it is; stop it and delete its files."""
    # A short path: a socket's path is limited to about 100 bytes.
    files = Path(tempfile.mkdtemp(prefix="kpg"))
    sockets, hba = files / "s", files / "pg_hba.conf"
    try:
        files.chmod(0o755)
        sockets.mkdir(mode=0o755)
        hba.write_text(HBA)
        hba.chmod(0o644)
        if os.geteuid() == 0:  # the server runs as nobody then (throwaway.py)
            nobody = pwd.getpwnam("nobody")
            os.chown(sockets, nobody.pw_uid, nobody.pw_gid)
        settings = {"hba_file": str(hba), "unix_socket_directories": str(sockets)}
        with throwaway_server(settings) as url:
            port = make_url(url).port
            assert port is not None
            yield PasswordServer(url, port, sockets)
    finally:
        shutil.rmtree(files, ignore_errors=True)


def db_env(server: PasswordServer) -> dict[str, str]:
    """The db container's environment: compose's, and libpq's defaults pointing at ``server``."""
    return {**server.client_env(), **service_env("db", DOTENV)}


def run_init_script(server: PasswordServer) -> None:
    """What the image runs from /docker-entrypoint-initdb.d on its first start."""
    done = subprocess.run([ROOT / "deploy/postgres/initdb-kioku.sh"], env=db_env(server),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
