"""A database kioku cannot open is one paragraph, exit 1, no traceback (issue 35, item 2).

Each failure on real files and servers, through the real CLI: typer's CliRunner in this
process, or a fresh interpreter where the case needs one (a driver that is not installed, file
modes that must bind, ``kioku serve``). The message names the file or URL (password hidden)
and the command that fixes it; ``--debug`` (or ``KIOKU_DEBUG=1``) adds the traceback.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import make_url
from typer.testing import CliRunner

from kioku.cli import app
from kioku.storage.opening import postgres_extra

runner = CliRunner()


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KIOKU_DATABASE_URL", f"sqlite:///{tmp_path / 'unused.db'}")
    monkeypatch.setenv("KIOKU_EMBEDDER", "none")
    monkeypatch.delenv("KIOKU_DEBUG", raising=False)


def said_by(*args: str, url: str | None = None) -> str:
    """``kioku ARGS`` on ``url`` (KIOKU_DATABASE_URL): its output, flattened, after checking
    it failed as a runtime error (exit 1) with a message and no traceback."""
    env = {"KIOKU_DATABASE_URL": url} if url else {}
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and result.output.startswith("error: ")
    return " ".join(result.output.split())


# Every kind of command that opens the database: the data commands (through the local REST
# app), the runtime-only ones, the bare store of export/import, and migrate.
COMMANDS = [
    ("recall", "tea"),
    ("remember", "Alice drinks oolong"),
    ("keys", "list"),
    ("state", "get", "k"),
    ("migrate",),
    ("export", "--out", "-"),
]


@pytest.fixture
def garbage(tmp_path: Path) -> Path:
    path = tmp_path / "kioku.db"
    path.write_bytes(bytes(range(256)) * 20)  # no SQLite header
    return path


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_file_that_is_not_a_sqlite_database(garbage: Path, command: tuple[str, ...]) -> None:
    before = garbage.read_bytes()
    said = said_by(*command, url=f"sqlite:///{garbage}")
    assert f"{garbage} is not a SQLite database" in said and "left it untouched" in said
    assert f"mv {garbage} {garbage}.damaged" in said and "kioku import BACKUP.jsonl" in said
    assert garbage.read_bytes() == before


def test_import_into_a_file_that_is_not_a_sqlite_database(garbage: Path, tmp_path: Path) -> None:
    export = tmp_path / "default.jsonl"
    export.write_text("{}\n", encoding="utf-8")
    said = said_by("import", str(export), "--database-url", f"sqlite:///{garbage}")
    assert f"{garbage} is not a SQLite database" in said


def test_a_damaged_kioku_database(tmp_path: Path) -> None:
    path = tmp_path / "kioku.db"
    url = f"sqlite:///{path}"
    assert runner.invoke(app, ["migrate"], env={"KIOKU_DATABASE_URL": url}).exit_code == 0
    with path.open("r+b") as handle:  # the header stays; the pages after the first do not
        handle.seek(4096)
        handle.write(b"\xff" * 8192)
    for command in (("migrate",), ("recall", "tea")):
        said = said_by(*command, url=url)
        assert f"{path} is damaged" in said and "database disk image is malformed" in said
        assert "kioku import BACKUP.jsonl" in said and f"sqlite3 {path} .recover" in said


def test_another_applications_sqlite_file_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "crm.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('Acme')")
    conn.close()
    path.chmod(0o644)
    before = path.read_bytes()
    for command in (("migrate",), ("remember", "Alice drinks oolong")):
        said = said_by(*command, url=f"sqlite:///{path}")
        assert f"{path} is a SQLite database of another application" in said
        assert "(tables: customers)" in said and "left it untouched" in said
        assert "KIOKU_DATABASE_URL" in said
    # Not migrated, not made private: the file is exactly as it was.
    assert path.read_bytes() == before and path.stat().st_mode & 0o777 == 0o644


def test_a_database_of_a_newer_kioku(tmp_path: Path) -> None:
    path = tmp_path / "kioku.db"
    url = f"sqlite:///{path}"
    assert runner.invoke(app, ["migrate"], env={"KIOKU_DATABASE_URL": url}).exit_code == 0
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0999_from_the_future'")
    conn.close()
    said = said_by("migrate", url=url)
    assert f"the database at {path} is at schema revision '0999_from_the_future'" in said
    assert "does not know" in said and "Nothing was migrated" in said


# ---------------------------------------------------------------- PostgreSQL


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("command", [("migrate",), ("keys", "list"), ("recall", "tea")])
def test_an_unreachable_postgresql_names_host_and_port_not_the_password(
    command: tuple[str, ...],
) -> None:
    port = _closed_port()
    said = said_by(*command, url=f"postgresql://kioku:s3cret-pw@127.0.0.1:{port}/kioku")
    assert f"cannot reach PostgreSQL at postgresql://kioku:***@127.0.0.1:{port}/kioku" in said
    assert f"pg_isready -h 127.0.0.1 -p {port}" in said and "s3cret-pw" not in said


@pytest.fixture
def locked_out_postgres(postgres_url: str) -> Iterator[str]:
    """A fresh database and a role that may log in but neither owns it nor may create in its
    schema (PostgreSQL 15+ takes CREATE on ``public`` from everyone)."""
    name = f"kioku_locked_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'pw-locked'").format(sql.Identifier(name))
        )
    url = make_url(postgres_url).set(database=name, username=name, password="pw-locked")
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


def test_a_postgresql_role_without_rights_is_told_what_to_grant(locked_out_postgres: str) -> None:
    said = said_by("migrate", url=locked_out_postgres)
    assert "refused kioku's schema: permission denied" in said, said
    assert "CREATE EXTENSION IF NOT EXISTS vector" in said and "OWNER TO" in said
    assert "pw-locked" not in said and ":***@" in said


def test_a_missing_postgresql_driver_says_how_to_install_the_extra(tmp_path: Path) -> None:
    # An install without the `postgres` extra, simulated in a fresh interpreter: a None in
    # sys.modules makes `import psycopg` fail as it does where psycopg is not installed
    # (ModuleNotFoundError naming psycopg), without uninstalling it from the test venv.
    program = "import sys; sys.modules['psycopg'] = None; from kioku.cli import app; app()"
    url = "postgresql://kioku:s3cret-pw@db.internal/kioku"
    for command in (("recall", "tea"), ("migrate",), ("serve", "--port", str(_closed_port()))):
        code, said = _run([sys.executable, "-c", program, *command], tmp_path, url)
        assert code == 1 and "Traceback" not in said, said
        flat = " ".join(said.split())
        assert "kioku cannot open postgresql://kioku:***@db.internal/kioku" in flat, flat
        assert "the PostgreSQL driver is not installed" in flat and "`postgres` extra" in flat
        packages = " ".join(f"'{p}'" if "[" in p else p for p in postgres_extra())
        assert "'psycopg[binary]==" in packages  # the extra's own requirements, as installed
        assert f"pipx inject kioku-memory-server {packages}" in flat
        assert f"uv pip install --python {sys.executable} {packages}" in flat
        assert f"{sys.executable} -m pip install {packages}" in flat
        assert "s3cret-pw" not in flat and "kioku serving" not in flat


# ---------------------------------------------------------------- file modes


def _file_modes_bind() -> list[str]:
    """The prefix that makes file modes bind the command. As root (CI containers) they bind
    no one, so the command runs still as root but without the two capabilities that let root
    ignore them (setpriv, from util-linux)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    assert setpriv, "running as root: setpriv (util-linux) is needed to drop DAC overrides"
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


