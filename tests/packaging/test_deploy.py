"""The container files, checked where no container engine runs (docs/operations.md,
"What is checked where"): the image installs kioku with the script
tests/packaging/test_wheel.py runs, as a non-root user with its data in a volume and a health
check; compose.yaml wires kioku to PostgreSQL through the init script, which is run here
against a real PostgreSQL server; the Dockerfile, compose.yaml and the README give the same
commands. The image's commands run in test_image_fallback.py, the compose stack's in
test_compose_stack.py, the build context in test_dockerignore.py."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import make_url

from kioku.storage.postgres.throwaway import _bundled_binaries
from tests.packaging.container_files import (
    ROOT,
    compose,
    dockerfile_comments,
    final_stage,
    image_env,
    image_user,
)


def test_the_image_installs_with_the_tested_script_and_runs_as_a_user_with_a_volume() -> None:
    final = final_stage()
    runs = " ".join(arg for op, arg in final if op == "RUN")
    assert "install_kioku.sh /opt/kioku" in runs  # the script test_wheel.py runs
    assert ("COPY", "scripts/install_kioku.sh /usr/local/bin/install_kioku.sh") in final
    assert image_user() == ("kioku", 10001, 10001, "/data")  # the chown the docs tell of
    assert ("VOLUME", '["/data"]') in final
    assert any(op == "HEALTHCHECK" and "/health" in arg for op, arg in final)
    env = image_env({"PATH": "/usr/local/bin:/usr/bin"})
    assert env["KIOKU_DATABASE_URL"] == "sqlite:////data/kioku.db" and env["HF_HUB_OFFLINE"] == "1"
    assert env["HOME"] == "/data"  # any uid (--user) caches the model in the data folder
    command = next(arg for op, arg in reversed(final) if op == "CMD")
    assert '"serve"' in command and "--dev" not in command  # keys required in the container


def test_compose_wires_kioku_to_postgres_through_the_init_script() -> None:
    services = compose()["services"]
    db, kioku = services["db"], services["kioku"]
    assert db["image"].startswith("pgvector/pgvector:")
    mounts = {m.split(":")[0]: m.split(":")[1] for m in db["volumes"]}
    init = mounts["./deploy/postgres/initdb-kioku.sh"]
    assert init.startswith("/docker-entrypoint-initdb.d/") and (ROOT / "deploy/postgres").is_dir()
    assert kioku["depends_on"]["db"]["condition"] == "service_healthy"
    url = make_url(kioku["environment"]["KIOKU_DATABASE_URL"])
    assert (url.username, url.host, url.database) == ("kioku", "db", "kioku")
    # The password reaches libpq unparsed (test_compose_stack.py connects with @ / : # in it).
    assert url.password is None and "KIOKU_DB_PASSWORD" in kioku["environment"]["PGPASSWORD"]
    assert kioku["ports"] == ["127.0.0.1:8765:8765"]  # the host's loopback only


@pytest.fixture
def server(postgres_url: str) -> str:
    return postgres_url


def test_the_init_script_makes_a_role_row_level_security_binds(server: str, tmp_path: Path) -> None:
    user, name = f"kioku_{secrets.token_hex(4)}", f"kioku_deploy_{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(16)
    admin = make_url(server)
    env = {
        **os.environ,
        "PATH": f"{_bundled_binaries()}:{os.environ['PATH']}",
        "PGHOST": str(admin.host), "PGPORT": str(admin.port), "PGUSER": str(admin.username),
        "KIOKU_DB_USER": user, "KIOKU_DB_NAME": name, "KIOKU_DB_PASSWORD": password,
    }  # fmt: skip
    try:
        done = subprocess.run(
            [ROOT / "deploy/postgres/initdb-kioku.sh"], env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        url = admin.set(username=user, password=password, database=name)
        app_url = url.render_as_string(hide_password=False)
        with psycopg.connect(app_url) as conn:
            row = conn.execute(
                "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
            ).fetchone()
            assert row == (False, False)
            assert conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
        kioku = {**os.environ, "KIOKU_DATABASE_URL": app_url, "KIOKU_EMBEDDER": "none"}
        for args in (["migrate"], ["remember", "The deploy script works"]):
            subprocess.run([sys.executable, "-m", "kioku.cli", *args], env=kioku, check=True,
                           capture_output=True, timeout=120)  # fmt: skip
        found = subprocess.run(
            [sys.executable, "-m", "kioku.cli", "recall", "deploy script", "--json"],
            env=kioku, check=True, capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
        assert re.search(r'"summary":\s*"The deploy script works"', found), found
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))  # fmt: skip
            conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(user)))


def docker_commands(text: str) -> list[str]:
    return re.findall(r"docker (?:run|exec|compose exec) [^\n`]*", text)


def test_the_dockerfile_compose_and_readme_give_the_same_commands() -> None:
    """Published on the host's loopback only, and a member key for an agent, wherever the
    commands are written (security.md: an agent's key needs no owner rights)."""
    readme = (ROOT / "README.md").read_text()
    compose_comments = "\n".join(
        line for line in (ROOT / "compose.yaml").read_text().splitlines() if line.startswith("#")
    )
    for source in (dockerfile_comments(), readme, compose_comments):
        commands = docker_commands(source)
        assert commands, source[:200]
        published = [p for c in commands for p in re.findall(r"(?:-p|--publish) (\S+)", c)]
        assert all(p == "127.0.0.1:8765:8765" for p in published), published
        roles = {r for c in commands for r in re.findall(r"keys create \S+ --role (\w+)", c)}
        assert roles <= {"member"}, roles
    assert re.findall(r"--role (\w+)", " ".join(docker_commands(dockerfile_comments()))) == [
        "member"
    ]


def test_the_operations_doc_says_what_is_checked_where() -> None:
    doc = (ROOT / "docs/operations.md").read_text()
    section = doc[doc.index("## Containers") :]
    for named in ("scripts/container_check.sh", "docker info", "test_image_fallback.py",
                  "test_compose_stack.py", "test_dockerignore.py", "chown 10001:10001",
                  "--user"):  # fmt: skip
        assert named in section, named