def _run(command: list[str], tmp_path: Path, url: str) -> tuple[int, str]:
    env = {**os.environ, "KIOKU_DATABASE_URL": url, "KIOKU_EMBEDDER": "none"}
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("KIOKU_DEBUG", None)
    done = subprocess.run(
        command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    return done.returncode, done.stdout + done.stderr


def _kioku_with_modes(tmp_path: Path, url: str, *args: str) -> str:
    code, said = _run(
        [*_file_modes_bind(), sys.executable, "-m", "kioku.cli", *args], tmp_path, url
    )
    assert code == 1 and "Traceback" not in said, said
    return " ".join(said.split())


@pytest.fixture
def kioku_database(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "kioku.db"
    url = f"sqlite:///{path}"
    assert runner.invoke(app, ["migrate"], env={"KIOKU_DATABASE_URL": url}).exit_code == 0
    return path


def test_a_database_file_this_user_may_not_read(kioku_database: Path, tmp_path: Path) -> None:
    kioku_database.chmod(0o000)
    try:
        said = _kioku_with_modes(tmp_path, f"sqlite:///{kioku_database}", "recall", "tea")
    finally:
        kioku_database.chmod(0o600)
    assert f"kioku may not read and write its database {kioku_database}" in said
    assert "mode 000" in said and f"chmod 600 {kioku_database}" in said


def test_a_database_folder_this_user_may_not_write(kioku_database: Path, tmp_path: Path) -> None:
    folder = kioku_database.parent
    folder.chmod(0o500)
    try:
        existing = _kioku_with_modes(tmp_path, f"sqlite:///{kioku_database}", "keys", "list")
        new = _kioku_with_modes(tmp_path, f"sqlite:///{folder / 'sub' / 'new.db'}", "migrate")
    finally:
        folder.chmod(0o700)
    assert f"kioku may not write in {folder}, the folder of its database" in existing
    assert "-wal and -shm" in existing and f"chmod 700 {folder}" in existing
    assert f"kioku cannot create its database {folder / 'sub' / 'new.db'}" in new
    assert f"{folder} is not writable by user" in new and "install -d -m 700" in new
    assert not (folder / "sub").exists()


# ---------------------------------------------------------------- serve and --debug


def test_serve_says_it_and_never_serves(garbage: Path, tmp_path: Path) -> None:
    port = _closed_port()
    command = [sys.executable, "-m", "kioku.cli", "serve", "--dev", "--port", str(port)]
    code, said = _run(command, tmp_path, f"sqlite:///{garbage}")
    flat = " ".join(said.split())
    assert code == 1 and "Traceback" not in said, said
    assert f"{garbage} is not a SQLite database" in flat and "kioku serving" not in flat


def test_debug_shows_the_traceback_behind_the_message(monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"postgresql://kioku:s3cret-pw@127.0.0.1:{_closed_port()}/kioku"
    for args, env in ((["--debug", "migrate"], {}), (["migrate"], {"KIOKU_DEBUG": "1"})):
        result = runner.invoke(app, args, env={"KIOKU_DATABASE_URL": url, **env})
        assert result.exit_code == 1
        assert "Traceback (most recent call last)" in result.output
        # The driver's own error is the cause, shown; then the message, as without --debug.
        assert "psycopg.OperationalError" in result.output
        assert "error: cannot reach PostgreSQL at" in result.output
    quiet = runner.invoke(app, ["migrate"], env={"KIOKU_DATABASE_URL": url})
    assert "Traceback" not in quiet.output and "--debug" in runner.invoke(app, ["--help"]).output
